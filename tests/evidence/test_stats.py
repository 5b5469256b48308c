"""The statistics that decide verdicts: coverage at small n, exact paired tests, A/A, power, corrections."""

from __future__ import annotations

import random
from functools import lru_cache

import pytest

try:  # imported at collection, before any test touches the import machinery
    from scipy import special
except ImportError:  # scipy is a dev extra
    special = None

from pytest_skilltransfer.evidence import paired_exact, stats
from pytest_skilltransfer.evidence.power import _fewest_tasks
from pytest_skilltransfer.evidence.item_record import ItemRecord
from pytest_skilltransfer.plugin import gating
from pytest_skilltransfer.engine.seed_data import Thresholds

PROBABILITIES = (0.1, 0.3, 0.5, 0.7, 0.9)
TASK_COUNTS = (3, 6, 20, 50)
REPLICATES = 1000
GAIN_REPLICATES = 400
COVERAGE = 0.93


@lru_cache(maxsize=None)
def _score_interval(total: float, n: int) -> tuple[float, float]:
    return stats.interval_of_sum(total, n)


@lru_cache(maxsize=None)
def _gain_covers(n: int, up: float, down: float, truth: float) -> bool:
    """Is `truth` inside the gain's interval? Its test at the truth accepts (the interval inverts it)."""
    return stats.gain_decision(n, up, down, truth + 1e-9) == "inconclusive"


def _covers(interval: tuple[float, float], truth: float) -> bool:
    return interval[0] - 1e-9 <= truth <= interval[1] + 1e-9


def _coverage(draw, interval, truth: float, n: int, rng: random.Random) -> float:
    """Share of REPLICATES seeded draws of n task values whose interval covers `truth`."""
    hits = 0
    for _ in range(REPLICATES):
        values = [draw(rng) for _ in range(n)]
        hits += _covers(interval(round(sum(values), 9), n), truth)
    return hits / REPLICATES


@pytest.mark.parametrize("samples", [1, 3])
def test_score_interval_covers_at_every_p_and_task_count(samples: int) -> None:
    """Bernoulli tasks with known p, one sample (binary) or the mean of three: coverage >= 0.93 in every cell."""
    rng = random.Random(20260 + samples)
    cells = {}
    for p in PROBABILITIES:
        draw = lambda r, p=p: sum(r.random() < p for _ in range(samples)) / samples
        for n in TASK_COUNTS:
            cells[p, n] = _coverage(draw, _score_interval, p, n, rng)
    assert min(cells.values()) >= COVERAGE, {cell: c for cell, c in cells.items() if c < COVERAGE}


@pytest.mark.parametrize("samples, heterogeneous", [(1, False), (3, False), (3, True)])
def test_paired_gain_interval_covers_at_every_p_and_task_count(samples: int, heterogeneous: bool) -> None:
    """Paired tasks, each arm a mean of `samples` rollouts: baseline Bernoulli(p) (per task p drawn
    around p when heterogeneous); the other arm improves a failing sample with probability 1/2 and
    breaks a passing one with probability 1/5. Task means enter the exact test as fractional moves."""
    rng = random.Random(4242 + samples + heterogeneous)
    cells = {}
    for p in PROBABILITIES:
        def draw(r: random.Random, p: float = p) -> tuple[float, float]:
            q = min(max(p + (r.random() - 0.5) * 0.6, 0.0), 1.0) if heterogeneous else p
            before = [r.random() < q for _ in range(samples)]
            after = [(r.random() < 0.5) if not b else (r.random() >= 0.2) for b in before]
            d = (sum(after) - sum(before)) / samples
            return d

        truth = 0.5 * (1 - p) - 0.2 * p
        for n in (3, 6, 20):
            hits = 0
            for _ in range(GAIN_REPLICATES):
                d = [draw(rng) for _ in range(n)]
                up, down = round(sum(x for x in d if x > 0), 6), round(-sum(x for x in d if x < 0), 6)
                hits += _gain_covers(n, up, down, round(truth, 6))
            cells[p, n] = hits / GAIN_REPLICATES
    assert min(cells.values()) >= COVERAGE, {cell: c for cell, c in cells.items() if c < COVERAGE}


def test_binary_score_interval_is_clopper_pearson() -> None:
    estimate = stats.score([1, 0, 0])
    assert (round(estimate.low, 6), round(estimate.high, 6)) == (0.008404, 0.905701)
    assert stats.score([1, 1, 1]).low == pytest.approx(0.025 ** (1 / 3))
    assert stats.score([0, 0, 0]).high == pytest.approx(1 - 0.025 ** (1 / 3))


@pytest.mark.skipif(special is None, reason="scipy (dev extra) is not installed")
def test_beta_functions_match_scipy() -> None:
    rng = random.Random(5)
    for _ in range(300):
        a, b, x = rng.uniform(0.05, 80), rng.uniform(0.05, 80), rng.random()
        assert stats.beta_cdf(x, a, b) == pytest.approx(float(special.betainc(a, b, x)), abs=1e-10)
        assert stats.beta_quantile(x, a, b) == pytest.approx(float(special.betaincinv(a, b, x)), abs=1e-8)


def test_a_a_identical_arms_give_zero_gain_and_p_one() -> None:
    for arm in ([0.0, 1.0, 1.0, 0.0, 1.0, 1.0], [1 / 3, 2 / 3, 1.0, 0.0], [0.5] * 5):
        gain = stats.paired_gain(arm, list(arm))
        assert gain.mean == 0.0 and gain.p_value == 1.0
        assert gain.low < 0 < gain.high and gain.low == pytest.approx(-gain.high)
        assert (gain.improved, gain.worsened, gain.tied) == (0, 0, len(arm))


def _item(before: list[float], after: list[float], samples: int) -> ItemRecord:
    gain = stats.paired_gain(before, after)
    evaluation = lambda values: {"hard": stats.score(values).as_dict(), "soft": stats.score(values).as_dict(),
                                 "tasks": [{"task_id": f"t{i}", "hard": v} for i, v in enumerate(values)]}
    return ItemRecord.from_json({
        "seed": "s", "source": "a", "target": "b", "baseline_target": stats.mean(before),
        "transferred": stats.mean(after), "gain": gain.as_dict(), "config": {"samples": samples},
        "direct_target": None, "scores": {"baseline": evaluation(before), "transferred": evaluation(after)}})


def test_more_samples_with_the_same_per_task_outcomes_cannot_flip_a_verdict() -> None:
    before, after = [0, 0, 1, 0, 1, 0], [1, 1, 1, 0, 1, 1]
    for thresholds in (Thresholds(min_gain=0.3), Thresholds(min_gain=0.0), Thresholds(min_score=0.5),
                       Thresholds(min_gain=-0.5, min_score=0.1)):
        one = gating.evaluate(_item(before, after, samples=1), thresholds)
        three = gating.evaluate(_item(before, after, samples=3), thresholds)
        assert [g.verdict for g in one.gates] == [g.verdict for g in three.gates]
        assert [(g.low, g.high) for g in one.gates] == [(g.low, g.high) for g in three.gates]


def test_three_of_three_improvements_is_inconclusive_for_min_gain_half() -> None:
    outcome = gating.evaluate(_item([0, 0, 0], [1, 1, 1], samples=1), Thresholds(min_gain=0.5))
    (gate,) = outcome.gates
    assert outcome.verdict == gate.verdict == "inconclusive" and not outcome.passed
    assert gate.tasks_to_decide == 13  # 13 of 13 improved: lower bound 2 * 0.025 ** (1/13) - 1 >= 0.5
    assert stats.gain_interval(13, 13, 0)[0] >= 0.5 > stats.gain_interval(12, 12, 0)[0]
    assert "over 13 held-out task(s) (now 3) would decide it" in gate.message
    assert "p = 0.25" in gate.message


def test_gates_pass_and_fail_only_on_evidence() -> None:
    many_better = _item([0.0] * 30, [1.0] * 30, samples=1)
    assert gating.evaluate(many_better, Thresholds(min_gain=0.5)).verdict == "pass"
    assert gating.evaluate(many_better, Thresholds(min_score=0.95)).verdict == "inconclusive"
    same = _item([1.0] * 30, [1.0] * 30, samples=1)
    assert gating.evaluate(same, Thresholds(min_gain=0.5)).verdict == "fail"


def test_minimal_detectable_gain_and_tasks_needed() -> None:
    assert stats.minimal_detectable_gain(3) is None  # three tasks can never show a gain
    mdgs = [stats.minimal_detectable_gain(n) for n in (6, 12, 24, 50, 100)]
    assert all(a > b for a, b in zip(mdgs, mdgs[1:]))
    needed = stats.tasks_for_gain(0.5)
    assert stats.detection_power(0.5, needed) >= 0.8 > stats.detection_power(0.5, needed - 1)
    assert stats.minimal_detectable_gain(needed) <= 0.5


def _tasks_for_gain_by_power(gain: float, level: float, power: float, threshold: float, restarts: int) -> int | None:
    """`tasks_for_gain` by its definition: its search (`_fewest_tasks`) on `detection_power` itself."""
    return _fewest_tasks(lambda m: stats.detection_power(gain, m, level, threshold, restarts) >= power, 2000)


def test_tasks_for_gain_asks_one_clearing_test_per_task_count_and_finds_what_the_power_finds() -> None:
    rng = random.Random(11)
    for _ in range(24):
        gain = round(rng.uniform(0.15, 0.9), 3)
        level = rng.choice([0.95, 0.99, 0.999, 0.99125, round(1 - 0.05 / rng.randint(2, 90), 6)])
        threshold = rng.choice([0.0, 0.0, round(rng.uniform(0.0, gain - 0.05), 3)])
        restarts, power = rng.choice([1, 1, 3, 5]), rng.choice([0.8, 0.9])
        expected = _tasks_for_gain_by_power(gain, level, power, threshold, restarts)
        assert stats.tasks_for_gain(gain, level, power, 2000, threshold, restarts) == expected


def test_holm_adjusts_step_down() -> None:
    assert stats.holm([0.01, 0.04, 0.03, 0.5]) == pytest.approx([0.04, 0.09, 0.09, 0.5])


def test_regression_fails_only_on_evidence_of_a_drop() -> None:
    before = {f"t{i}": 1.0 for i in range(8)}
    assert stats.regression(before, dict(before), 0.05).verdict == "pass"
    one_drop = {**before, "t0": 0.0}
    assert stats.regression(before, one_drop, 0.05).verdict == "pass"
    all_drop = {t: 0.0 for t in before}
    check = stats.regression(before, all_drop, 0.05)
    assert check.verdict == "fail" and check.gain.high < -0.05
    grown = stats.regression(before, {**all_drop, "new": 1.0}, 0.05)
    assert grown.common == 8 and grown.only_after == ("new",)
    assert stats.regression({"x": 1.0}, {"y": 0.0}, 0.05).gain is None


def test_a_a_with_restarts_gives_zero_gain_and_p_one() -> None:
    arm = [0.0, 1.0, 1.0, 0.0, 1.0, 1.0]
    gain = stats.restart_gain(arm, [list(arm)] * 5)
    assert gain.mean == 0.0 and gain.p_value == 1.0 and gain.restart_gains == (0.0,) * 5
    assert gain.low < 0 < gain.high


# Restart populations (baseline pass rate, good skill's pass rate, bad skill's, share of good
# optimizations): unimodal, 50/50 and lopsided bimodal, and two-point populations whose bad mode
# scores 0 (the worst case for a lower bound) at shares where every restart lands in the good mode
# often (0.8^5 = 0.33) or rarely.
RESTART_POPULATIONS = ((0.1, 0.9, 0.1, 0.5), (0.3, 0.8, 0.3, 0.8), (0.5, 0.5, 0.5, 0.5), (0.2, 0.7, 0.6, 0.5),
                       (0.2, 0.6, 0.6, 1.0), (0.1, 0.9, 0.0, 0.2), (0.1, 0.9, 0.0, 0.5), (0.1, 0.9, 0.0, 0.8),
                       (0.5, 1.0, 0.0, 0.9), (0.5, 1.0, 0.0, 0.1))


# Every tenth replicate computes the two-level interval itself (the rest only when the test misses): 100 to 200
# per case, so an interval that misses a gain its test accepts in 5% of replicates is caught with probability
# 1 - 0.95^100 > 0.99, where the coverage bound alone catches it only past 5% of misses.
INTERVAL_EVERY = 10


def _restart_covers(before: list[float], afters: list[list[float]], truth: float, computed: bool) -> bool:
    """Does the two-level interval (`restart_interval`) cover `truth`? The interval holds every gain its test
    does not reject, so when the task-level test at level 1 - a/2 accepts truth + the restart margin below and
    truth - the margin above (`paired_exact.rejects_below` and `rejects_above`, which `gain_decision` and
    `restart_p_value` ask), the interval covers `truth`: the test answers without the interval's bisections.
    The interval is computed when `computed` or when the test rejects, and must then hold what the test accepted."""
    n = len(before)
    averaged = [stats.mean(a[i] for a in afters) - before[i] for i in range(n)]
    up, down = stats.moves(averaged)
    gains = [stats.mean(a[i] - before[i] for i in range(n)) for a in afters]
    span = stats.restart_span(before)
    below, above = stats.restart_margins(gains, span, stats.LEVEL)
    alpha = (1 - stats.part_level(stats.LEVEL)) / 2  # each side of the task-level part
    b, c = round(up, 9), round(down, 9)  # as `gain_interval` and `gain_decision` round them
    accepted = (not paired_exact.rejects_below(n, b, c, truth + below, alpha)
                and not paired_exact.rejects_above(n, b, c, truth - above, alpha))
    if accepted and not computed:
        return True
    low, high = stats.restart_interval(n, up, down, gains, span)
    covers = low - 1e-9 <= truth <= high + 1e-9
    assert covers or not accepted, ("the interval misses a gain its test accepts", n, up, down, gains, truth)
    return covers


@pytest.mark.parametrize("n, restarts", [(6, 3), (24, 3), (24, 5)])
def test_two_level_gain_interval_covers_whatever_the_restarts_do(n: int, restarts: int) -> None:
    """A seeded two-level simulation: each restart's skill is drawn from the population, then each task
    passes or fails by chance; the truth is the mean gain over the population of optimizations and
    tasks. Coverage must reach 0.95 in every population, bimodal ones included (the bound over restarts
    assumes nothing about their shape). A replicate whose test accepts the truth counts as covered (the
    interval holds every gain its test accepts); every tenth computes the interval and checks that it does."""
    rng = random.Random(77 + n + restarts)
    runs = 200 if n < 10 else 100  # 24 fractional tasks make each exact interval slow to enumerate
    for p0, good, bad, share in RESTART_POPULATIONS:
        truth = share * good + (1 - share) * bad - p0
        hits = 0
        for run in range(runs):
            skills = [good if rng.random() < share else bad for _ in range(restarts)]
            before = [float(rng.random() < p0) for _ in range(n)]
            afters = [[float(rng.random() < q) for _ in range(n)] for q in skills]
            hits += _restart_covers(before, afters, truth, computed=run % INTERVAL_EVERY == 0)
        assert hits / runs >= 0.95, (p0, good, bad, share, hits / runs)


def test_restart_bound_is_exact_for_two_point_populations() -> None:
    """The bound over restarts alone, computed by enumeration: for a population putting mass q on a
    restart gain of `low` and 1 - q on `high`, the chance that its interval misses the mean is at most
    the nominal 5% at every q (R = 3, 5, 8)."""
    from math import comb

    from pytest_skilltransfer.evidence.bounded_mean import mean_bounds

    for restarts in (3, 5, 8):
        for q in [i / 40 for i in range(41)]:
            truth = q * -0.2 + (1 - q) * 0.6
            miss = 0.0
            for bad in range(restarts + 1):
                low, high = mean_bounds([-0.2] * bad + [0.6] * (restarts - bad), -0.2, 0.8, 0.95)
                if not low - 1e-12 <= truth <= high + 1e-12:
                    miss += comb(restarts, bad) * q ** bad * (1 - q) ** (restarts - bad)
            assert miss <= 0.05 + 1e-12, (restarts, q, miss)


def test_one_sided_ks_distribution_matches_scipy() -> None:
    if special is None:
        pytest.skip("scipy (dev extra) is not installed")
    from scipy.stats import ksone

    from pytest_skilltransfer.evidence.bounded_mean import one_sided_ks_critical, one_sided_ks_sf

    for n in (1, 2, 3, 5, 8, 20):
        for d in (0.05, 0.2, 0.45, 0.7, 0.95):
            assert one_sided_ks_sf(d, n) == pytest.approx(float(ksone.sf(d, n)), abs=1e-10)
        assert one_sided_ks_critical(n, 0.0125) == pytest.approx(float(ksone.isf(0.0125, n)), abs=1e-9)


def test_restarts_that_agree_narrow_the_interval_only_as_far_as_their_number_allows() -> None:
    """Five restarts that all moved every task from 0 to 1 still leave room for an unseen share of
    optimizations that learned nothing: the interval stays below 1 - d(5) = 0.39 ... 1, and the mdg is
    the two-level one (0.80 at 24 tasks), not the single optimization's (0.26)."""
    before, afters = [0.0] * 24, [[1.0] * 24 for _ in range(5)]
    gain = stats.restart_gain(before, afters)
    assert gain.low < 0.4 and gain.high == 1.0 and gain.p_value < 0.05
    assert gain.mdg == pytest.approx(stats.minimal_detectable_gain(24, restarts=5))
    assert stats.minimal_detectable_gain(24, restarts=5) > 0.7 > 0.3 > stats.minimal_detectable_gain(24)


def test_the_restart_p_value_agrees_with_its_interval() -> None:
    rng = random.Random(5)
    for restarts, shares in ((3, (0.8, 0.4, 0.7)), (5, (0.9, 0.9, 0.8, 0.9, 1.0)), (5, (0.1, 0.0, 0.2, 0.1, 0.0))):
        for _ in range(4):
            before = [float(rng.random() < 0.3) for _ in range(24)]
            afters = [[float(rng.random() < q) for _ in range(24)] for q in shares]
            gain = stats.restart_gain(before, afters)
            assert (gain.p_value <= 0.05) == (gain.low > 0 or gain.high < 0), gain


def _record(seed: str, pair: tuple[str, str], before: list[float], after: list[float], item: str = "") -> dict:
    return {"seed": seed, "source": pair[0], "target": pair[1], "item": item or f"seeds/{seed}::transfer",
            "baseline_target": stats.mean(before), "transferred": stats.mean(after),
            "gain": stats.paired_gain(before, after).as_dict(), "gate": {"verdict": "pass", "passed": True}}


def test_run_summary_is_a_pure_function_of_the_item_records() -> None:
    from pytest_skilltransfer.evidence.item_record import records as typed
    from pytest_skilltransfer.evidence.summary import summarize as summarize_records

    summarize = lambda results: summarize_records(typed(results))  # noqa: E731  (the records read from JSON)
    rng = random.Random(11)
    records = []
    for i in range(6):
        for pair in (("a", "b"), ("b", "a")):
            before = [float(rng.random() < 0.3) for _ in range(24)]
            records.append(_record(f"seed{i}", pair, before, [max(b, float(rng.random() < 0.5)) for b in before]))
    twin = {**records[0], "item": "seeds/test_gates.py::test_seed0"}  # a hand-written test on the same item
    whole = summarize(records + [twin])
    shards = [records[:5], [twin] + records[5:]]
    shuffled = rng.sample(records + [twin], len(records) + 1)
    assert summarize([r for shard in shards for r in shard]) == summarize(shuffled) == whole
    assert whole["hypotheses"] == 12 and whole["verdicts"]["pass"] == 13
    ordered = sorted(records, key=lambda r: (r["seed"], r["source"]))
    # records judged in no family (each alone): the word is the item's own 95% outcome, p unadjusted
    assert [i["p_adjusted"] for i in whole["items"]] == pytest.approx([r["gain"]["p_value"] for r in ordered], rel=1e-5)
    assert [i["outcome"] for i in whole["items"]] == [stats.outcome(r["gain"]["ci_low"], r["gain"]["ci_high"])
                                                      for r in ordered]
    pair = whole["pairs"][0]
    gains = [r["gain"]["mean"] for r in records if r["source"] == "a"]
    assert pair["mean_gain"] == pytest.approx(stats.mean(gains), abs=1e-4)
    from pytest_skilltransfer.evidence.summary import over_seeds

    assert (pair["ci_low"], pair["ci_high"]) == pytest.approx(over_seeds(gains), abs=1e-4)


def test_gates_opt_in_to_bonferroni_over_the_run_items() -> None:
    item = _item([0.0] * 24, [1.0] * 10 + [0.0] * 14, samples=1)
    plain = gating.evaluate(item, Thresholds(min_gain=0.1))
    corrected = gating.evaluate(item, Thresholds(min_gain=0.1), correction="bonferroni", family=20)
    assert plain.verdict == "pass" and corrected.verdict == "inconclusive"
    assert corrected.level == pytest.approx(1 - 0.05 / 20) and "Bonferroni over 20 items" in corrected.inconclusive[0]
