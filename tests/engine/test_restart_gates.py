"""More restarts never weaken a gate: with --restarts, harm, min_gain and the regression gate fail whenever
restart 1 alone (exactly the run without --restarts) or the mean of the R skills actually learned fails them,
whatever the interval over the population of optimizations says."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest

from pytest_skilltransfer.evidence import stats
from pytest_skilltransfer.evidence.item_record import ItemRecord
from pytest_skilltransfer.plugin.gating import evaluate
from pytest_skilltransfer.engine.seed_data import Thresholds

SEEDS = Path(__file__).resolve().parents[2] / "seeds"


def _copy_seed(pytester: pytest.Pytester, name: str, drop_expect: bool = False) -> None:
    target = pytester.path / "seeds" / name
    shutil.copytree(SEEDS / name, target, ignore=shutil.ignore_patterns("__snapshots__"))
    if drop_expect:
        toml = target / "seed.toml"
        toml.write_text(toml.read_text().split("[expect]")[0])


def test_five_restarts_that_all_hurt_fail_the_harm_gate_and_a_harmless_seed_passes(pytester: pytest.Pytester) -> None:
    """status-report without its declared outcome, sim-small -> sim-large: one optimization hurts (-0.62); with
    5 restarts the interval over the population of optimizations spans 0, yet the item fails for harm."""
    _copy_seed(pytester, "status-report", drop_expect=True)
    _copy_seed(pytester, "ticket-router")
    result = pytester.runpytest_subprocess("seeds", "--source=sim-small", "--target=sim-large", "--restarts=5",
                                           "--transfer-correction=none", "--snapshot-update", "-p", "no:cacheprovider",
                                           "--skilltransfer-html=r.html")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*FAILED*status-report/SKILL.md::transfer?sim-small->sim-large?*"])
    result.stdout.fnmatch_lines(["*harm: the learned skill makes sim-large worse than its own baseline: gain -0.68* "
                                 "(95% CI, 24 task(s), 5 restarts); these 5 skills -0.68* [[]-0.8*, -0.4*[]]; "
                                 "restart 1 alone (the kept skill, as a run without --restarts) -0.625 "
                                 "[[]-0.812, -0.387[]]*"])
    result.stdout.fnmatch_lines(["*restarts*these skills ?95% CI?*", "status~eport* -0.68 [[]-1.00, +0.*[]]  5 sd *"
                                 "  -0.68 [[]-0.8*, -0.4*[]] *fail"])
    page = (pytester.path / "r.html").read_text()
    assert "over the population of optimizations -0.68 [-1.00, +0.1" in page and "these 5 skills -0.68 [-0.8" in page
    assert "ticket-router/SKILL.md::transfer[sim-small->sim-large] PASSED" in pytester.runpytest_subprocess(
        "seeds/ticket-router", "--source=sim-small", "--target=sim-large", "--restarts=5", "-v",
        "-p", "no:cacheprovider").stdout.str()


def _record(before: list[float], afters: list[list[float]]) -> ItemRecord:
    """An item's record, as much of it as the gates read."""
    gain = stats.restart_gain(before, afters)
    tasks = [{"task_id": f"t{i}", "hard": stats.mean(a[i] for a in afters),
              **({"restarts": [a[i] for a in afters]} if len(afters) > 1 else {})} for i in range(len(before))]
    score = stats.score(tasks and [t["hard"] for t in tasks]).as_dict()
    return ItemRecord.from_json({
        "seed": "a", "source": "s", "target": "t", "baseline_target": stats.mean(before),
        "transferred": score["mean"], "gain": gain.as_dict(), "direct_target": None,
        "scores": {"transferred": {"hard": score, "soft": score, "tasks": tasks}}})


def _draw(rng: random.Random, n: int, restarts: int) -> tuple[list[float], list[list[float]]]:
    """A baseline and R restarts' per-task scores: each restart hurts, helps or does nothing, on tasks
    that are binary or the mean of a few samples."""
    grain = rng.choice((1, 2, 3))
    value = lambda p: round(sum(rng.random() < p for _ in range(grain)) / grain, 6)  # noqa: E731
    base_rate = rng.random()
    before = [value(base_rate) for _ in range(n)]
    afters = []
    for _ in range(restarts):
        rate = min(1.0, max(0.0, base_rate + rng.uniform(-0.9, 0.9)))
        afters.append([value(rate) for _ in range(n)])
    return before, afters


@pytest.mark.parametrize("n, restarts", [(6, 3), (12, 2), (24, 5)])
def test_restarts_never_pass_what_one_optimization_fails(n: int, restarts: int) -> None:
    """Property, over random tables: the single-optimization run is restart 1 alone on the same baseline;
    whenever its harm, min_gain or regression gate fails, the restarts run's fails too."""
    rng = random.Random(1000 * n + restarts)
    failures = {"harm_tolerance": 0, "min_gain": 0, "regression_tolerance": 0}
    for _ in range(20):
        before, afters = _draw(rng, n, restarts)
        committed = {f"t{i}": v for i, v in enumerate(_draw(rng, n, 1)[1][0])}
        thresholds = Thresholds(min_gain=rng.choice((-0.2, 0.1, 0.3)), harm_tolerance=rng.choice((0.0, 0.1)),
                                regression_tolerance=rng.choice((0.0, 0.05)))
        single = evaluate(_record(before, afters[:1]), thresholds, committed)
        many = evaluate(_record(before, afters), thresholds, committed)
        verdicts = {g.name: g.verdict for g in many.gates}
        for gate in single.gates:
            if gate.verdict == stats.FAIL:
                failures[gate.name] += 1
                assert verdicts[gate.name] == stats.FAIL, (gate.message, [g.message for g in many.gates])
    assert all(failures.values()), failures  # every gate was put to the test


def test_a_restart_that_alone_would_fail_fails_the_item_even_when_the_others_help() -> None:
    """Restart 1 hurts every task it touches; four others help: the mean of these skills is positive and the
    population interval spans 0, but the kept skill is the one a run without --restarts gates, and it hurts."""
    before = [1.0] * 12 + [0.0] * 12
    hurt = [0.0] * 12 + [0.0] * 12
    helps = [1.0] * 24
    outcome = evaluate(_record(before, [hurt] + [helps] * 4), Thresholds(harm_tolerance=0.0))
    (gate,) = outcome.gates
    assert gate.verdict == stats.FAIL and "restart 1 alone" in gate.message and gate.high < 0
    assert evaluate(_record(before, [helps] * 5), Thresholds(harm_tolerance=0.0)).verdict == stats.PASS


def test_more_samples_narrow_a_noisy_gain_and_leave_a_steady_one_alone() -> None:
    """What the gates' samples note says: one sample per task of a noisy task moves it up or down by chance;
    averaging many samples keeps the mean and drops the moves that cancel, so the interval narrows. A steady
    task's value is the same at any number of samples."""
    one_sample = stats.paired_gain([0.0] * 24, [1.0] * 12 + [0.0] * 12)
    noisy_one = stats.paired_gain([1.0] * 6 + [0.0] * 18, [0.0] * 6 + [1.0] * 12 + [0.0] * 6)  # 12 up, 6 down
    noisy_many = stats.paired_gain([0.5] * 24, [0.75] * 24)  # the same +0.25 on every task, noise averaged out
    assert noisy_one.mean == pytest.approx(noisy_many.mean) == pytest.approx(0.25)
    assert noisy_many.high - noisy_many.low < noisy_one.high - noisy_one.low
    assert one_sample.low > 0  # steady tasks: the number of tasks, not of samples, sets it
