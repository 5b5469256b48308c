"""The group-sequential design: its exact operating figures (power, coverage, saving) reproduce the fixed test's,
it stops decided and futile items where it should, and a walk over recorded tasks is a pure function of them."""

from __future__ import annotations

import pytest
from shared_runs import computed_once

from pytest_skilltransfer.evidence import sequential
from pytest_skilltransfer.evidence.score_intervals import FAIL, INCONCLUSIVE, PASS

FIRST = sequential.Design("first", (0.25, 0.5, 0.75, 1.0), (0.02, 0.08, 0.2, 0.7), rule=sequential.UNMOVED)
SHIPPED = sequential.GROUP_SEQUENTIAL


def test_the_enumeration_reproduces_the_fixed_test_and_the_first_design() -> None:
    """One look is the fixed test (power 0.889 at a 0.3 gain, 0.683 at a net 0.3 with 5% worse); the first design's
    figures (0.810, 0.579; 75% saved where nothing moves) come out of the same enumeration."""
    assert sequential.operating(sequential.FIXED, 24, 0.3, 0.0, coverage=False).passes[0] == pytest.approx(0.889, abs=1e-3)
    assert sequential.operating(sequential.FIXED, 24, 0.35, 0.05, coverage=False).passes[0] == pytest.approx(0.683, abs=1e-3)
    assert sequential.operating(FIRST, 24, 0.3, 0.0, coverage=False).passes[0] == pytest.approx(0.810, abs=1e-3)
    assert sequential.operating(FIRST, 24, 0.35, 0.05, coverage=False).passes[0] == pytest.approx(0.579, abs=1e-3)
    assert sequential.operating(FIRST, 24, 0.0, 0.0, coverage=False).saved == pytest.approx(0.75)


def test_the_shipped_design_keeps_power_and_stops_noisy_nulls() -> None:
    """Power >= 0.80 for a 0.3 gain at 24 tasks; a noisy null (20% up, 20% down) saves about a third of the
    answers where stopping only when nothing moved saves 4%."""
    assert sequential.operating(SHIPPED, 24, 0.3, 0.0, coverage=False).passes[0] >= 0.80
    noisy = sequential.operating(SHIPPED, 24, 0.2, 0.2, coverage=False)
    assert noisy.saved > 0.30 > 0.05 > sequential.operating(FIRST, 24, 0.2, 0.2, coverage=False).saved
    assert noisy.fails[0] + noisy.passes[0] < 0.05  # the stop claims nothing


COVERAGE_CASES = [(0.0, 0.0), (0.2, 0.2), (0.3, 0.0), (0.1, 0.4), (0.45, 0.05)]


@pytest.fixture
def coverages(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[float, float], float]:
    """Each case's exact coverage, computed once per test run (`computed_once`): the cases share the stopping
    looks' intervals (the exact test's cache), which the first case computes and the others reuse."""
    return computed_once(tmp_path_factory, "sequential-coverage",
                         lambda: {case: sequential.operating(SHIPPED, 24, *case).coverage for case in COVERAGE_CASES})


@pytest.mark.parametrize(("up", "down"), COVERAGE_CASES)
def test_the_stopping_look_s_interval_covers_the_true_gain(coverages: dict, up: float, down: float) -> None:
    """Coverage of the interval reported where the design stops, exactly over every path: >= 0.95 (the union
    bound over the looks' levels), futility stops included."""
    assert coverages[up, down] >= 0.95


def test_looks_spend_alpha_across_the_tasks() -> None:
    looks = SHIPPED.looks(24)
    assert [k.tasks for k in looks] == [6, 12, 18, 24]
    assert sum(k.share for k in looks) == pytest.approx(1.0)
    assert looks[-1].level(0.05) == pytest.approx(1 - 0.05 * 0.7)
    assert [k.tasks for k in SHIPPED.looks(3)] == [1, 2, 3]
    assert [(k.tasks, k.share) for k in SHIPPED.looks(2)] == [(1, pytest.approx(0.1)), (2, pytest.approx(0.9))]
    assert sequential.FIXED.looks(24) == (sequential.Look(1, 24, 1.0),)
    with pytest.raises(ValueError, match="sum to 1"):
        sequential.Design("bad", (0.5, 1.0), (0.5, 0.6))
    with pytest.raises(ValueError, match="end at every task"):
        sequential.Design("bad", (0.5, 0.9), (0.5, 0.5))


def test_a_walk_stops_where_the_evidence_decides() -> None:
    """12 of 12 tasks up: decided at look 2, its interval at that look's level (above 0); nothing moving in the
    first 6: futile at look 1; a noisy start: futile when the prediction is poor; a late gain goes on."""
    stop, seen = sequential.run(SHIPPED, [1.0] * 24)
    assert (stop.look, stop.tasks, stop.reason) == (2, 12, sequential.DECIDED)
    assert seen[-1].decisions == (PASS,) and stop.level() == pytest.approx(1 - 0.05 * 0.08)
    assert sequential.stop_interval(stop, 12, 0)[0] > 0
    assert sequential.run(SHIPPED, [-1.0] * 24)[1][-1].decisions == (FAIL,)
    stop, _ = sequential.run(SHIPPED, [0.0] * 6 + [1.0] * 18)
    assert (stop.tasks, stop.reason) == (6, sequential.FUTILE)
    stop, seen = sequential.run(SHIPPED, [1, -1, 0, 0, 1, -1, 0, 0, 1, -1, 0, -1] + [1.0] * 12)
    assert stop.reason == sequential.FUTILE and seen[-1].predictive[0] < 0.05
    stop, _ = sequential.run(SHIPPED, [0, 0, 1, 0, 0, 0] + [1.0] * 18)
    assert stop.reason == sequential.DECIDED and stop.tasks == 18
    assert sequential.run(sequential.FIXED, [1.0] * 24)[0].tasks == 24


def test_every_threshold_must_be_decided_before_an_early_stop() -> None:
    """A gate's threshold counts like the outcome's 0: 12 of 12 up decide 0 but not a `min_gain` of 0.5, which
    the last look is likely to decide (go on); one of 0.8 not even 24 of 24 could pass (futile)."""
    stop, seen = sequential.run(SHIPPED, [1.0] * 24, thresholds=(0.0, 0.5))
    assert seen[1].decisions == (PASS, INCONCLUSIVE) and seen[1].action == sequential.CONTINUE
    assert stop.tasks == 24 and seen[-1].decisions == (PASS, PASS)
    stop, seen = sequential.run(SHIPPED, [1.0] * 24, thresholds=(0.0, 0.8))
    assert (stop.tasks, stop.reason) == (12, sequential.FUTILE)


def test_a_run_family_s_level_is_split_across_the_looks() -> None:
    """In a family of 40 items each item has alpha 0.05 / 40, and each look a share of that: no early stop for
    efficacy at 12 tasks, and the last look's level is 1 - 0.00125 * 0.7."""
    stop, seen = sequential.run(SHIPPED, [1.0] * 24, alpha=0.05 / 40)
    assert seen[1].decisions == (PASS,) or stop.tasks > 12
    assert sequential.Look(4, 24, 0.7).level(0.05 / 40) == pytest.approx(1 - 0.00125 * 0.7)


def test_predictive_probability_is_a_probability() -> None:
    assert 0.0 <= sequential.predictive_decision(24, 12, 3.0, 3.0, 0.0, 0.964) <= 1.0
    assert sequential.predictive_decision(24, 12, 12.0, 0.0, 0.0, 0.964) > 0.99
    assert sequential.predictive_decision(24, 24, 12.0, 0.0, 0.0, 0.964) == 1.0


def test_an_open_regression_keeps_an_item_looking() -> None:
    """The regression pair (now against the committed snapshot's 18 tasks) never stops an item: after 6 tasks that
    all dropped it keeps it looking; unchanged tasks leave the stop to the gain; no reference, no say."""
    reference = tuple((f"t{i}", 1.0) for i in range(18))
    stopping = sequential.Stopping(0.05, (0.0,), reference, -0.05)
    first = SHIPPED.looks(24)[0]
    dropped = [(f"t{i}", 0.0) for i in range(6)]
    assert sequential.reference_look(SHIPPED, 24, first, dropped, stopping) == sequential.CONTINUE
    assert sequential.reference_look(SHIPPED, 24, first, [(f"t{i}", 1.0) for i in range(6)], stopping) == sequential.FUTILE
    assert sequential.reference_look(SHIPPED, 24, first, dropped, sequential.Stopping()) is None


def test_open_min_score_and_min_efficiency_keep_an_item_looking() -> None:
    """After 6 of 24 tasks: a transferred score of 4/6 against min_score 0.5 is open and the last look would likely
    decide it, so the item looks on; 9/18 against 0.5 can no longer be decided, so it has no say; 6/6 against 0.1
    is decided. min_efficiency 0.5 reads (transferred - baseline) - 0.5 (direct -
    baseline) per task: the transferred skill doing all the direct one does keeps it open and looking; nothing
    moving in any arm leaves the stop to the pair. Without such a gate, no say."""
    first = SHIPPED.looks(24)[0]
    score = sequential.Stopping(0.05, (0.0,), min_score=0.5)
    assert sequential.gates_look(SHIPPED, 24, first, [1, 1, 1, 1, 0, 0], [0] * 6, None, score) == sequential.CONTINUE
    assert sequential.score_predictive(24, 18, 9.0, 0.5, 0.965) == 0.0  # 9..15 of 24 never decides 0.5
    assert sequential.gates_look(SHIPPED, 24, SHIPPED.looks(24)[2], [1, 0] * 9, [0] * 18, None, score) is None
    assert sequential.gates_look(SHIPPED, 24, first, [1] * 6, [0] * 6, None,
                                 sequential.Stopping(min_score=0.1)) is None  # decided: 6/6 at 99.9% is >= 0.28
    efficiency = sequential.Stopping(min_efficiency=0.5)
    assert sequential.gates_look(SHIPPED, 24, first, [1, 1, 1, 0, 0, 0], [0] * 6, [1, 1, 1, 0, 0, 0],
                                 efficiency) == sequential.CONTINUE
    assert sequential.gates_look(SHIPPED, 24, first, [0] * 6, [0] * 6, [0] * 6, efficiency) is None
    assert sequential.gates_look(SHIPPED, 24, first, [1, 1, 1, 1, 0, 0], [0] * 6, None, sequential.Stopping()) is None
    assert sequential.gates_look(SHIPPED, 24, SHIPPED.looks(24)[-1], [1] * 24, [0] * 24, None, score) is None


def test_a_full_reference_gives_the_regression_gate_its_power() -> None:
    """docs/protocol.md's table: a later change making each task fail with probability 0.3 or 0.5 is caught (the
    regression pair's looks, threshold -0.05) over a full 24-task reference as often as the table says, and over a
    6-task reference (a stop at look 1 that kept nothing past it) almost never, and never in a family of 40."""
    def caught(design: sequential.Design, tasks: int, drop: float, alpha: float = 0.05) -> float:
        return sequential.operating(design, tasks, 0.0, drop, (-0.05,), alpha, coverage=False).fails[0]

    assert [round(caught(SHIPPED, 24, d), 3) for d in (0.3, 0.5)] == [0.570, 0.973]
    assert [round(caught(sequential.FIXED, 24, d), 3) for d in (0.3, 0.5)] == [0.771, 0.997]
    assert round(caught(SHIPPED, 24, 0.5, 0.05 / 40), 3) == 0.554
    assert round(caught(sequential.FIXED, 24, 0.5, 0.05 / 40), 3) == 0.581
    assert caught(sequential.FIXED, 6, 0.3) <= 0.001 and caught(sequential.FIXED, 6, 0.5) <= 0.016
    assert caught(sequential.FIXED, 6, 0.5, 0.05 / 40) == 0.0
