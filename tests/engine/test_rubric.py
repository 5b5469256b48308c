"""Rubric checks: validation, the judge request, verdict parsing, majority vote, sim-judge, calibration, reflect."""

import json
from pathlib import Path

import pytest
from scripted_model import ScriptedModel

from pytest_skilltransfer.engine.judges import Attempt, NoJudgeModel, RubricVerdict, score
from pytest_skilltransfer.engine.ledger import CallCache, Meter
from pytest_skilltransfer.engine.protocol import CalibrationFailed, NoJudgeConfigured, SeedSession
from pytest_skilltransfer.engine.results import ProtocolConfig
from pytest_skilltransfer.engine.rubric import (
    VERDICT_TOOL,
    CalibrationItem,
    JudgeSetup,
    RubricJudge,
    calibrate,
    family_warning,
    judge_request,
    majority,
    parse_verdict,
)
from pytest_skilltransfer.engine.seeds import load_seed
from pytest_skilltransfer.engine.seed_data import SeedError
from pytest_skilltransfer.models.base import Reply, Request, ToolCall
from pytest_skilltransfer.models.registry import resolve_model
from pytest_skilltransfer.models.sim.judge import read
from pytest_skilltransfer.evidence.item_record import ItemRecord
from pytest_skilltransfer.reports.judge_report import adverse, uncertain_count

CAUSE = 'Names the root cause of the incident (a "Root cause" line counts).'
RUBRIC = {"kind": "rule", "checks": [{"op": "no_refusal"}, {"op": "rubric", "arg": CAUSE}]}


def write_seed(root: Path, judge=RUBRIC, toml: str | None = None, calibration: list[dict] | None = None,
               held_out: int = 4) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "SKILL.md").write_text("# Postmortem\nTell what happened.\n")
    line = lambda i, p: json.dumps({"task_id": f"{p}-{i:02d}", "task": f"Summarize incident {i}", "judge": judge})
    (root / "benchmark.jsonl").write_text("\n".join(line(i, "bm") for i in range(8)) + "\n")
    (root / "held-out.jsonl").write_text("\n".join(line(i, "hd") for i in range(held_out)) + "\n")
    if toml is not None:
        (root / "seed.toml").write_text(toml)
    if calibration is not None:
        (root / "judge-calibration.jsonl").write_text("\n".join(json.dumps(c) for c in calibration) + "\n")
    return root


def problems(path: Path) -> str:
    with pytest.raises(SeedError) as info:
        load_seed(path)
    return "\n".join(str(p) for p in info.value.problems)


# -- format and validation -----------------------------------------------------------------------


def test_rubric_checks_mix_with_rule_checks_and_a_task_level_rubric_judge_loads(tmp_path):
    seed = load_seed(write_seed(tmp_path / "mixed"))
    assert [c.op for c in seed.test[0].judge.checks] == ["no_refusal", "rubric"]
    assert seed.rubric_origin is not None and seed.rubric_origin.endswith(".jsonl:1")
    task_level = {"kind": "rubric", "criteria": [CAUSE, "Says who was affected."]}
    seed = load_seed(write_seed(tmp_path / "criteria", judge=task_level))
    assert [(c.op, c.arg) for c in seed.test[0].judge.checks] == [("rubric", CAUSE), ("rubric", "Says who was affected.")]


def test_empty_criteria_and_unknown_fields_are_refused_with_file_and_line(tmp_path):
    root = write_seed(tmp_path / "bad", judge={"kind": "rule", "checks": [{"op": "rubric", "arg": "  "}]})
    assert "benchmark.jsonl:1: task 'bm-00': check 1: rubric needs a criterion" in problems(root)
    root = write_seed(tmp_path / "extra", judge={"kind": "rule", "checks": [{"op": "rubric", "arg": CAUSE, "weight": 2}]})
    assert "unknown field(s) 'weight' in a check; a check has only 'op' and 'arg'" in problems(root)
    root = write_seed(tmp_path / "kind", judge={"kind": "rubric", "criteria": [], "model": "x"})
    assert "unknown field(s) 'model' in a rubric judge" in problems(root)
    root = write_seed(tmp_path / "none", judge={"kind": "rubric", "criteria": []})
    assert "rubric judge needs 'criteria'" in problems(root)


def test_judge_table_and_calibration_file_are_validated(tmp_path):
    root = write_seed(tmp_path / "t", toml='[judge]\nmodel = ""\nsamples = 0\nmin_accuracy = 2\nvotes = 3\n',
                      calibration=[{"answer": "a", "criterion": "c", "expected": "maybe"},
                                   {"answer": "", "criterion": "c", "expected": "pass"},
                                   {"answer": "a", "criterion": "c"},
                                   {"answer": "a", "criterion": "c", "expected": "pass", "score": 1}])
    text = problems(root)
    for expected in ("[judge]: 'model' must be a model name", "'samples' must be a positive integer",
                     "'min_accuracy' must be a number within [0, 1]", "unknown key 'votes'",
                     "judge-calibration.jsonl:1: 'expected' must be \"pass\" or \"fail\"",
                     "judge-calibration.jsonl:2: answer must be a non-empty string",
                     "judge-calibration.jsonl:3: missing field(s): expected",
                     "judge-calibration.jsonl:4: unknown field(s): score"):
        assert expected in text
    seed = load_seed(write_seed(tmp_path / "ok", toml='[judge]\nmodel = "sim-judge"\nsamples = 3\nmin_accuracy = 0.9\n',
                                calibration=[{"answer": "a", "criterion": "c", "expected": "fail", "task": "t"}]))
    assert (seed.judge.model, seed.judge.samples, seed.judge.min_accuracy) == ("sim-judge", 3, 0.9)
    assert seed.calibration[0].expected is False and seed.calibration[0].origin.endswith("judge-calibration.jsonl:1")


def test_a_rubric_seed_without_a_judge_is_an_error_naming_the_seed_and_the_option(tmp_path):
    seed = load_seed(write_seed(tmp_path / "postmortem"))
    with pytest.raises(NoJudgeConfigured, match=r"seed 'postmortem' has rubric checks .*benchmark.jsonl:\d+.* --judge MODEL"):
        SeedSession(seed, ProtocolConfig())
    with pytest.raises(NoJudgeModel):
        score(seed.test[0].judge, Attempt("text"))


# -- the judge request and its verdict -----------------------------------------------------------


def test_the_judge_request_holds_only_the_task_the_answer_and_the_criterion():
    request = judge_request("Summarize incident 3", "It broke.", CAUSE, sample_id=2)
    assert request.messages[0].content == f"# Task\nSummarize incident 3\n\n# Answer\nIt broke.\n\n# Criterion\n{CAUSE}\n"
    assert request.sample_id == 2 and request.response_schema.name == VERDICT_TOOL
    assert request.response_schema.schema["required"] == ["verdict", "reason"]
    plain = Request(system="s", messages=request.messages)
    assert "response_schema" not in plain.canonical()  # other requests keep their cache keys


@pytest.mark.parametrize("reply, expected", [
    (Reply("", tool_calls=(ToolCall("t1", VERDICT_TOOL, {"verdict": "pass", "reason": "names it"}),)), (True, "names it")),
    (Reply('```json\n{"verdict": "FAIL", "reason": "no cause\\n given"}\n```'), (False, "no cause given")),
    (Reply('Sure. {"note": 1} then {"verdict": "pass", "reason": "ok"}'), (True, "ok")),
    (Reply("Fail: the answer only lists events."), (False, "the answer only lists events.")),
    (Reply("PASS"), (True, "")),
])
def test_verdicts_parse_from_tool_calls_json_or_a_leading_word(reply, expected):
    assert parse_verdict(reply) == expected


class ScriptedJudge:
    """A judge whose replies are scripted per call, in order."""

    model_id = name = "scripted-judge"

    def __init__(self, *texts: str):
        self.texts = list(texts)
        self.requests: list[Request] = []

    def complete(self, request: Request) -> Reply:
        self.requests.append(request)
        return Reply(self.texts.pop(0))


def test_an_unusable_reply_is_retried_once_then_counts_as_a_judge_error_not_a_pass():
    judge = ScriptedJudge("hmm", '{"verdict": "pass", "reason": "ok"}', "no idea", "still no idea")
    meter = Meter()
    rubric = RubricJudge(JudgeSetup(judge, samples=2), CallCache())
    verdict = rubric.verdict("t", "a", CAUSE, meter)
    assert verdict.votes == ("pass", "error") and not verdict.passed and verdict.errors == 1 and verdict.uncertain
    assert "Reply with ONLY the JSON object" in judge.requests[1].messages[-1].content
    assert meter.snapshot()[("scripted-judge", "judge")].calls == 4


def test_majority_needs_more_than_half_and_agreement_measures_the_majority_share():
    assert majority(("pass", "pass", "fail")) and not majority(("pass", "fail")) and not majority(("pass", "error", "error"))
    verdict = RubricVerdict(CAUSE, True, "r", ("pass", "pass", "fail"))
    assert verdict.agreement == pytest.approx(2 / 3) and verdict.unstable
    assert RubricVerdict(CAUSE, True, "r", ("pass",)).agreement is None


def test_judge_calls_go_through_the_call_cache_under_the_judge_role():
    judge = resolve_model("sim-judge")
    cache, meter = CallCache(), Meter()
    rubric = RubricJudge(JudgeSetup(judge, samples=3), cache)
    first = rubric.verdict("t", "Root cause: a bad push.", CAUSE, meter)
    again = rubric.verdict("t", "Root cause: a bad push.", CAUSE, meter)
    assert first == again and first.passed
    tally = meter.snapshot()[("sim-judge", "judge")]
    assert (tally.calls, tally.cached) == (3, 3)


# -- sim-judge ------------------------------------------------------------------------------------


def test_sim_judge_reads_concepts_synonyms_quotes_and_negations():
    assert read(CAUSE, "It was caused by a bad push.").passed
    assert read(CAUSE, "Root cause: expired token").passed
    assert not read(CAUSE, "At 9:00 it broke; at 9:40 it was fixed.").passed
    assert read('Ends with a "Next review" line.', "Next review: Monday").passed
    assert read("Never names a root cause.", "It just broke.").passed
    assert read(CAUSE, "x").vagueness < read("Names the root cause.", "x").vagueness < read("Is clear and helpful.", "x").vagueness


def test_sim_judge_is_deterministic_and_errs_more_often_on_vague_criteria():
    judge = resolve_model("sim-judge")

    def disagreement(criterion: str, answer: str) -> float:
        honest = read(criterion, answer).passed
        replies = [json.loads(judge.complete(judge_request("t", f"{answer} ({i})", criterion, s)).text)
                   for i in range(60) for s in range(3)]
        return sum((r["verdict"] == "pass") != honest for r in replies) / len(replies)

    concrete = disagreement(CAUSE, "Root cause: a bad push.")
    vague = disagreement("The summary is clear and helpful.", "Root cause: a bad push.")
    assert concrete < 0.05 < 0.2 < vague
    request = judge_request("t", "a", CAUSE)
    assert judge.complete(request) == judge.complete(request)
    assert "only grade" in judge.complete(Request(system="", messages=request.messages[:0])).text


# -- calibration ----------------------------------------------------------------------------------


def test_calibration_reports_accuracy_with_an_interval_and_the_disagreements():
    items = (CalibrationItem("Root cause: a bad push.", CAUSE, True, origin="cal:1"),
             CalibrationItem("It broke at nine.", CAUSE, False, origin="cal:2"),
             CalibrationItem("It broke at nine.", CAUSE, True, origin="cal:3"))
    result = calibrate(RubricJudge(JudgeSetup(resolve_model("sim-judge"), 1, 0.9), CallCache()), items, Meter())
    assert (result.correct, result.n, result.passed) == (2, 3, False)
    message = result.failure_message("postmortem")
    assert "judge calibration failed for seed 'postmortem': accuracy sim-judge: 2/3 = 0.67 [" in message
    assert "cal:3: expected pass, judge said fail" in message and "answer: It broke at nine." in message


def test_a_miscalibrated_judge_fails_the_seed_before_any_agent_call(tmp_path):
    calibration = [{"answer": "It broke at nine.", "criterion": CAUSE, "expected": "pass"}] * 2
    seed = load_seed(write_seed(tmp_path / "postmortem", calibration=calibration))
    agent = ScriptedModel("agent", lambda skill, task, sample: "It broke.")
    session = SeedSession(seed, ProtocolConfig(nights=1), judge=JudgeSetup(resolve_model("sim-judge"), 1, 0.8))
    with pytest.raises(CalibrationFailed, match="judge calibration failed for seed 'postmortem'"):
        session.transfer(agent, agent)
    assert agent.requests == []


# -- the protocol with a judge --------------------------------------------------------------------


def test_the_optimizer_sees_judge_reasons_for_failed_training_checks_only(tmp_path):
    seed = load_seed(write_seed(tmp_path / "postmortem"))
    answers = lambda skill, task, sample: "Root cause: a bad push." if "ROOT-CAUSE" in skill else "It broke at nine."
    agent = ScriptedModel("agent", answers, reflections=[json.dumps([{"op": "add", "content": "ROOT-CAUSE: end with it."}])])
    session = SeedSession(seed, ProtocolConfig(nights=2, limit_replay=0, limit_holdout=0, direct=False),
                          judge=JudgeSetup(resolve_model("sim-judge"), 1))
    result = session.transfer(agent, agent)
    prompt = agent.reflect_prompts()[0]
    assert '(check: rubric "Names the root cause' in prompt
    assert f'Judge\'s reason for "{CAUSE}": the answer never gives the root cause' in prompt
    train_ids = {t.id for t in session.splits["train"]}
    shown = {line.removeprefix("## Task ") for line in prompt.splitlines() if line.startswith("## Task ")}
    assert shown <= train_ids
    assert result.baseline.hard.mean == 0.0 and result.transferred.hard.mean == 1.0
    assert ("sim-judge", "judge") in result.phase_costs()["baseline"]
    assert all(s.rubric and s.rubric[0].criterion == CAUSE for t in result.transferred.tasks for s in t.samples)


def test_family_warning_names_the_shared_provider():
    judge = resolve_model("anthropic:judge-x@http://127.0.0.1:9")
    graded = [resolve_model("anthropic:agent-y@http://127.0.0.1:9"), resolve_model("sim-small")]
    warning = family_warning(judge, graded)
    assert warning and "shares the provider family 'anthropic' with agent-y" in warning
    assert family_warning(resolve_model("sim-judge"), graded) is None


def test_gates_do_not_pass_on_uncertain_verdicts():
    unstable = {"criterion": CAUSE, "passed": True, "reason": "", "votes": ["pass", "pass", "fail"], "unstable": True}
    sample = lambda hard, rubric: {"sample_id": 0, "hard": hard, "soft": hard, "failed": [] if hard else [f"rubric={CAUSE}"],
                                   "rubric": rubric}
    firm_fail = {**unstable, "passed": False, "votes": ["fail"] * 3, "unstable": False}
    score = {"mean": 0.0, "ci_low": 0.0, "ci_high": 1.0, "n": 2}
    steady = {**unstable, "unstable": False, "votes": ["pass"] * 3}
    result = ItemRecord.from_json({
        "seed": "s", "source": "a", "target": "b", "baseline_target": 0.0, "transferred": 1.0,
        "gain": {**score, "p_value": 1.0}, "judge": {"model": "sim-judge"}, "direct_target": None,
        "scores": {"baseline": {"hard": score, "soft": score,
                                "tasks": [{"task_id": f"t{i}", "samples": [sample(0.0, [firm_fail])]} for i in (0, 1)]},
                   "transferred": {"hard": score, "soft": score,
                                   "tasks": [{"task_id": "t0", "samples": [sample(1.0, [unstable])]},
                                             {"task_id": "t1", "samples": [sample(1.0, [steady])]}]},
                   "direct": None},
    })
    assert uncertain_count(result) == 1
    worst = adverse(result)
    assert worst.transferred == 0.5 and worst.gain.mean == 0.5 and worst.judge is None


class SplitJudge:
    """Passes an answer with an Owner line on two of three samples (unstable), fails the others firmly."""

    model_id = name = "split-judge"

    def complete(self, request: Request) -> Reply:
        answer = request.messages[0].content.split("# Answer\n", 1)[1].split("\n\n# Criterion", 1)[0]
        passed = "Owner:" in answer and request.sample_id != 2
        return Reply(json.dumps({"verdict": "pass" if passed else "fail", "reason": "scripted"}))


def test_a_gate_that_passes_only_on_unstable_verdicts_is_inconclusive(tmp_path):
    from pytest_skilltransfer.engine.seed_data import Thresholds
    from pytest_skilltransfer.plugin import gating
    from pytest_skilltransfer.reports.result_json import result_to_json

    seed = load_seed(write_seed(tmp_path / "owners", judge={"kind": "rule", "checks": [
        {"op": "rubric", "arg": 'Names an owner (an "Owner" line counts).'}]}, held_out=12))
    answers = lambda skill, task, sample: "Owner: @team" if "OWNER" in skill else "Routed."
    agent = ScriptedModel("agent", answers, reflections=[json.dumps([{"op": "add", "content": "OWNER: name one."}])] * 2)
    session = SeedSession(seed, ProtocolConfig(nights=1, limit_replay=0, limit_holdout=0, direct=False, design="fixed"),
                          judge=JudgeSetup(SplitJudge(), samples=3))
    data = result_to_json(session.transfer(agent, agent))
    assert data["transferred"] == 1.0 and data["judge"]["agreement"] == pytest.approx(0.833, abs=0.001)
    assert len(data["judge"]["unstable"]) == 12  # the transferred answers: pass/pass/fail
    outcome = gating.evaluate(ItemRecord.from_json(data), Thresholds(min_score=0.5))
    assert outcome.verdict == "inconclusive" and not outcome.passed
    assert outcome.inconclusive[-1].startswith("the pass rests on 12 uncertain rubric verdict(s)")
    assert "raise --judge-samples" in outcome.inconclusive[-1]
    steady = {**data, "judge": None}  # without a judge section nothing is uncertain: the gate passes
    assert gating.evaluate(ItemRecord.from_json(steady), Thresholds(min_score=0.5)).verdict == "pass"
