"""A pytest plugin that notes a recording's timeline (`-p timeline_probe`; a benchmark's probe, not a test).

With `SKILLTRANSFER_BENCH_TIMELINE=<file>` it wraps, at configure time, the points where a recording's wall
goes and writes them as JSON to that file when pytest unconfigures, every time on `time.monotonic()` (the
clock `recording_probe` and the loopback server use):

- `calls`: each `ProviderModel.complete` (start, the transport's send and receipt inside it, end), with its
  thread, model, the chain's phase and the path clock where it was sent;
- `fans`: each `phases.fan_out` (start, end, name, jobs, workers) and `chains`: each `phases.run_chains`;
- `items`: each item's protocol (start, setup end, call end, end) and the process CPU (`time.process_time`)
  at its start and end;
- `imports`: each SDK import a call waited for (`sdk_common.import_sdk`), start and end;
- `looks`: each `sequential.judge_look` and `gates_look`, when it ended and its thread's CPU.
"""

from __future__ import annotations

import contextvars
import functools
import itertools
import json
import os
import threading
import time
from pathlib import Path
from typing import Any, Generator

import pytest

_events: dict[str, list[Any]] = {"calls": [], "fans": [], "chains": [], "items": [], "imports": []}
_local = threading.local()
_FAN: contextvars.ContextVar[int] = contextvars.ContextVar("timeline_fan", default=-1)
_fan_ids = itertools.count()


def _wrap(owner: Any, name: str, around: Any) -> None:
    function = getattr(owner, name)

    @functools.wraps(function)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        return around(function, *args, **kwargs)

    setattr(owner, name, wrapped)


def _install() -> None:
    from pytest_skilltransfer.engine import phases
    from pytest_skilltransfer.models import providers, sdk_common, spend_gate

    def complete(function: Any, self: Any, request: Any) -> Any:
        chain = phases._CHAIN.get()
        start = time.monotonic()
        _local.transport = (0.0, 0.0)
        try:
            return function(self, request)
        finally:
            sent, received = _local.transport
            _events["calls"].append((start, sent, received, time.monotonic(), threading.current_thread().name,
                                     self.model_id, chain.phase if chain else "", phases.calls_on_path(), _FAN.get()))

    def transport(function: Any, self: Any, request: Any) -> Any:
        sent = time.monotonic()
        try:
            return function(self, request)
        finally:
            _local.transport = (sent, time.monotonic())

    def fan_out(function: Any, fn: Any, jobs: Any, workers: int, name: str, model_id: str | None = None) -> Any:
        fan = next(_fan_ids)
        token = _FAN.set(fan)
        start, place = time.monotonic(), phases.calls_on_path()
        try:
            return function(fn, jobs, workers, name, model_id)
        finally:
            _FAN.reset(token)
            _events["fans"].append((start, time.monotonic(), name, len(jobs), workers,
                                    threading.current_thread().name, place, fan))

    def run_chains(function: Any, chains: Any, concurrent: bool, name: str = "phase") -> Any:
        start = time.monotonic()
        try:
            return function(chains, concurrent, name)
        finally:
            _events["chains"].append((start, time.monotonic(), name, len(chains)))

    def import_sdk(function: Any, *args: Any, **kwargs: Any) -> Any:
        start = time.monotonic()
        try:
            return function(*args, **kwargs)
        finally:
            end = time.monotonic()
            if end - start > 0.01:
                _events["imports"].append((start, end, str(args[:1])))

    from pytest_skilltransfer.evidence import sequential

    def look(function: Any, *args: Any, **kwargs: Any) -> Any:
        start = time.thread_time()
        try:
            return function(*args, **kwargs)
        finally:
            _events.setdefault("looks", []).append((time.monotonic(), time.thread_time() - start))

    for name in ("judge_look", "gates_look"):
        _wrap(sequential, name, look)
    _wrap(providers.ProviderModel, "complete", complete)
    _wrap(spend_gate.GatedPool, "handle_request", transport)
    _wrap(phases, "fan_out", fan_out)
    _wrap(phases, "run_chains", run_chains)
    if hasattr(sdk_common, "import_sdk"):
        _wrap(sdk_common, "import_sdk", import_sdk)
        if hasattr(providers, "import_sdk"):
            providers.import_sdk = sdk_common.import_sdk


_gc = {"full": 0.0, "started": 0.0}


def _time_collections(phase: str, info: dict[str, Any]) -> None:
    """The wall of each full collection (the GIL is held throughout, so every thread waits)."""
    if info["generation"] != 2:
        return
    if phase == "start":
        _gc["started"] = time.perf_counter()
    else:
        _gc["full"] += time.perf_counter() - _gc["started"]


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get("SKILLTRANSFER_BENCH_TIMELINE"):
        import gc

        _install()
        gc.callbacks.append(_time_collections)


_item: dict[str, float] = {}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, Any, Any]:
    yield
    _item["setup_end"] = time.monotonic()


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, Any, Any]:
    _item["call_start"] = time.monotonic()
    yield
    _item["call_end"] = time.monotonic()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, Any, Any]:
    _item.clear()
    stacks_at = os.environ.get("SKILLTRANSFER_BENCH_STACKS_AT")
    if stacks_at and not _events["items"]:  # where every thread is at that second of the first item
        threading.Timer(float(stacks_at), _dump_stacks).start()
    profile_to = os.environ.get("SKILLTRANSFER_BENCH_PROFILE")
    profiler = None
    if profile_to:  # the main thread's work: the chains' and fan-outs' threads are not profiled
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    start, cpu, collected = time.monotonic(), time.process_time(), _gc["full"]
    yield
    if profiler is not None:
        profiler.disable()
        profiler.dump_stats(f"{profile_to}.{len(_events['items'])}")
    _item["gc_full"] = _gc["full"] - collected
    _events["items"].append({"nodeid": item.nodeid, "start": start, "end": time.monotonic(), "cpu_start": cpu,
                             "cpu_end": time.process_time(), **_item})


def _dump_stacks() -> None:
    import sys
    import traceback

    frames = sys._current_frames()
    names = {t.ident: t.name for t in threading.enumerate()}
    _events["stacks"] = [(names.get(ident, "?"), "".join(traceback.format_stack(frame, limit=12)))
                         for ident, frame in frames.items()]


def pytest_unconfigure(config: pytest.Config) -> None:
    out = os.environ.get("SKILLTRANSFER_BENCH_TIMELINE")
    if out:
        Path(out).write_text(json.dumps(_events))
