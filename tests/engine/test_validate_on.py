"""A validation set of models (`--validate-on`): the acceptance rule, the portable arm, held-out isolation and the
family of three comparisons, with scripted models."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scripted_model import ScriptedModel, edits, router_seed

from pytest_skilltransfer.engine.protocol import SeedSession
from pytest_skilltransfer.engine.results import ProtocolConfig
from pytest_skilltransfer.engine.scoring import scoring_profile
from pytest_skilltransfer.engine.seeds import load_seed
from pytest_skilltransfer.engine.seed_data import SeedError
from pytest_skilltransfer.engine.validation import (
    CheckRate,
    ValidationScore,
    blocked_text,
    check_pass_rates,
    check_rates,
    decide,
    parse_models,
)
from pytest_skilltransfer.evidence.portability import (
    LESS_PORTABLE,
    MORE_PORTABLE,
    NO_DIFFERENCE,
    holm_levels,
    portability,
    portability_word,
)
from pytest_skilltransfer.reports.result_json import IN_SAMPLE, result_to_json

CHECKS = {"kind": "rule", "checks": [{"op": "contains", "arg": "Owner:"}, {"op": "max_chars", "arg": 60}]}
PROFILE = scoring_profile("default")


@pytest.fixture
def seed(tmp_path: Path):
    return router_seed(tmp_path / "router", CHECKS, held_out=12, task="Route {split} ticket {i}")


def owner_rule_helps(skill: str, task: str, sample: int) -> str:
    """The source: either rule makes it write the Owner line."""
    text = f"Routed: {task[-2:]}."
    return text + (" Owner: @infra" if "OWNER-LINE" in skill or "OWNER-SHORT" in skill else "")


def owner_line_hurts(skill: str, task: str, sample: int) -> str:
    """A larger model: the OWNER-LINE rule makes it write far too much, and no owner; OWNER-SHORT is fine."""
    if "OWNER-LINE" in skill:
        return "Routed, with every detail of the ticket spelled out at length and no room left for the owner."
    return f"Routed: {task[-2:]}." + (" Owner: @infra" if "OWNER-SHORT" in skill else "")


def session(seed, **config):
    return SeedSession(seed, ProtocolConfig(**{"limit_replay": 0, "limit_holdout": 0, "direct": False, **config}),
                       concurrent_phases=False)


# -- the acceptance rule ---------------------------------------------------------------------------------


def test_accepts_a_strict_source_gain_that_lowers_no_listed_model():
    decision = decide(PROFILE, 0.25, 0.75, (ValidationScore("big", 0.5, 0.5), ValidationScore("mid", 0.5, 0.9)))
    assert decision.accepted and decision.source_improved and decision.blocked_by == ()


def test_a_listed_model_that_drops_blocks_the_edit_and_is_named():
    decision = decide(PROFILE, 0.25, 0.75, (ValidationScore("big", 0.5, 0.25), ValidationScore("mid", 0.5, 0.6)))
    assert not decision.accepted and decision.source_improved and decision.blocked_by == ("big",)


def test_the_tolerance_allows_a_drop_up_to_it_and_no_more():
    small_drop = (ValidationScore("big", 0.5, 0.45),)
    assert not decide(PROFILE, 0.25, 0.75, small_drop).accepted  # default 0: no drop at all
    assert decide(PROFILE, 0.25, 0.75, small_drop, tolerance=0.05).accepted  # exactly the tolerance
    assert decide(PROFILE, 0.25, 0.75, small_drop, tolerance=0.04).blocked_by == ("big",)
    with pytest.raises(ValueError, match=r"within \[0, 1\]"):
        decide(PROFILE, 0.25, 0.75, small_drop, tolerance=-0.1)


def test_the_source_must_still_improve_strictly():
    every_model_gains = (ValidationScore("big", 0.2, 0.9),)
    assert not decide(PROFILE, 0.5, 0.5, every_model_gains).accepted  # a tie on the source is no gain
    blocked = decide(PROFILE, 0.5, 0.4, (ValidationScore("big", 0.5, 0.1),))
    assert not blocked.accepted and not blocked.source_improved and blocked.blocked_by == ("big",)
    strict = decide(scoring_profile("gbrain"), 0.5, 0.54, ())  # the profile's min_delta still applies
    assert not strict.accepted


def test_a_listed_model_whose_gate_score_rises_while_a_kind_of_check_drops_blocks_the_edit():
    # a composite can pay for a lost requirement with a gained one: the length kept, the owner line lost
    traded = ValidationScore("big", 0.25, 0.625, (CheckRate("contains", 1.0, 0.5), CheckRate("max_chars", 0.0, 1.0)))
    assert traded.drop() < 0 and traded.dropped_checks() == (CheckRate("contains", 1.0, 0.5),)
    decision = decide(PROFILE, 0.25, 0.75, (traded,))
    assert not decision.accepted and decision.source_improved and decision.blocked_by == ("big",)
    assert decide(PROFILE, 0.25, 0.75, (traded,), tolerance=0.5).accepted  # the tolerance holds per kind too
    assert decide(PROFILE, 0.25, 0.75, (traded,), tolerance=0.49).blocked_by == ("big",)
    assert blocked_text((traded,)) == "big (contains 1.00 -> 0.50)"
    assert blocked_text((ValidationScore("big", 0.5, 0.25),)) == "big (gate score 0.50 -> 0.25)"


def test_a_kind_of_check_pools_its_args_samples_and_tasks():
    section = lambda name: ("section_present", f"section_present={name}")  # noqa: E731
    checks = [[section("A"), section("B"), ("max_chars", "max_chars=9")], [section("A")], [("contains", "contains=x")]]
    failed = [[("section_present=B",), ()],  # task 1: half its sections in sample 0, all in sample 1: 0.75
              [("section_present=A (timed out after 1 s)",)],  # a timed-out check fails: 0
              [()]]
    assert check_pass_rates(checks, failed) == {"section_present": 0.375, "max_chars": 1.0, "contains": 1.0}
    # a trade between two args of one kind (one banned phrase written instead of another) is no drop of the kind
    before = check_pass_rates([[section("A"), section("B")]], [[("section_present=B",)]])
    after = check_pass_rates([[section("A"), section("B")]], [[("section_present=A",)]])
    assert check_rates(before, after) == (CheckRate("section_present", 0.5, 0.5),)


def test_model_lists_parse_from_commas_and_lists():
    assert parse_models("big, mid,big", "x") == ("big", "mid")
    assert parse_models(["big", "mid, small"], "x") == ("big", "mid", "small")
    assert parse_models("", "x") == ()
    with pytest.raises(ValueError, match="x: expected model names"):
        parse_models(",", "x")
    with pytest.raises(ValueError, match="x: expected model names"):
        parse_models([3], "x")


# -- the protocol ----------------------------------------------------------------------------------------


def test_the_portable_arm_keeps_only_edits_no_listed_model_pays_for(seed):
    source = ScriptedModel("src", owner_rule_helps, [edits("OWNER-LINE: end with `Owner: @team`."),
                                                     edits("OWNER-SHORT: a short `Owner: @team` line.")])
    big = ScriptedModel("big", owner_line_hurts)
    result = session(seed).transfer(source, big, None, (big,))
    # today's arm: night 1's OWNER-LINE perfects the source's val and hurts the target
    assert "OWNER-LINE" in result.learned.learned_skill and result.transferred.hard.mean == 0.0
    first, second = result.portable[0].learned.nights
    assert not first.accepted and first.blocked_by == ("big",)
    assert first.validation == (ValidationScore("big", 0.25, 0.0, (CheckRate("contains", 0.0, 0.0),
                                                                    CheckRate("max_chars", 1.0, 0.0))),)
    assert second.accepted and second.blocked_by == () and second.validation[0].after == 1.0
    portable = result.portable[0].learned.learned_skill
    assert "OWNER-SHORT" in portable and "OWNER-LINE" not in portable
    assert result.portable[0].transferred.hard.mean == 1.0
    # the blocked edit is shown to the next reflection like any rejected edit
    assert 'add "OWNER-LINE: end with `Owner: @team`." (validation 0.25 -> 1.00)' in source.reflect_prompts()[-1]
    family = result.portability
    assert family is not None and family.word == MORE_PORTABLE
    assert family["multi_vs_single"].gain.mean == 1.0 and family["multi"].outcome == "transfers"
    assert set(result.phase_costs()) >= {"optimize-portable", "portable"}


def limit_keeps_owner(skill: str, task: str, sample: int) -> str:
    """The source: a LIMIT rule makes it write a short answer that keeps the Owner line."""
    text = f"Routed: {task[-2:]}. Owner: @infra"
    return text if "LIMIT" in skill else text + " " + "x" * 80


def limit_drops_owner(skill: str, task: str, sample: int) -> str:
    """A larger model: under the LIMIT rule it keeps the limit and, on every other task, drops the Owner line."""
    if "LIMIT" in skill and int(task[-2:]) % 2:
        return f"Routed: {task[-2:]}."
    return limit_keeps_owner(skill, task, sample)


def test_an_edit_that_trades_a_requirement_for_another_on_a_listed_model_is_blocked(tmp_path):
    # training and validation tasks check the Owner line and a length; the held-out ones the Owner line only
    checks = {"kind": "rule", "checks": [{"op": "contains", "arg": "Owner:"}, {"op": "max_chars", "arg": 60}]}
    seed = router_seed(tmp_path / "trade", checks, held_out=12, task="Route {split} ticket {i:02d}")
    held_out = {"kind": "rule", "checks": [{"op": "contains", "arg": "Owner:"}]}
    (seed.path / "held-out.jsonl").write_text("\n".join(
        json.dumps({"task_id": f"hd-{i:02d}", "task": f"Route hd ticket {i:02d}", "judge": held_out}) for i in range(12)))
    seed = load_seed(seed.path)
    source = ScriptedModel("src", limit_keeps_owner, [edits("LIMIT: at most 60 characters.")])
    big = ScriptedModel("big", limit_drops_owner)
    progress: list[str] = []
    run = SeedSession(seed, ProtocolConfig(limit_replay=0, limit_holdout=0, direct=False, nights=1),
                      progress=progress.append, concurrent_phases=False)
    result = run.transfer(source, big, None, (big,))
    (night,) = result.portable[0].learned.nights
    (score,) = night.validation
    assert score.after > score.before, "the composite gate score rises: the trade pays for itself there"
    val = run.splits["val"]
    kept = 1 - sum(int(t.text[-2:]) % 2 for t in val) / len(val)
    assert 0 < kept < 1 and score.dropped_checks() == (CheckRate("contains", 1.0, kept),)
    assert not night.accepted and night.blocked_by == ("big",)
    assert any(f"(blocked by big (contains 1.00 -> {kept:.2f}))" in line for line in progress)
    # what the composite hid is what the held-out tasks check
    assert result.baseline.hard.mean == 1.0 and result.transferred.hard.mean == 0.5
    assert result.portable[0].transferred.hard.mean == 1.0
    assert result.portability is not None and result.portability.word == MORE_PORTABLE


def test_status_report_on_the_simulator_multi_model_skill_does_not_hurt_the_large_model():
    """The harm seed small -> large: the size limits sim-small learns keep sim-large's composite validation
    score up while it drops sections; blocked per kind of check, the multi-model skill leaves sim-large whole."""
    from pytest_skilltransfer.models.registry import resolve_model

    seed = load_seed(Path(__file__).resolve().parents[2] / "seeds" / "status-report")
    small, large = resolve_model("sim-small"), resolve_model("sim-large")
    result = SeedSession(seed, ProtocolConfig(), concurrent_phases=False).transfer(small, large, None, (large,))
    family = result.portability
    assert family is not None
    assert family["single"].outcome == "hurts"
    assert family["multi"].gain.low < 0 < family["multi"].gain.high, "the multi-model skill must not hurt sim-large"
    assert family.word == MORE_PORTABLE
    nights = result.portable[0].learned.nights
    assert [n.blocked_by for n in nights] == [("sim-large",)] * 2
    assert all([c.check for c in n.validation[0].dropped_checks()] == ["section_present"] for n in nights)
    assert nights[1].validation[0].drop() < 0, "night 2's gate score rises on sim-large: only the kind shows the harm"


def test_listed_models_never_see_held_out_or_training_tasks(seed):
    source = ScriptedModel("src", owner_rule_helps, [edits("OWNER-LINE please."), edits("OWNER-SHORT please.")])
    target = ScriptedModel("tgt", owner_rule_helps)
    watcher = ScriptedModel("watcher", owner_line_hurts)
    run = session(seed, restarts=2, limit_holdout=3)
    result = run.transfer(source, target, None, (watcher,))
    assert len(result.portable) == 2 and watcher.requests
    seen = {r.messages[0].content for r in watcher.requests}
    val = {t.text for name in ("val", "val@2") for t in run.splits[name]}
    assert not seen & {t.text for t in seed.test}, "a listed model saw a held-out task"
    assert seen <= val, "a listed model saw a task outside its restart's validation split"
    assert len(val) <= 6
    assert all("# Failing criteria" not in text for text in seen), "a listed model is never the optimizer"


def test_the_source_itself_is_not_listed_twice_and_no_list_changes_nothing(seed):
    source = ScriptedModel("src", owner_rule_helps, [edits("OWNER-LINE please.")])
    target = ScriptedModel("tgt", owner_line_hurts)
    plain = session(seed).transfer(source, target)
    assert plain.portable == () and plain.portability is None
    again = session(seed).transfer(source, target, None, (source,))
    assert again.portable == ()
    assert "portable" not in result_to_json(plain)
    assert all("validation" not in n for n in result_to_json(plain)["optimization"]["source"]["nights"])


def test_json_reports_the_nights_family_and_extra_cost(seed):
    source = ScriptedModel("src", owner_rule_helps, [edits("OWNER-LINE please."), edits("OWNER-SHORT please.")])
    big = ScriptedModel("big", owner_line_hurts)
    data = result_to_json(session(seed).transfer(source, big, None, (big,)))
    portable = data["portable"]
    assert portable["validate_on"] == ["big"] and portable["tolerance"] == 0.0
    # validated on the target itself: in sample, no portability claim (the family still says more portable)
    assert portable["outcome"] == IN_SAMPLE and portable["in_sample"]
    assert portable["family"]["outcome"] == MORE_PORTABLE
    night = portable["optimization"]["nights"][0]
    assert night["validation"] == [{"model": "big", "before": 0.25, "after": 0.0,
                                    "checks": [{"check": "contains", "before": 0.0, "after": 0.0},
                                               {"check": "max_chars", "before": 1.0, "after": 0.0}],
                                    "dropped_checks": ["max_chars"]}]
    assert night["blocked_by"] == ["big"]
    names = [c["name"] for c in portable["family"]["comparisons"]]
    assert names == ["single", "multi", "multi_vs_single"]
    # the extra cost is exactly the two portable phases' calls, per model
    phases = data["cost"]["phases"]
    sent = {}
    for phase in ("optimize-portable", "portable"):
        for row in phases[phase]:
            sent[row["model"]] = sent.get(row["model"], 0) + row["calls"]
    assert {m["model"]: m["calls"] for m in portable["extra_cost"]["per_model"]} == sent
    assert portable["extra_cost"]["calls"] == sum(sent.values()) > 0


def test_a_portable_skill_equal_to_an_earlier_one_costs_nothing_more_on_the_target(seed):
    source = ScriptedModel("src", owner_rule_helps, [edits("OWNER-SHORT please.")])
    target = ScriptedModel("tgt", owner_line_hurts)
    result = session(seed).transfer(source, target, None, (target,))
    assert result.portable[0].learned.learned_skill == result.learned.learned_skill
    assert all(t.calls == 0 for t in result.phase_costs()["portable"].values())
    assert sum(t.calls for t in result.phase_costs()["optimize-portable"].values()) > 0  # the listed model's val


# -- the family ------------------------------------------------------------------------------------------


def test_intervals_and_holm_adjusted_p_agree_for_every_comparison():
    import itertools
    import random

    rng = random.Random(7)
    for _ in range(40):
        n = rng.choice([6, 12])
        base = [float(rng.random() < 0.3) for _ in range(n)]
        single = [[float(rng.random() < rng.choice([0.1, 0.5, 0.9])) for _ in range(n)]]
        multi = [[float(rng.random() < rng.choice([0.1, 0.5, 0.9])) for _ in range(n)]]
        family = portability(base, single, multi, [None] * n)
        for c in family.comparisons:
            excludes = c.gain.low > 1e-9 or c.gain.high < -1e-9
            assert excludes == (c.p_adjusted <= 0.05 + 1e-9), (c.name, c.gain, c.p_adjusted, c.level)
        assert family.word == portability_word(family["multi_vs_single"].gain.low,
                                               family["multi_vs_single"].gain.high)
    assert list(itertools.islice(holm_levels([0.001, 0.2, 0.01]), 3)) == pytest.approx([1 - 0.05 / 3, 0.95, 0.975])
    assert holm_levels([0.02, 0.02, 0.9]) == pytest.approx([1 - 0.05 / 3] * 3)  # the first step fails: all stay there


def test_outcome_words():
    assert portability_word(0.1, 0.5) == MORE_PORTABLE
    assert portability_word(-0.5, -0.1) == LESS_PORTABLE
    assert portability_word(-0.1, 0.2) == NO_DIFFERENCE


# -- seed.toml ---------------------------------------------------------------------------------------------


def test_seed_toml_validate_on_and_tolerance(seed):
    (seed.path / "seed.toml").write_text('validate_on = ["big", "mid"]\nvalidate_tolerance = 0.05\n')
    loaded = load_seed(seed.path)
    assert loaded.validate_on == ("big", "mid") and loaded.validate_tolerance == 0.05
    (seed.path / "seed.toml").write_text('validate_on = "big,mid"\n')
    assert load_seed(seed.path).validate_on == ("big", "mid")
    (seed.path / "seed.toml").write_text('validate_on = [1]\nvalidate_tolerance = 2\n')
    with pytest.raises(SeedError) as failed:
        load_seed(seed.path)
    text = str(failed.value)
    assert "seed.toml validate_on" in text and "seed.toml validate_tolerance" in text and "[0, 1]" in text
