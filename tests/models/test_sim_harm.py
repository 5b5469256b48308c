"""How a rule learned on one simulated model can hurt the other: each mechanism alone, on minimal skills.

Each test starts from a skill the target passes at baseline and adds one rule that the other model
would learn; the mechanism is a behaviour of the family, fired by what the skill says, never by a
seed, a task or a check (the simulator never sees checks).
"""

from __future__ import annotations

import dataclasses

import pytest

from pytest_skilltransfer.engine import judges
from pytest_skilltransfer.engine.agent import AgentContext, run_task
from pytest_skilltransfer.guards.edits import render_skill
from pytest_skilltransfer.engine.judges import Check, Judge
from pytest_skilltransfer.engine.ledger import CallCache, Meter
from pytest_skilltransfer.models.base import Message, Request
from pytest_skilltransfer.models.registry import resolve_model
from pytest_skilltransfer.models.sim import PROFILES, SimModel
from pytest_skilltransfer.engine.seed_data import Task

SAMPLES = 12
TASKS = [
    "Write this week's status report for the Search relevance project: tuning ranking for long-tail queries.",
    "Write this week's status report for the Billing migration project: moving invoices to the new ledger.",
    "How do I rotate the API key for the staging environment?",
]
FOUR_PARTS = ("# Status Report\n\nWrite the report. Use these four parts, each with a few bullet points:\n\n~~~\n"
              "## Done\n- <what was finished>\n## In Progress\n- <what is being worked on>\n## Risks\n- <what could go wrong>\n"
              "## Next Week\n- <what comes next>\n~~~\n")
ALL_PARTS = Judge("rule", tuple(Check("section_present", s) for s in ("Done", "In Progress", "Risks", "Next Week")))
PLAIN = "# How-to Answers\n\nAnswer the developer's question, with enough background to follow it, then the steps."
SUBSTANTIAL = Judge("rule", (Check("min_chars", 300), Check("max_chars", 900)))


def pass_rate(model, skill: str, judge: Judge, tasks: list[str] = TASKS) -> float:
    model = resolve_model(model) if isinstance(model, str) else model
    ctx = AgentContext(model=model, cache=CallCache(), meter=Meter(), role="agent")
    scores = [judges.score(judge, run_task(ctx, skill, Task(id=f"t{i}", text=text, judge=judge), sample)).hard
              for i, text in enumerate(tasks) for sample in range(SAMPLES)]
    return sum(scores) / len(scores)


def with_rules(body: str, *rules: str) -> str:
    return render_skill(body, list(rules))


def variant(name: str, **changes) -> SimModel:
    """A sim model with one capacity changed (same model id, so the same noise draws)."""
    model = SimModel(name)
    model.profile = dataclasses.replace(PROFILES[name], **changes)
    return model


def answers(model: SimModel, skill: str, tasks: list[str] = TASKS) -> list[str]:
    return [model.complete(Request(system=skill, messages=(Message("user", text),), sample_id=sample)).text
            for text in tasks for sample in range(SAMPLES)]


# ---- a strict reader keeps a hard length limit over the required parts ---------------------------

CAP = "Hard limit: keep every answer under 700 characters, even when other rules ask for detail."


def test_both_models_write_all_four_parts_without_a_limit():
    assert pass_rate("sim-large", FOUR_PARTS, ALL_PARTS) >= 0.9
    assert pass_rate("sim-small", FOUR_PARTS, ALL_PARTS) >= 0.8


def test_a_hard_limit_the_parts_overrun_makes_the_large_model_drop_parts_and_not_the_small_one():
    capped = with_rules(FOUR_PARTS, CAP)
    assert pass_rate("sim-large", capped, ALL_PARTS) <= 0.3
    assert pass_rate("sim-small", capped, ALL_PARTS) >= 0.8
    for text in answers(resolve_model("sim-large"), capped):
        if "## Done" in text and "## Next Week" not in text:
            assert len(text) <= 700 and not text.startswith("# "), "it cut the title and the body to fit, then parts"


def test_a_limit_the_parts_fit_under_drops_nothing():
    roomy = with_rules(FOUR_PARTS, "Hard limit: keep every answer under 2000 characters.")
    assert pass_rate("sim-large", roomy, ALL_PARTS) >= 0.9


# ---- a weak reader over-reads an abstract length word --------------------------------------------

def test_both_models_pass_the_plain_skill_where_the_small_one_is_brief_by_habit():
    assert pass_rate("sim-small", PLAIN, SUBSTANTIAL) >= 0.9
    assert pass_rate("sim-large", PLAIN, SUBSTANTIAL) <= 0.5, "the large model overruns the budget"


def test_be_concise_helps_the_large_model_and_the_small_one_over_reads_it_as_three_sentences():
    concise = with_rules(PLAIN, "Be concise.")
    assert pass_rate("sim-large", concise, SUBSTANTIAL) >= 0.75
    assert pass_rate("sim-small", concise, SUBSTANTIAL) <= 0.5
    short = [t for t in answers(resolve_model("sim-small"), concise) if len(t) < 300]
    assert short and all(len([s for s in t.replace("\n", " ").split(". ") if s.strip()]) <= 3 for t in short)


def test_a_literal_length_rule_is_not_over_read():
    literal = with_rules(PLAIN, "Write at most 800 characters.")
    assert pass_rate("sim-small", literal, SUBSTANTIAL) >= 0.75


# ---- neither fires on a request that does not show its trigger -----------------------------------

@pytest.mark.parametrize("skill", [FOUR_PARTS, PLAIN, with_rules(PLAIN, "Write at most 800 characters."),
                                   with_rules(FOUR_PARTS, "Hard limit: keep every answer under 2000 characters."),
                                   with_rules(FOUR_PARTS, "Close with your confidence level.")],
                         ids=["parts", "plain", "literal-limit", "roomy-limit", "abstract-label"])
@pytest.mark.parametrize("name", ["sim-small", "sim-large"])
def test_the_mechanisms_change_no_answer_without_their_trigger(name, skill):
    without = variant(name, strict_limits=0.0, overread_abstract=0.0)
    assert answers(without, skill) == answers(SimModel(name), skill)


def test_the_rates_are_the_documented_ones():
    assert (PROFILES["sim-small"].strict_limits, PROFILES["sim-large"].strict_limits) == (0.0, 0.9)
    assert (PROFILES["sim-small"].overread_abstract, PROFILES["sim-large"].overread_abstract) == (0.6, 0.0)
