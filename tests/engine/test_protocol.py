"""The protocol with a scripted model: gate, rejected-edit memory, early stop, caching, samples, stats."""

import re
from pathlib import Path

import pytest
from scripted_model import ScriptedModel, edits, router_seed

from pytest_skilltransfer.engine.protocol import SeedSession, capped
from pytest_skilltransfer.engine.results import ProtocolConfig
from pytest_skilltransfer.models.base import ModelCallError

CHECKS = {"kind": "rule", "checks": [{"op": "contains", "arg": "Owner:"}, {"op": "max_chars", "arg": 60}]}


@pytest.fixture
def seed(tmp_path: Path):
    return router_seed(tmp_path / "router", CHECKS)


def obeys_owner_rule(skill: str, task: str, sample: int) -> str:
    """Writes the Owner line only when the skill says so; a rule to elaborate makes it too long."""
    text = f"Routed: {task[-2:]}."
    if "OWNER-LINE" in skill:
        text += " Owner: @infra"
    if "ELABORATE" in skill:
        text += " " + "details " * 10
    return text


def session(seed, concurrent_phases=True, **config):
    return SeedSession(seed, ProtocolConfig(**{"limit_replay": 0, "limit_holdout": 0, **config}),
                       concurrent_phases=concurrent_phases)


def test_improving_edit_is_accepted_and_transfers(seed):
    source = ScriptedModel("src", obeys_owner_rule, [edits("OWNER-LINE: end with `Owner: @team`.")])
    target = ScriptedModel("tgt", obeys_owner_rule)
    result = session(seed, direct=False, design="fixed").transfer(source, target)
    assert result.baseline.hard.mean == 0.0
    assert result.transferred.hard.mean == 1.0
    assert result.gain.mean == 1.0 and result.gain.improved == 6 and result.gain.p_value == pytest.approx(1 / 32)
    assert 0 < result.gain.low < 1.0 == result.gain.high  # six tasks: exact interval, not a degenerate [1, 1]
    night = result.learned.nights[0]
    assert night.accepted and night.val_before == 0.25 and night.val_after == 1.0
    assert "OWNER-LINE" in result.learned.learned_skill
    assert len(result.learned.nights) == 1, "stops once validation is perfect"


def test_harmful_batch_is_rejected_and_shown_to_next_reflect(seed):
    source = ScriptedModel("src", obeys_owner_rule, [edits("ELABORATE on every point."), edits("OWNER-LINE please.")])
    result = session(seed, direct=False).transfer(source, ScriptedModel("tgt", obeys_owner_rule))
    first, second = result.learned.nights
    assert not first.accepted and first.val_after == 0.0
    assert second.accepted
    assert "ELABORATE" not in result.learned.learned_skill
    prompts = source.reflect_prompts()
    assert "(none)" in prompts[0].split("# Edits already tried and rejected by validation")[1]
    assert 'add "ELABORATE on every point." (validation 0.25 -> 0.00)' in prompts[1]


def test_ties_are_rejected(seed):
    source = ScriptedModel("src", obeys_owner_rule, [edits("Be helpful."), edits("Be accurate.")])
    result = session(seed, direct=False).transfer(source, ScriptedModel("tgt", obeys_owner_rule))
    assert [n.accepted for n in result.learned.nights] == [False, False]
    assert result.learned.learned_skill == seed.skill


def test_unparseable_reflection_is_retried_once(seed):
    source = ScriptedModel("src", obeys_owner_rule, ["I think an owner line would help.", edits("OWNER-LINE now.")])
    result = session(seed, direct=False, nights=1).transfer(source, ScriptedModel("tgt", obeys_owner_rule))
    assert result.learned.nights[0].accepted and result.learned.nights[0].note == "optimizer reply parsed on retry"


def test_direct_reference_and_efficiency(seed):
    source = ScriptedModel("src", obeys_owner_rule, [edits("Be helpful."), edits("Be kind.")])
    target = ScriptedModel("tgt", obeys_owner_rule, [edits("OWNER-LINE rule.")])
    result = session(seed).transfer(source, target)
    assert result.direct is not None and result.direct.hard.mean == 1.0
    assert result.transferred.hard.mean == 0.0 and result.headroom.mean == 1.0
    # six tasks cannot bound the headroom above 0 at the ratio's joint level, so efficiency stays undefined
    assert result.efficiency is None and result.efficiency_estimate is None
    assert set(result.phase_costs()) == {"baseline", "optimize-source", "transferred", "optimize-direct", "direct"}


def test_no_request_is_sent_twice(seed):
    source = ScriptedModel("src", obeys_owner_rule, [edits("OWNER-LINE rule.")])
    target = ScriptedModel("tgt", obeys_owner_rule)
    run = session(seed, samples=2, direct=False)
    run.transfer(source, target)
    run.transfer(source, target)
    for model in (source, target):
        keys = [r.key(model.model_id) for r in model.requests]
        assert len(keys) == len(set(keys))
    assert {r.sample_id for r in target.requests} == {0, 1}


def test_samples_give_distinct_rollouts_and_task_means(seed):
    noisy = lambda skill, task, sample: "Owner: @x" if sample % 2 else "no"
    result = session(seed, samples=4, direct=False, nights=1).transfer(
        ScriptedModel("src", noisy), ScriptedModel("tgt", noisy))
    assert all(len(t.samples) == 4 for t in result.baseline.tasks)
    assert result.baseline.hard.mean == 0.5 and result.baseline.hard.low < 0.5 < result.baseline.hard.high
    assert result.baseline.hard is result.baseline.hard, "statistics are computed once per evaluation"


def test_call_errors_propagate(seed):
    class Broken(ScriptedModel):
        def complete(self, request):
            raise ModelCallError("provider down")
    run = session(seed)
    with pytest.raises(ModelCallError, match="provider down"):
        run.transfer(Broken("b", obeys_owner_rule), Broken("b", obeys_owner_rule))
    assert run.phase == "baseline", "the failing phase is named for error messages"


def test_caps_take_a_seeded_sample_in_file_order(seed):
    chosen = capped(seed.test, 3, 42)
    assert len(chosen) == 3 and [t.id for t in chosen] == sorted(t.id for t in chosen)
    assert chosen != seed.test[:3] or capped(seed.test, 3, 7) != chosen
    assert capped(seed.test, 0, 42) == seed.test


def test_bad_config_is_refused(seed):
    with pytest.raises(ValueError, match="samples must be at least 1"):
        SeedSession(seed, ProtocolConfig(samples=0))


def test_restart_one_is_the_optimization_without_restarts(seed):
    reply = edits("OWNER-LINE: end with `Owner: @team`.")
    single = session(seed, direct=False).transfer(ScriptedModel("src", obeys_owner_rule, [reply]),
                                                 ScriptedModel("tgt", obeys_owner_rule))
    source = ScriptedModel("src", obeys_owner_rule, [reply, edits("Be brief."), edits("Be kind.")])
    # the scripted optimizer answers in call order, so the restarts run one after another here
    many = session(seed, direct=False, restarts=3, concurrent_phases=False).transfer(source, ScriptedModel("tgt", obeys_owner_rule))
    assert many.learned == single.learned and many.transferred == single.transferred
    assert [run.split_seed for run in many.runs] == [42, 43, 44]
    reflections = [r for r in source.requests if "# Failing criteria" in r.messages[0].content]
    assert [r.sample_id for r in reflections] == [1, 1001, 1002, 2001, 2002]  # restart r: night + 1000 (r - 1)
    assert [run.learned.learned_skill == single.learned.learned_skill for run in many.runs] == [True, False, False]
    assert many.gain.restart_gains == (1.0, 0.0, 0.0) and many.gain.mean == pytest.approx(1 / 3)


def test_restarts_split_train_and_val_afresh_and_send_no_request_twice(seed):
    source = ScriptedModel("src", obeys_owner_rule, [edits("OWNER-LINE now.")] * 4)
    target = ScriptedModel("tgt", obeys_owner_rule)
    run = session(seed, restarts=4, direct=False)
    run.transfer(source, target)
    splits = {name: {t.id for t in tasks} for name, tasks in run.splits.items()}
    pool = {t.id for t in seed.train + seed.val}
    assert splits["train"] | splits["val"] == splits["train@3"] | splits["val@3"] == pool
    assert len({frozenset(splits[name]) for name in ("val", "val@2", "val@3", "val@4")}) > 1
    for model in (source, target):
        keys = [r.key(model.model_id) for r in model.requests]
        assert len(keys) == len(set(keys))


def test_min_delta_keeps_only_edits_that_improve_val_enough(seed):
    def half(skill: str, task: str, sample: int) -> str:  # the rule helps on even-numbered tasks only
        number = int(re.search(r"ticket (\d+)", task).group(1))
        return "Owner: @x" if "OWNER-LINE" in skill and number % 2 == 0 else "no"

    kept = session(seed, direct=False, nights=1).transfer(ScriptedModel("src", half, [edits("OWNER-LINE.")]),
                                                          ScriptedModel("tgt", half))
    assert kept.learned.nights[0].accepted
    improvement = kept.learned.nights[0].val_after - kept.learned.nights[0].val_before
    strict = session(seed, direct=False, nights=1, min_delta=improvement + 0.01).transfer(
        ScriptedModel("src", half, [edits("OWNER-LINE.")]), ScriptedModel("tgt", half))
    assert not strict.learned.nights[0].accepted and "OWNER-LINE" not in strict.learned.learned_skill
    with pytest.raises(ValueError, match="min_delta must be within"):
        session(seed, min_delta=2.0)
