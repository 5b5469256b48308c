"""A transfer's independent phases run at the same time and give what running them in order gives:
results (tallies included), cassettes, snapshots and reports, also under -n 2."""

from __future__ import annotations

import contextvars
import json
import shutil
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from fake_provider import FakeProvider
from plugin_support import make_seed

from pytest_skilltransfer.engine import phases
from pytest_skilltransfer.engine.ledger import CallCache, Meter
from pytest_skilltransfer.engine.protocol import SeedSession
from pytest_skilltransfer.engine.results import ProtocolConfig
from pytest_skilltransfer.engine.seeds import load_seed
from pytest_skilltransfer.engine.slots import PrioritySlots
from pytest_skilltransfer.models.base import Message, ModelCallError, Reply, Request
from pytest_skilltransfer.models.limiter import LIMITERS
from pytest_skilltransfer.models.providers import configure_aliases
from pytest_skilltransfer.models.registry import resolve_model
from pytest_skilltransfer.plugin.options import Settings
from pytest_skilltransfer.plugin.runner import Runner
from pytest_skilltransfer.reports.result_json import result_to_json

ROOT = Path(__file__).resolve().parents[2]


def _both_ways(seed_name: str, config: ProtocolConfig, pairs: list[tuple[str, str]]) -> list[list[dict]]:
    """Every pair through one session, once with the phases in order and once together."""
    runs = []
    for together in (False, True):
        session = SeedSession(load_seed(ROOT / "seeds" / seed_name), config, concurrent_phases=together)
        runs.append([result_to_json(session.transfer(resolve_model(s), resolve_model(t))) for s, t in pairs])
    return runs


@pytest.mark.parametrize("seed_name", ["change-review", "ticket-router"])
def test_phases_together_give_the_sequential_results_and_tallies(seed_name: str) -> None:
    """Restarts and a rubric judge make phases share answers; each phase is still charged as in order."""
    config = ProtocolConfig(nights=2, samples=2, restarts=2, workers=4, limit_replay=3, limit_holdout=3, limit_test=4)
    pairs = [("sim-small", "sim-large"), ("sim-large", "sim-small"), ("sim-large", "sim-large")]
    sequential, together = _both_ways(seed_name, config, pairs)
    assert sequential == together
    assert any(row["cached"] for result in sequential for rows in result["cost"]["phases"].values() for row in rows), \
        "the case must include answers shared between phases"


class _Recorder:
    """Wraps a model: records the order of calls and can fail on one request."""

    def __init__(self, model, fail_on: str = "", delay: float = 0.0) -> None:
        self.model, self.fail_on, self.delay = model, fail_on, delay
        self.name = self.model_id = model.model_id
        self.sent: list[str] = []
        self.lock = threading.Lock()

    def complete(self, request: Request) -> Reply:
        text = request.messages[0].content
        with self.lock:
            self.sent.append(text)
        time.sleep(self.delay)
        if self.fail_on and self.fail_on in text and "Failing criteria" in text:
            raise ModelCallError(f"{self.model_id} down")
        return self.model.complete(request)


def test_a_failing_phase_is_named_and_raised_as_in_order() -> None:
    """The direct optimization fails: its error and phase are reported, as a sequential run reports them."""
    seed = load_seed(ROOT / "seeds" / "ticket-router")
    config = ProtocolConfig(nights=1, workers=2, limit_replay=2, limit_holdout=2, limit_test=2)
    for together in (False, True):
        source = _Recorder(resolve_model("sim-small"))
        target = _Recorder(resolve_model("sim-large"), fail_on="#", delay=0.01)
        session = SeedSession(seed, config, concurrent_phases=together)
        with pytest.raises(ModelCallError, match="sim-large down"):
            session.transfer(source, target)
        assert session.phase == "optimize-direct"


def test_chains_after_a_failure_stop_before_their_next_call() -> None:
    started = threading.Event()
    calls = []

    def failing() -> None:
        started.wait(5)
        raise ValueError("broken")

    def later() -> None:
        phases.enter_phase("later")
        started.set()
        time.sleep(0.2)
        calls.append("after the failure")
        phases.check_halted()
        calls.append("never")

    with pytest.raises(phases.ChainFailed) as failed:
        phases.run_chains([lambda: phases.enter_phase("first"), failing, later], concurrent=True)
    assert isinstance(failed.value.error, ValueError) and calls == ["after the failure"]


def test_a_shared_call_is_charged_to_the_phase_ranked_first_whoever_sends_it() -> None:
    model = resolve_model("sim-small")
    request = Request(system="s", messages=(Message("user", "hello"),))
    cache = CallCache()
    late, early = Meter((1, 5)), Meter((1, 2))
    cache.call(model, request, late, "agent")  # the later phase sends first
    cache.call(model, request, early, "agent")
    cache.call(model, request, early, "agent")
    assert early.snapshot()[(model.model_id, "agent")].calls == 1
    assert early.snapshot()[(model.model_id, "agent")].cached == 1
    assert late.snapshot()[(model.model_id, "agent")].calls == 0
    assert late.snapshot()[(model.model_id, "agent")].cached == 1
    assert late.snapshot()[(model.model_id, "agent")].evidence == early.snapshot()[(model.model_id, "agent")].evidence


def test_free_slots_go_to_the_lowest_priority_number_then_first_come() -> None:
    slots = PrioritySlots(1)
    order: list[str] = []
    gate = threading.Event()

    def take(name: str, priority: int) -> None:
        with slots.hold(priority):
            order.append(name)

    with slots.hold():
        threads = []
        for name, priority in (("final-1", 1), ("final-2", 1), ("optimize", 0)):
            threads.append(threading.Thread(target=take, args=(name, priority)))
            threads[-1].start()
            time.sleep(0.05)
        gate.set()
    for thread in threads:
        thread.join()
    assert order == ["optimize", "final-1", "final-2"]


# -- recording through the SDKs ------------------------------------------------------------------


def _files(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


def _record(fake: FakeProvider, folder: Path, together: bool) -> tuple[list[dict], Counter]:
    fake.received.clear()
    settings = Settings(protocol=ProtocolConfig(samples=2, nights=2, restarts=2, limit_test=3), record_mode="all",
                        cassette_dir=folder)
    runner = Runner(settings, lambda _line: None, concurrent_phases=together)
    try:
        results = [result_to_json(runner.transfer(ROOT / "seeds" / "changelog-writer", s, t, None))
                   for s, t in (("det-small", "det-large"), ("det-large", "det-small"))]
    finally:
        runner.stop_recording()
    return results, Counter(json.dumps(r["body"], sort_keys=True) for r in fake.received)


def test_recording_with_phases_together_stores_the_same_cassettes(tmp_path: Path) -> None:
    with FakeProvider() as fake:
        fake.delay, fake.require_key = 0.01, False
        configure_aliases({"det-small": f"anthropic:det-small@{fake.anthropic_url}",
                           "det-large": f"openai:det-large@{fake.openai_url}"})
        LIMITERS.configure(lambda _model_id: 4)
        try:
            sequential, sent_sequential = _record(fake, tmp_path / "sequential", False)
            together, sent_together = _record(fake, tmp_path / "together", True)
        finally:
            LIMITERS.configure()
            configure_aliases({})
    assert sequential == together
    assert sent_sequential == sent_together and max(sent_together.values()) == 1
    assert _files(tmp_path / "sequential") == _files(tmp_path / "together")


# -- the plugin under xdist ----------------------------------------------------------------------


def test_n0_and_n2_give_the_same_reports_snapshots_and_cassettes(pytester: pytest.Pytester) -> None:
    fake = FakeProvider().start()
    fake.delay, fake.require_key = 0.005, False
    root = pytester.path / "seeds"
    for name in ("alpha", "beta", "gamma"):
        make_seed(root, name)
    pytester.makeini("[pytest]\nskilltransfer_limit_replay = 2\nskilltransfer_limit_holdout = 2\n"
                     "skilltransfer_pair = small:large large:small\nskilltransfer_restarts = 2\n")
    pytester.makepyprojecttoml(f'''
        [tool.skilltransfer.models]
        small = "anthropic:fake-small@{fake.anthropic_url}"
        large = "openai:fake-large@{fake.openai_url}"
    ''')
    runs = {}
    try:
        for workers in ("0", "2"):
            shutil.rmtree(pytester.path / "cassettes", ignore_errors=True)
            for snapshots in root.glob("*/__snapshots__"):
                shutil.rmtree(snapshots)
            fake.received.clear()
            result = pytester.runpytest_subprocess("-n", workers, "--record-mode=all", "--snapshot-update",
                                                   "--samples=2", "--skilltransfer-json=r.json", "-p", "no:randomly")
            assert result.ret == 0, result.stdout.str()
            report = json.loads((pytester.path / "r.json").read_text())
            bodies = Counter(json.dumps(r["body"], sort_keys=True) for r in fake.received)
            runs[workers] = (_stable(report["results"]), sorted(bodies.items()), _files(pytester.path / "cassettes"),
                             {name: _files(root / name / "__snapshots__") for name in ("alpha", "beta", "gamma")})
    finally:
        fake.stop()
    assert runs["0"] == runs["2"]


def _stable(results: list[dict]) -> list[dict]:
    """The report's results without what may differ between runs (durations, worker names)."""
    drop = {"duration", "duration_s", "worker", "started", "finished"}
    return sorted(({k: v for k, v in r.items() if k not in drop} for r in results), key=lambda r: r["item"])


def test_the_path_clock_counts_dependent_calls_whatever_the_concurrency() -> None:
    """Calls of one evaluation are independent (one step on the path), even when they run one at a time."""
    model = resolve_model("sim-small")
    paths = []
    for workers in (1, 4):
        cache = CallCache()

        def attempt(i: int) -> None:
            cache.call(model, Request(system="s", messages=(Message("user", f"task {i}"),)), Meter(), "agent")
            cache.call(model, Request(system="s", messages=(Message("user", f"task {i} again"),)), Meter(), "agent")

        def chain() -> int:
            start = phases.calls_on_path()
            phases.fan_out(attempt, list(range(5)), workers, "t")
            phases.fan_out(attempt, list(range(5, 8)), workers, "t")
            return phases.calls_on_path() - start

        paths.append(contextvars.copy_context().run(chain))
    assert paths == [4, 4]


def test_the_round_clock_counts_the_rounds_a_capped_model_needs() -> None:
    """20 independent calls to one model that takes 8 at a time: one call deep, three rounds deep;
    answers already known cost no round (each chain starts on a fresh clock: an empty context)."""
    model = resolve_model("sim-small")
    cache = CallCache()

    def attempt(i: int) -> None:
        cache.call(model, Request(system="s", messages=(Message("user", f"task {i}"),)), Meter(), "agent")

    def chain(jobs: list[int], model_id: str | None) -> tuple[int, int]:
        phases.fan_out(attempt, jobs, 8, "t", model_id)
        return phases.calls_on_path(), phases.rounds_on_path()

    assert contextvars.Context().run(chain, list(range(20)), model.model_id) == (1, 3)
    assert contextvars.Context().run(chain, list(range(20, 40)), None) == (1, 1)
    assert contextvars.Context().run(chain, list(range(12)), model.model_id) == (0, 0)  # all known


def test_the_round_clock_bounds_the_wall_of_a_fixed_latency_run() -> None:
    """A bound is a bound: with every call taking `delay`, no run is shorter than its rounds x `delay`."""
    seed = load_seed(ROOT / "seeds" / "ticket-router")
    delay = 0.03
    for workers in (1, 2, 8):
        config = ProtocolConfig(nights=1, workers=workers, limit_replay=2, limit_holdout=0, samples=2)
        source = _Recorder(resolve_model("sim-small"), delay=delay)
        target = _Recorder(resolve_model("sim-large"), delay=delay)
        session = SeedSession(seed, config, concurrent_phases=True)

        def run() -> tuple[float, int, int]:
            start = time.perf_counter()
            session.transfer(source, target)
            return time.perf_counter() - start, phases.calls_on_path(), phases.rounds_on_path()

        wall, calls, rounds = contextvars.Context().run(run)
        assert rounds >= calls > 0
        assert wall >= rounds * delay, (workers, wall, rounds)
        if workers == 1:
            assert rounds > calls  # one call at a time: every evaluation takes as many rounds as it has calls
