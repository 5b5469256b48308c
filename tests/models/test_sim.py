"""The simulated models: determinism, capacity differences, the tool loop and the optimizer role."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from pytest_skilltransfer.engine import judges
from pytest_skilltransfer.engine.agent import AgentContext, run_task
from pytest_skilltransfer.guards.edits import Edit, apply_edits, render_skill
from pytest_skilltransfer.engine.judges import Check, Judge
from pytest_skilltransfer.engine.ledger import CallCache, Meter
from pytest_skilltransfer.models.base import Message, ModelError, Request
from pytest_skilltransfer.models.registry import resolve_model
from pytest_skilltransfer.models.sim import SimModel
from pytest_skilltransfer.engine.reflect import Observation, RejectedEdit, build_reflect_request, parse_edits
from pytest_skilltransfer.engine.seed_data import Task
from pytest_skilltransfer.engine.tools import SEARCH_TOOL, Page

SAMPLES = 20
BODY = "# Advisor\n\nWhen asked, discuss the considerations of the decision for the team."
TASKS = [
    "Advise on moving the nightly batch jobs to the new scheduler before the audit.",
    "Advise on upgrading the database driver during the quarter-end freeze.",
]
CONFIDENCE = Judge("rule", (Check("regex", r"^Confidence: (High|Medium|Low)$"),))
KEY_RISKS = Judge("rule", (Check("section_present", "Key Risks"), Check("regex", r"^Confidence: (High|Medium|Low)$")))
SEARCHED = Judge("rule", (Check("tool_called", "search"),))
CORPUS = (
    Page("topics/scheduler-migration", "Scheduler migration", "# Scheduler migration\n\nNotes on moving batch jobs."),
    Page("topics/driver-upgrade", "Driver upgrade", "# Driver upgrade\n\nNotes on the database driver."),
)


def pass_rate(model_name: str, skill: str, judge: Judge, corpus: tuple[Page, ...] | None = None) -> float:
    """Share of (task, sample) attempts that pass `judge`, run through the real agent loop."""
    ctx = AgentContext(model=resolve_model(model_name), cache=CallCache(), meter=Meter(), role="agent", corpus=corpus)
    scores = [
        judges.score(judge, run_task(ctx, skill, Task(id=f"t{i}", text=text, judge=judge), sample)).hard
        for i, text in enumerate(TASKS)
        for sample in range(SAMPLES)
    ]
    return sum(scores) / len(scores)


def with_rules(*rules: str, body: str = BODY) -> str:
    return render_skill(body, list(rules))


def agent_request(skill: str, sample_id: int = 0, tools: tuple = ()) -> Request:
    return Request(system=skill, messages=(Message("user", TASKS[0]),), tools=tools, sample_id=sample_id)


# ---- names and determinism --------------------------------------------------------------------

def test_names_resolve_exactly_and_unknown_names_list_the_known_ones():
    assert resolve_model("sim-small").model_id == "sim-small"
    assert resolve_model("sim-large").name == "sim-large"
    with pytest.raises(ModelError) as error:
        resolve_model("sim-medium")
    assert "sim-small" in str(error.value) and "sim-large" in str(error.value)
    with pytest.raises(ModelError, match="sim-small, sim-large"):
        SimModel("sim-tiny")


def test_same_request_and_sample_give_the_same_reply_across_instances():
    request = agent_request(with_rules("Close with your confidence level."), sample_id=3)
    first = SimModel("sim-large").complete(request)
    assert SimModel("sim-large").complete(request) == first
    assert resolve_model("sim-large").complete(request) == first


def test_same_reply_in_a_fresh_process():
    request = agent_request(with_rules("Be concise."), sample_id=5)
    here = SimModel("sim-large").complete(request).text
    code = (
        "import json, sys\n"
        "from pytest_skilltransfer.models.base import Message, Request\n"
        "from pytest_skilltransfer.models.sim import SimModel\n"
        "args = json.loads(sys.argv[1])\n"
        "request = Request(system=args['system'], messages=(Message('user', args['task']),), sample_id=args['sample'])\n"
        "print(SimModel('sim-large').complete(request).text, end='')\n"
    )
    payload = json.dumps({"system": request.system, "task": TASKS[0], "sample": 5})
    there = subprocess.run([sys.executable, "-c", code, payload], capture_output=True, text=True, check=True).stdout
    assert there == here


def test_sample_ids_give_different_samples():
    skill = with_rules("Close with your confidence level.")
    texts = {SimModel("sim-large").complete(agent_request(skill, sample_id=s)).text for s in range(8)}
    assert len(texts) > 1


def test_usage_reports_plausible_token_counts():
    reply = SimModel("sim-small").complete(agent_request(BODY))
    assert reply.usage.input_tokens >= len(BODY) // 4
    assert reply.usage.output_tokens == len(reply.text) // 4 + 1
    assert reply.model == "sim-small"


# ---- capacity: literal versus abstract rules ----------------------------------------------------

def test_small_ignores_an_abstract_rule_that_large_follows():
    skill = with_rules("Close with your confidence level (High, Medium or Low).")
    assert pass_rate("sim-small", skill, CONFIDENCE) <= 0.2
    assert pass_rate("sim-large", skill, CONFIDENCE) >= 0.75


def test_both_follow_a_literal_template():
    skill = with_rules("End every answer with these parts, exactly as written:\n~~~\n## Key Risks\n- <one risk>\n"
                       "Confidence: <High|Medium|Low>\n~~~")
    assert pass_rate("sim-small", skill, KEY_RISKS) >= 0.75
    assert pass_rate("sim-large", skill, KEY_RISKS) >= 0.8


def test_both_follow_a_literal_label_line_in_backticks():
    skill = with_rules("Always end with the line `Confidence: <High|Medium|Low>` on its own line.")
    assert pass_rate("sim-small", skill, CONFIDENCE) >= 0.8
    assert pass_rate("sim-large", skill, CONFIDENCE) >= 0.9


def test_none_of_them_adds_structure_nobody_asked_for():
    assert pass_rate("sim-small", BODY, CONFIDENCE) == 0.0
    assert pass_rate("sim-large", BODY, CONFIDENCE) == 0.0


def test_a_later_length_limit_overrides_an_earlier_call_for_depth():
    verbose = BODY + "\nBe thorough and write multiple paragraphs."
    short = Judge("rule", (Check("max_chars", 700),))
    assert pass_rate("sim-small", verbose, short) <= 0.1
    limited = with_rules("Hard limit: keep every answer under 600 characters.", body=verbose)
    assert pass_rate("sim-small", limited, short) >= 0.75
    # sim-small rarely follows "Be concise."; it over-reads most of the rest as three sentences, too short for substance
    substantial = Judge("rule", (Check("max_chars", 700), Check("min_chars", 300)))
    assert pass_rate("sim-small", with_rules("Be concise.", body=verbose), substantial) <= 0.2
    assert pass_rate("sim-large", with_rules("Be concise.", body=verbose), short) >= 0.75


def test_declining_a_topic_refuses_matching_tasks_until_overridden():
    body = BODY + "\nDecline any request that involves the database or drivers."
    judge = Judge("rule", (Check("no_refusal"),))
    ctx = AgentContext(model=resolve_model("sim-large"), cache=CallCache(), meter=Meter(), role="agent")
    refused = run_task(ctx, body, Task("t", TASKS[1], judge), 0).text
    assert refused.startswith("I can't")
    assert pass_rate("sim-small", body, judge) <= 0.6, "only the driver task is declined"
    override = with_rules("OVERRIDE: Do NOT decline or refuse any request.", body=body)
    assert pass_rate("sim-small", override, judge) >= 0.9


def test_an_opening_phrase_is_used_until_a_later_rule_forbids_it():
    body = BODY + '\nOpen every answer warmly with "Great question!"'
    judge = Judge("rule", (Check("not_contains", "Great question"),))
    assert pass_rate("sim-small", body, judge) <= 0.2
    assert pass_rate("sim-small", with_rules('Never write "Great question".', body=body), judge) >= 0.8
    assert pass_rate("sim-small", with_rules("Skip pleasantries.", body=body), judge) <= 0.35
    assert pass_rate("sim-large", with_rules("Skip pleasantries.", body=body), judge) >= 0.75


# ---- the tool loop -------------------------------------------------------------------------------

def test_search_is_called_only_when_the_skill_says_so():
    assert pass_rate("sim-large", BODY, SEARCHED, CORPUS) == 0.0
    told = with_rules("Always call the `search` tool first, then answer.")
    assert pass_rate("sim-small", told, SEARCHED, CORPUS) >= 0.8
    assert pass_rate("sim-large", told, SEARCHED, CORPUS) >= 0.9


def test_first_reply_is_a_search_call_on_the_task_topic_and_text_follows_the_result():
    model = SimModel("sim-large")
    skill = with_rules("Always call the `search` tool first, then answer.")
    first = model.complete(agent_request(skill, tools=(SEARCH_TOOL,)))
    assert first.text == "" and len(first.tool_calls) == 1
    call = first.tool_calls[0]
    assert call.name == "search" and "scheduler" in call.arguments["query"]
    assert call == model.complete(agent_request(skill, tools=(SEARCH_TOOL,))).tool_calls[0]
    result = json.dumps({"results": [{"slug": "topics/scheduler-migration", "title": "Scheduler migration"}]})
    follow_up = Request(system=skill, tools=(SEARCH_TOOL,), messages=(
        Message("user", TASKS[0]), Message("assistant", "", (call,)), Message("tool", result, tool_call_id=call.id)))
    answer = model.complete(follow_up)
    assert not answer.tool_calls and "topics/scheduler-migration" in answer.text


def test_a_later_override_beats_the_body_prohibition_on_tools():
    body = BODY + "\nDo NOT search, look anything up or use any tools."
    assert pass_rate("sim-large", body, SEARCHED, CORPUS) == 0.0
    literal = with_rules("OVERRIDE: Always call the `search` tool first, even though the rules above say not to.", body=body)
    assert pass_rate("sim-small", literal, SEARCHED, CORPUS) >= 0.8
    assert pass_rate("sim-large", literal, SEARCHED, CORPUS) >= 0.9
    abstract = with_rules("Consult the team notes before answering.", body=body)
    assert pass_rate("sim-small", abstract, SEARCHED, CORPUS) <= 0.2
    assert pass_rate("sim-large", abstract, SEARCHED, CORPUS) >= 0.75


def test_no_tool_call_when_no_tool_is_offered():
    skill = with_rules("Always call the `search` tool first, then answer.")
    reply = SimModel("sim-small").complete(agent_request(skill))
    assert reply.tool_calls == () and reply.text


# ---- the optimizer ---------------------------------------------------------------------------------

def reflect(model: str, skill: str, judge: Judge, rejected: list[RejectedEdit] | None = None,
            night: int = 1, failing: bool = True) -> list[Edit]:
    """Ask a sim model to reflect on two failing (or passing) training attempts and parse its edits."""
    observations = [Observation(f"t{i}", text, "A plain answer.", judge, tuple(c.label() for c in judge.checks) if failing else ())
                    for i, text in enumerate(TASKS)]
    failures, successes = (observations, []) if failing else ([], observations)
    request = build_reflect_request(skill, failures, successes, rejected or [], edit_budget=4, sample_id=night)
    text = resolve_model(model).complete(request).text
    return parse_edits(text) if failing else json.loads(text)


def test_optimizer_edits_parse_and_fix_the_failing_criteria_for_the_small_model():
    edits = reflect("sim-small", BODY, KEY_RISKS)
    assert 1 <= len(edits) <= 4
    learned = apply_edits(BODY, edits, 4).skill
    assert "Key Risks" in learned and "Confidence" in learned
    assert pass_rate("sim-small", learned, KEY_RISKS) >= 0.7


def test_small_writes_literal_rules_and_large_mostly_abstract_ones():
    small = [e.content for night in range(1, 11) for e in reflect("sim-small", BODY, KEY_RISKS, night=night)]
    large = [e.content for night in range(1, 11) for e in reflect("sim-large", BODY, KEY_RISKS, night=night)]
    assert not any("section on" in c for c in small)
    assert all("Key Risks" in c for c in small if "section" in c.lower() or "~~~" in c)
    assert sum("section on key risks" in c for c in large) >= 4


def test_some_nights_add_a_useless_or_harmful_edit():
    from pytest_skilltransfer.models.sim.optimizer import HARMFUL_EDITS, USELESS_EDITS
    noise = set(HARMFUL_EDITS) | set(USELESS_EDITS)
    nights = [[e.content for e in reflect("sim-small", BODY, CONFIDENCE, night=n)] for n in range(1, 21)]
    with_noise = sum(any(c in noise for c in contents) for contents in nights)
    assert 2 <= with_noise <= 12


def test_optimizer_returns_an_empty_array_when_nothing_fails():
    assert reflect("sim-small", BODY, CONFIDENCE, failing=False) == []
    assert reflect("sim-large", BODY, CONFIDENCE, failing=False) == []


def test_optimizer_does_not_repeat_a_rejected_edit():
    for model in ("sim-small", "sim-large"):
        first = reflect(model, BODY, KEY_RISKS)
        rejected = [RejectedEdit(edit, 1, 0.0, 0.0) for edit in first]
        second = reflect(model, BODY, KEY_RISKS, rejected=rejected, night=2)
        assert second, "it tries a different wording"
        assert not {e.content for e in second} & {e.content for e in first}


def test_optimizer_overrides_a_body_prohibition_on_tools():
    body = BODY + "\nDo NOT search or use any tools."
    edits = reflect("sim-small", body, SEARCHED)
    learned = apply_edits(body, edits, 4).skill
    assert pass_rate("sim-small", learned, SEARCHED, CORPUS) >= 0.8


def test_optimizer_deletes_a_learned_rule_that_breaks_a_length_limit():
    skill = with_rules("Cover every angle in depth.")
    edits = reflect("sim-small", skill, Judge("rule", (Check("max_chars", 900),)))
    assert any(e.op == "delete" and "Cover every angle" in e.anchor for e in edits)


# ---- honesty: no knowledge the request does not show ------------------------------------------------

SCALES = ("High|Medium|Low", "Certain|Likely|Unsure", "Firm|Tentative", "Sure|Unsure", "Green|Amber|Red")


def test_a_free_label_slot_gets_no_built_in_values():
    """`Confidence: <...>` with no values shown: no answer writes a value from any scale."""
    skill = with_rules("Always end with the line `Confidence: <one specific point>` on its own line.")
    for model in ("sim-small", "sim-large"):
        texts = [SimModel(model).complete(agent_request(skill, sample_id=s)).text for s in range(20)]
        lines = [line for text in texts for line in text.splitlines() if line.startswith("Confidence:")]
        assert len(lines) >= 15
        words = {w for scale in SCALES for w in scale.split("|")}
        assert not any(set(line.removeprefix("Confidence:").split()) & words for line in lines)


@pytest.mark.parametrize("model", ["sim-small", "sim-large"])
def test_the_optimizer_has_no_prior_for_values_only_held_out_checks_show(model):
    """Training shows `Confidence:` only. Whatever scale the held-out check asks for, the learned skill scores the same: 0."""
    training = Judge("rule", (Check("contains", "Confidence:"),))
    learned = BODY
    for night in range(1, 3):
        learned = apply_edits(learned, reflect(model, learned, training, night=night), 4).skill
    assert "Confidence" in learned
    for scale in SCALES:
        assert not any(word in learned for word in scale.split("|") if len(word) > 1)
        held_out = Judge("rule", (Check("regex", rf"^Confidence:[ \t]*({scale})\b"),))
        assert pass_rate("sim-large", learned, held_out) == 0.0, scale
        assert pass_rate("sim-small", learned, held_out) == 0.0, scale


def test_values_the_training_checks_show_are_learned_whatever_they_are():
    for scale in SCALES[:3]:
        judge = Judge("rule", (Check("regex", rf"^Confidence: ({scale})$"),))
        learned = apply_edits(BODY, reflect("sim-small", BODY, judge), 4).skill
        assert pass_rate("sim-large", learned, judge) >= 0.8, scale


# ---- structured output ------------------------------------------------------------------------------

JSON_TRAIN = Judge("rule", (Check("regex", '"service": "[^"]+"'), Check("regex", '"severity": "(sev1|sev2|sev3)"'),
                            Check("regex", '"page_oncall": (true|false)')))
JSON_WHOLE = Judge("rule", (Check("regex", '^\\{\\s*"service": "[^"\\n]+",\\s*"severity": "sev[1-3]",\\s*'
                                           '"page_oncall": (true|false)\\s*\\}$'), Check("max_chars", 300)))
JSON_TEMPLATE = ('Reply with ONLY this JSON object:\n~~~\n{\n  "service": "<the service>",\n  "severity": "<sev1|sev2|sev3>",\n'
                 '  "page_oncall": <true|false>\n}\n~~~')
JSON_SCHEMA = "Reply with only a JSON object with the keys service, severity (one of sev1, sev2 or sev3) and page_oncall (true or false)."


def test_a_json_template_is_followed_by_both_and_a_described_schema_only_by_large():
    for model in ("sim-small", "sim-large"):
        assert pass_rate(model, with_rules(JSON_TEMPLATE), JSON_WHOLE) >= 0.85
    assert pass_rate("sim-large", with_rules(JSON_SCHEMA), JSON_WHOLE) >= 0.8
    assert pass_rate("sim-small", with_rules(JSON_SCHEMA), JSON_WHOLE) <= 0.15


def test_a_json_reply_is_valid_json_with_the_keys_in_order():
    reply = SimModel("sim-small").complete(agent_request(with_rules(JSON_TEMPLATE))).text
    record = json.loads(reply)
    assert list(record) == ["service", "severity", "page_oncall"]
    assert record["severity"] in ("sev1", "sev2", "sev3") and isinstance(record["page_oncall"], bool)


def test_the_optimizer_turns_failing_json_criteria_into_a_template_or_a_schema():
    small = apply_edits(BODY, reflect("sim-small", BODY, JSON_TRAIN), 4).skill
    assert '"severity": "<sev1|sev2|sev3>"' in small and "JSON object" in small
    assert pass_rate("sim-large", small, JSON_WHOLE) >= 0.8
    large = [e.content for night in range(1, 11) for e in reflect("sim-large", BODY, JSON_TRAIN, night=night)]
    assert any(c.startswith("Reply with only a JSON object with the keys service, severity (one of sev1") for c in large)
    assert not any("regular expression" in c for c in large)


def test_an_empty_edit_array_means_no_edit_proposed():
    assert parse_edits("[]") == []
    assert parse_edits("No change needed: []") == []
    with pytest.raises(Exception):
        parse_edits("no array at all")
