"""Where a recording's CPU goes, per call, by component (a benchmark, not a test).

    .venv/bin/python benchmarks/recording_cpu.py 64            # the recording section's workload at cap 64
    .venv/bin/python benchmarks/recording_cpu.py 8 --latency 0  # the recording-rate workload

Records the `recording` section's workload (benchmarks/run.py: 2 seeds x 2 pairs against the loopback
fake in a process of its own) twice, the first time untimed (as in the full run, where the cap-1
recording pays the process's one-time imports), and measures each component with the CPU clock of
the thread running it (time.thread_time around the function; a nested component is included in its
parent). Prints the wall against the floor and the whole-rounds bound, the process's CPU per call,
then each component's CPU per call. The wrappers cost a few microseconds per call themselves.
"""

from __future__ import annotations

import argparse
import functools
import gc
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import run as bench  # noqa: E402

_cpu: Counter = Counter()


def _measure(owner: Any, name: str, label: str) -> None:
    """Add the thread CPU time of every call of `owner.name` to `label`."""
    function = getattr(owner, name)

    @functools.wraps(function)
    def measured(*args: Any, **kwargs: Any) -> Any:
        start = time.thread_time()
        try:
            return function(*args, **kwargs)
        finally:
            _cpu[label] += time.thread_time() - start

    setattr(owner, name, measured)


_gc_started: list[float] = []


def _time_collections(phase: str, info: dict[str, Any]) -> None:
    """gc callback: the wall time of each collection (the GIL is held throughout, so it is CPU)."""
    if phase == "start":
        _gc_started[:] = [time.perf_counter()]
    elif _gc_started:
        label = "full collections" if info["generation"] == 2 else "young collections"
        _cpu[label] += time.perf_counter() - _gc_started[0]
        _cpu[label + " count"] += 1


def _instrument() -> None:
    import anthropic._response
    import httpx2
    import openai._legacy_response
    import vcr.stubs.httpx_stubs as stubs

    from pytest_skilltransfer.engine import judges
    from pytest_skilltransfer.cassettes import journal, scrub
    from pytest_skilltransfer.models import anthropic_wire, openai_wire, providers, spend_gate

    _measure(providers.ProviderModel, "complete", "model call")
    if hasattr(providers, "_send"):  # the request's parameters built and sent through the SDK
        _measure(providers, "_send", "sdk send")
    else:  # older checkouts
        for wire in (anthropic_wire, openai_wire):
            _measure(wire, "send", "sdk send")
    _measure(httpx2.Client, "send", "httpx send")
    _measure(stubs, "_vcr_request", "vcrpy request + cassette lookup")
    _measure(spend_gate.GatedPool, "handle_request", "transport")
    _measure(stubs, "_record_responses", "vcrpy record + cassette append")
    _measure(journal.Journal, "append", "journal append")
    _measure(scrub, "redact_body", "body redaction")
    _measure(anthropic._response.APIResponse, "parse", "response reading")
    _measure(openai._legacy_response.LegacyAPIResponse, "parse", "response reading")
    for name in ("read_answer", "response_problem"):  # the JSON check (named so in older checkouts)
        if hasattr(providers, name):
            _measure(providers, name, "response reading")
    for wire in (anthropic_wire, openai_wire):
        _measure(wire, "parse_reply", "response reading")
    _measure(judges, "score", "judges")
    gc.callbacks.append(_time_collections)


ROWS = (  # (label, how it is computed, indent)
    ("process CPU", "process", 0),
    ("model call (ProviderModel.complete)", "model call", 1),
    ("SDK request building (send minus httpx send)", "sdk send - httpx send", 2),
    ("httpx send", "httpx send", 2),
    ("vcrpy request + cassette lookup", "vcrpy request + cassette lookup", 3),
    ("transport (httpcore, h11, socket)", "transport", 3),
    ("vcrpy record + cassette append", "vcrpy record + cassette append", 3),
    ("journal append (line, secret scan, write, fsync)", "journal append", 4),
    ("httpx itself (hooks, cookies, request/response objects)",
     "httpx send - vcrpy request + cassette lookup - transport - vcrpy record + cassette append", 3),
    ("response reading (JSON check, SDK types where used, reply)", "response reading", 2),
    ("rest of the model call (redaction, limiter, spend gate)", "model call - sdk send - response reading", 2),
    ("judges", "judges", 1),
    ("engine, threads, ledger, everything else", "process - model call - judges", 1),
    ("body redaction (request and response, inside the vcrpy rows)", "body redaction", 1),
    ("cyclic GC, young generations (inside whichever row it struck)", "young collections", 1),
    ("cyclic GC, full collections (inside whichever row it struck)", "full collections", 1),
)


def _value(expression: str, process: float) -> float:
    terms = expression.split(" - ")
    first, rest = terms[0], terms[1:]
    total = process if first == "process" else _cpu[first]
    return total - sum(_cpu[term] for term in rest)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cap", type=int, help="calls per model")
    parser.add_argument("--latency", type=float, default=bench.LATENCY_S,
                        help="seconds the fake waits before answering")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="skilltransfer-cpu-") as tmp, bench.FakeProcess(args.latency) as fake:
        bench._aliases(fake)
        bench._warm_sdks()
        bench._record(fake, args.cap, Path(tmp) / "warm-up", args.latency)  # what the first item imports, once
        _instrument()
        run = bench._record(fake, args.cap, Path(tmp) / "rec", args.latency)
    floor = f"floor {run.floor_s:.2f} s ({run.wall_s / run.floor_s:.2f}x), " if run.floor_s else ""
    rounds = f"whole rounds {run.rounds_s:.2f} s ({run.wall_s / run.rounds_s:.2f}x), " if run.rounds_s else ""
    print(f"cap {args.cap}, latency {args.latency * 1000:.0f} ms: {run.calls} calls, wall {run.wall_s:.2f} s, "
          f"{floor}{rounds}"
          f"{run.calls / run.wall_s:.0f} calls/s")
    for label, expression, indent in ROWS:
        value = _value(expression, run.cpu_s)
        print(f"{'  ' * indent}{label:<{64 - 2 * indent}} {value * 1000 / run.calls:6.2f} ms per call")
    print(f"  ({_cpu['full collections count']:.0f} full collections, {len(gc.get_objects()):,} objects tracked)")


if __name__ == "__main__":
    main()
