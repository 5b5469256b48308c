"""The next held-out wave starts before the look ahead of it has every answer only when no answer still due can stop
that look; the result, the calls and the path clock's bound are those of a run that waits."""

from __future__ import annotations

import contextvars
import threading
import time
from pathlib import Path

import pytest

from pytest_skilltransfer.engine import phases, waves_ahead
from pytest_skilltransfer.engine.protocol import SeedSession
from pytest_skilltransfer.engine.results import ProtocolConfig
from pytest_skilltransfer.engine.seeds import load_seed
from pytest_skilltransfer.engine.waves_ahead import completions
from pytest_skilltransfer.models.base import Reply, Request
from pytest_skilltransfer.models.registry import resolve_model
from pytest_skilltransfer.reports.result_json import result_to_json

ROOT = Path(__file__).resolve().parents[2]
DELAY = 0.1  # each answer's latency: a wave's last answers come this long after the try they allow can start


def test_every_completion_of_the_scores_still_due_is_tried() -> None:
    skills = {"baseline": "A", "transfer": "B"}
    scores = {("A", "t1"): [1.0], ("A", "t2"): [0.0], ("B", "t1"): [1.0]}
    tables = completions(["t1", "t2"], 1, skills, scores)
    assert tables == [{"baseline": [1.0, 0.0], "transfer": [1.0, 0.0]},
                      {"baseline": [1.0, 0.0], "transfer": [1.0, 1.0]}]


def test_arms_of_one_skill_share_its_scores_and_samples_average() -> None:
    skills = {"baseline": "A", "transfer": "A"}
    tables = completions(["t1"], 2, skills, {("A", "t1"): [1.0]})
    assert tables == [{"baseline": [0.5], "transfer": [0.5]}, {"baseline": [1.0], "transfer": [1.0]}]


def test_nothing_is_tried_ahead_without_every_skill_or_with_too_much_due() -> None:
    assert completions(["t1"], 1, {"baseline": "A", "transfer": None}, {("A", "t1"): [1.0]}) is None
    done = {("A", "t1"): [1.0], ("B", "t1"): [0.0]}
    assert completions(["t1"], 1, {"baseline": "A", "transfer": "B"}, done) is None  # nothing due: the look runs
    tasks = [f"t{i}" for i in range(waves_ahead.OPEN_LIMIT + 1)]
    assert completions(tasks, 1, {"baseline": "A", "transfer": "A"}, {}) is None
    assert completions(["t1"], 1, {"baseline": "A", "transfer": "B"}, {("A", "t1"): [0.5]}) is None


def test_a_watch_closed_before_its_look_is_sure_starts_nothing() -> None:
    """The looks are tried beside the wave: a wave that ends first is looked at as always, and nothing starts."""
    trying, release, started = threading.Event(), threading.Event(), []

    def continues(_scores: dict) -> bool:
        trying.set()
        release.wait(5)
        return True

    watch = waves_ahead.WaveWatch("m", ["t1", "t2"], 1, {"baseline": "A", "transfer": "B"}, continues, started.append)
    for skill, task in (("A", "t1"), ("A", "t2"), ("B", "t1")):
        watch.scored(skill, task, 1.0, phases.Place(1, 1))  # returns at once: the try runs in the watch's thread
    assert trying.wait(5)
    assert watch.close() is False
    release.set()
    time.sleep(0.05)
    assert started == [] and not watch.started


def test_a_watch_starts_the_next_wave_once_every_completion_goes_on() -> None:
    started: list[dict] = []
    watch = waves_ahead.WaveWatch("m", ["t1"], 1, {"baseline": "A", "transfer": None}, lambda _s: True, started.append)
    watch.scored("A", "t1", 0.0, phases.Place(1, 1))
    time.sleep(0.05)
    assert started == []  # the transferred skill is not known yet
    watch.bind("transfer", "B")
    for _ in range(100):
        if started:
            break
        time.sleep(0.01)
    assert started == [{"baseline": "A", "transfer": "B"}] and watch.close() is True


class _Remote:
    """A model whose answers take `delay` (as a call over HTTP does), noting when each call starts and ends."""

    records_http = True

    def __init__(self, model, delay: float) -> None:
        self.model, self.delay = model, delay
        self.name = self.model_id = model.model_id
        self.calls: list[tuple[float, float, str]] = []
        self.lock = threading.Lock()

    def complete(self, request: Request) -> Reply:
        start = time.perf_counter()
        time.sleep(self.delay)
        reply = self.model.complete(request)
        with self.lock:
            self.calls.append((start, time.perf_counter(), request.messages[-1].content))
        return reply


def _transfer(limit: int, monkeypatch: pytest.MonkeyPatch) -> tuple[dict, _Remote, list, tuple[int, int], float]:
    monkeypatch.setattr(waves_ahead, "OPEN_LIMIT", limit)
    watches: list[waves_ahead.WaveWatch] = []
    original = waves_ahead.WaveWatch.__init__

    def noted(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        original(self, *args, **kwargs)
        watches.append(self)
    monkeypatch.setattr(waves_ahead.WaveWatch, "__init__", noted)
    seed = load_seed(ROOT / "seeds" / "ticket-router")
    config = ProtocolConfig(nights=1, workers=4, limit_replay=2, limit_holdout=2, limit_test=16)
    source, target = _Remote(resolve_model("sim-small"), DELAY), _Remote(resolve_model("sim-large"), DELAY)
    session = SeedSession(seed, config, concurrent_phases=True)

    def run() -> tuple[dict, float, tuple[int, int]]:
        start = time.perf_counter()
        result = session.transfer(source, target)
        return result_to_json(result), time.perf_counter() - start, (phases.calls_on_path(), phases.rounds_on_path())

    result, wall, clocks = contextvars.Context().run(run)
    return result, target, watches, clocks, wall


def test_a_wave_sent_ahead_changes_neither_the_result_nor_the_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    """Waves of 4 tasks x 3 arms at 4 calls at a time: 12 calls, three rounds; the look after a wave is tried once
    the last round's calls are out, and the next wave starts before they are answered."""
    waited, target_waited, _, _, _ = _transfer(0, monkeypatch)  # nothing is ever tried ahead
    ahead, target_ahead, watches, (calls, rounds), wall = _transfer(4, monkeypatch)
    assert ahead == waited
    assert sorted(c for _, _, c in target_ahead.calls) == sorted(c for _, _, c in target_waited.calls)
    assert any(w.started for w in watches), "no wave went ahead: the case must exercise it"
    assert 0 < calls <= rounds and wall >= rounds * DELAY  # the round clock stays a bound on the wall
