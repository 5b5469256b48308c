"""A prohibition in a skill is a rule like any other: followed at the model's rate for its kind, later rules win."""

from __future__ import annotations

import re

import pytest

from pytest_skilltransfer.guards.edits import render_skill
from pytest_skilltransfer.engine.judges import Check, Judge
from pytest_skilltransfer.models.sim.skill_reader import ABSTRACT, BAN, LITERAL, parse_skill
from pytest_skilltransfer.models.sim import SimModel
from test_sim_harm import answers, pass_rate

BODY = ("# Advisor\n\nAdvise the team on the decision in the request. "
        "Always include a heading written exactly as `## Key Risks`, followed by two or three bullet points.")
RISKS = Judge("rule", (Check("section_present", "Key Risks"),))
PRICING = ["Advise on the pricing change for annual plans next month.",
           "Advise on publishing the new pricing page before the partner launch."]


@pytest.mark.parametrize("line, strength, mode", [
    ("Never use headings.", LITERAL, "headings"),
    ("Do not use Markdown headers in a chat reply.", LITERAL, "headings"),
    ("No bullet points.", LITERAL, "bullets"),
    ("Do not mention prices or discounts.", LITERAL, "mention"),
    ("Keep the formatting plain.", ABSTRACT, "headings"),
])
def test_prohibitions_are_read_with_their_kind(line, strength, mode):
    bans = [d for d in parse_skill(line) if d.kind == BAN]
    assert [(d.strength, d.mode) for d in bans] == [(strength, mode)]


def test_lines_that_require_things_are_not_read_as_prohibitions():
    for line in ("Always include a heading written exactly as `## Summary`.", "Include a section on key risks, as bullet points.",
                 "Every answer must end with these parts, copied exactly (keep headings and labels exactly as written).",
                 "Mention the price in the first line."):
        assert not [d for d in parse_skill(line) if d.kind == BAN], line


def test_a_later_heading_ban_removes_the_required_heading_at_the_literal_rate():
    assert pass_rate("sim-small", BODY, RISKS) >= 0.65 and pass_rate("sim-large", BODY, RISKS) >= 0.9
    banned = render_skill(BODY, ["Never use headings."])
    assert pass_rate("sim-small", banned, RISKS) <= 0.25
    assert pass_rate("sim-large", banned, RISKS) <= 0.1
    for text in answers(SimModel("sim-large"), banned):
        if "Key Risks" in text:
            assert not re.search(r"^#", text, re.M) or "## Key Risks" in text


def test_an_earlier_ban_is_overridden_by_a_later_required_heading():
    body = "# Advisor\n\nNever use headings.\n\nAlways include a heading written exactly as `## Key Risks`, with bullet points."
    assert pass_rate("sim-large", body, RISKS) >= 0.9
    titled = [text.startswith("# ") for text in answers(SimModel("sim-large"), body)]
    assert sum(titled) / len(titled) <= 0.1, "the title is still left out"


def test_an_abstract_prohibition_is_followed_by_the_large_model_only():
    plain = render_skill(BODY, ["Keep the formatting plain."])
    assert pass_rate("sim-large", plain, RISKS) <= 0.2
    assert pass_rate("sim-small", plain, RISKS) >= 0.75


def test_a_bullet_ban_writes_sections_as_sentences():
    banned = render_skill(BODY, ["Do not use bullet points."])
    bulleted = Judge("rule", (Check("regex", r"^## Key Risks\n- "),))
    assert pass_rate("sim-large", BODY, bulleted) >= 0.9
    assert pass_rate("sim-large", banned, bulleted) <= 0.1 and pass_rate("sim-large", banned, RISKS) >= 0.9


def test_a_mention_ban_keeps_the_words_out_of_the_prose():
    banned = render_skill(BODY, ["Do not mention pricing."])
    said = Judge("rule", (Check("not_contains", "pricing"),))
    assert pass_rate("sim-large", BODY, said, PRICING) <= 0.1, "the tasks are about pricing, so the answers say so"
    assert pass_rate("sim-large", banned, said, PRICING) >= 0.9 and pass_rate("sim-small", banned, said, PRICING) >= 0.8
    assert pass_rate("sim-large", banned, RISKS, PRICING) >= 0.9, "required headings stay"
