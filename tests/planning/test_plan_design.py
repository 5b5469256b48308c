"""The plan under the group-sequential design: the held-out evaluations are expected at the design's expected share
of their tasks, bounded at all of them, and the verdict floor is the fixed design's baseline and transferred."""

from __future__ import annotations

import pytest
from plugin_support import PROJECT_SEEDS

from pytest_skilltransfer.engine.results import ProtocolConfig
from pytest_skilltransfer.engine.seeds import load_seed
from pytest_skilltransfer.evidence.sequential import expected_share
from pytest_skilltransfer.planning.money import held_out_scored, units_usd, verdict_floor
from pytest_skilltransfer.planning.plan import Planner

PAIR = ("claude-haiku-5-5", "claude-sonnet-5-5", "claude-haiku-5-5", "claude-sonnet-5-5")


def _units(config: ProtocolConfig, alpha: float = 0.05 / 90) -> list:
    return Planner(load_seed(PROJECT_SEEDS / "release-advisor"), config, alpha=alpha).item(*PAIR)


def test_the_design_lowers_the_expected_figure_and_keeps_the_bound() -> None:
    looks, fixed = _units(ProtocolConfig()), _units(ProtocolConfig(design="fixed"))
    share = expected_share("group-sequential", 24, 0.05 / 90)
    assert 0.3 < share < 0.7
    assert units_usd(looks) == pytest.approx(units_usd(fixed))  # the bound: every look, every task
    assert units_usd(looks, "expected") < units_usd(fixed, "expected")
    held = [u for u in looks if u.phase in ("baseline", "transferred", "direct")]
    assert {u.scored for u in held} == {share} and held_out_scored(looks) == pytest.approx(share, abs=1e-3)
    floor = units_usd([u for u in fixed if u.phase in ("baseline", "transferred")], "expected")
    assert verdict_floor(looks) == pytest.approx(floor, rel=1e-3) and verdict_floor(fixed) == pytest.approx(floor)
    assert held_out_scored(fixed) == 1.0


def test_where_the_design_falls_back_the_plan_expects_every_task() -> None:
    """Restarts run the fixed design (`SeedSession.design`), so the plan expects every task there."""
    restarts = _units(ProtocolConfig(restarts=2))
    assert {u.scored for u in restarts if u.phase == "baseline"} == {1.0}
    assert expected_share("fixed", 24) == 1.0


def test_a_run_that_writes_snapshots_expects_the_transferred_skill_on_every_task() -> None:
    """With --snapshot-update the transferred skill is scored past the pair's stop, on every held-out task (the
    regression gate's reference): the plan expects those answers too; baseline and direct still stop with the pair,
    and the bound (every look, every task) is unchanged."""
    seed, config = load_seed(PROJECT_SEEDS / "release-advisor"), ProtocolConfig()
    plain = Planner(seed, config, alpha=0.05 / 90).item(*PAIR)
    writing = Planner(seed, config, alpha=0.05 / 90, full_reference=True).item(*PAIR)
    share = expected_share("group-sequential", 24, 0.05 / 90)
    assert {u.phase: u.scored for u in writing if u.phase in ("baseline", "transferred", "direct")} == {
        "baseline": share, "transferred": 1.0, "direct": share}
    transferred = [units_usd([u], "expected") for units in (plain, writing) for u in units if u.phase == "transferred"]
    assert transferred[1] == pytest.approx(transferred[0] / share, rel=1e-3)  # dollars rounded to 1e-6
    assert units_usd(writing) == pytest.approx(units_usd(plain))
    assert units_usd(writing, "expected") - units_usd(plain, "expected") == pytest.approx(
        transferred[1] - transferred[0])


def test_the_bounds_alone_are_the_plans_bounds_without_the_expected_stop(monkeypatch: pytest.MonkeyPatch) -> None:
    """The progress line reads the bounds alone (`recording_bound`): its planner leaves the design's expected stop
    uncomputed, and every bound it gives is the full plan's."""
    from pytest_skilltransfer.planning import plan

    seed, config = load_seed(PROJECT_SEEDS / "release-advisor"), ProtocolConfig()
    full = Planner(seed, config, alpha=0.05 / 7, full_reference=True).item(*PAIR)
    monkeypatch.setattr(plan, "expected_share", lambda *args: pytest.fail("the expected stop was computed"))
    bounds = Planner(seed, config, alpha=0.05 / 7, full_reference=True, bounds_only=True).item(*PAIR)
    assert [(u.key, [(s.model_id, s.role, s.calls, s.input_tokens, s.output_tokens) for s in u.shares]) for u in bounds] \
        == [(u.key, [(s.model_id, s.role, s.calls, s.input_tokens, s.output_tokens) for s in u.shares]) for u in full]
    assert units_usd(bounds) == pytest.approx(units_usd(full))
