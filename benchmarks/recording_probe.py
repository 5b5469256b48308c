"""A pytest plugin the recording benchmark loads into the run it times (`-p recording_probe`; not a test).

It notes, on `time.monotonic()` (one clock for every process of the machine, so the benchmark can set
its marks beside the process's launch and exit and the loopback server's request arrivals):

- `sessionstart`: pytest has started (interpreter, pytest, its plugins and this package imported);
- `collected`: collection is done (the end of start-up);
- with `SKILLTRANSFER_BENCH_WARM=1`, one unrecorded call to each model named in that variable's
  companion `SKILLTRANSFER_BENCH_MODELS` (comma-separated) right after collection, resolved as the
  runner resolves them: the SDK imports and a client's first call land in start-up instead of the
  first item (`warmed`);
- per item, `pytest_runtest_protocol` (setup, call, teardown: the transfer, its gates and, for a
  seed's last item, saving its cassette) from start to end, with the engine's path clocks before and
  after (`phases.calls_on_path`, `phases.rounds_on_path`: the items of one process run one after
  another in one context, so an item's critical path is what its run added to them), and how long
  its setup (the transfer: the plugin runs it in the item's fixture), call (the plugin's gates and snapshot) and
  teardown (a seed's cassette saved after its last item) took, and the process's CPU time over the item.

The marks are written as JSON to `SKILLTRANSFER_BENCH_PROBE` when pytest unconfigures.
"""

from __future__ import annotations

import json
import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Generator, Iterator

import pytest

_marks: dict[str, Any] = {"items": []}


def pytest_sessionstart(session: pytest.Session) -> None:
    _marks["sessionstart"] = time.monotonic()


def pytest_collection_finish(session: pytest.Session) -> None:
    _marks["collected"] = time.monotonic()
    if os.environ.get("SKILLTRANSFER_BENCH_WARM") == "1":
        from pytest_skilltransfer.models.base import Message, Request
        from pytest_skilltransfer.models.registry import resolve_model

        for name in filter(None, os.environ.get("SKILLTRANSFER_BENCH_MODELS", "").split(",")):
            resolve_model(name).complete(Request(system="warm-up", messages=(Message("user", "warm-up"),), max_tokens=8))
        _marks["warmed"] = time.monotonic()


_phase: dict[str, float] = {}


@contextmanager
def _timed(when: str) -> Iterator[None]:
    """Note how long the item's `when` phase (setup, call, teardown) took."""
    start = time.monotonic()
    yield
    _phase[when] = time.monotonic() - start


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, Any, Any]:
    with _timed("setup"):
        yield


@pytest.hookimpl(hookwrapper=True, tryfirst=True)  # outermost: the plugin's gates run in its own wrapper
def pytest_runtest_call(item: pytest.Item) -> Generator[None, Any, Any]:
    with _timed("call"):
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, Any, Any]:
    with _timed("teardown"):
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, Any, Any]:
    from pytest_skilltransfer.engine import phases

    before = (phases.calls_on_path(), phases.rounds_on_path())
    _phase.clear()
    start, cpu = time.monotonic(), time.process_time()
    yield
    end, cpu = time.monotonic(), time.process_time() - cpu
    after = (phases.calls_on_path(), phases.rounds_on_path())
    _marks["items"].append({"nodeid": item.nodeid, "start": start, "end": end, "cpu": cpu,
                            "calls_on_path": after[0] - before[0], "rounds_on_path": after[1] - before[1], **_phase})


def pytest_unconfigure(config: pytest.Config) -> None:
    out = os.environ.get("SKILLTRANSFER_BENCH_PROBE")
    if out:
        _marks["unconfigure"] = time.monotonic()
        Path(out).write_text(json.dumps(_marks))
