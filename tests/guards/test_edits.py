"""Edit application: multi-line rules, anchors, duplicates, budget; and parsing of optimizer replies."""

import json

import pytest

import random

from pytest_skilltransfer.guards.edits import (
    END,
    LEARNED_MAX_BYTES,
    START,
    Edit,
    apply_edits,
    max_skill_bytes,
    render_skill,
    split_skill,
)
from pytest_skilltransfer.engine.reflect import EditParseError, parse_edits

BODY = "# Skill\n\nWrite briefs.\n- a hand-written bullet\n"


def rules_of(skill):
    return split_skill(skill)[1]


def test_add_creates_block_and_keeps_body():
    out = apply_edits(BODY, [Edit("add", "Always end with `Confidence: <High|Medium|Low>`.")], budget=4)
    assert out.skill.startswith(BODY.rstrip())
    assert START in out.skill and END in out.skill
    assert rules_of(out.skill) == ["Always end with `Confidence: <High|Medium|Low>`."]
    assert split_skill(out.skill)[0] == BODY.rstrip("\n")


def test_multiline_template_survives_round_trips():
    template = "Use this skeleton:\n```\n## Key Risks\n- <risk>\n\nConfidence: <High|Medium|Low>\n```"
    once = apply_edits(BODY, [Edit("add", template)], 4).skill
    twice = apply_edits(once, [Edit("add", "-5% margins are fine; keep the sign.")], 4).skill
    assert rules_of(twice) == [template, "-5% margins are fine; keep the sign."]
    assert split_skill(render_skill(*split_skill(twice)))[1] == rules_of(twice)


def test_duplicate_and_blank_adds_are_unmatched():
    skill = apply_edits(BODY, [Edit("add", "Be brief.")], 4).skill
    out = apply_edits(skill, [Edit("add", "  be   BRIEF. "), Edit("add", "   ")], 4)
    assert out.applied == () and out.skill == skill
    assert [why for _, why in out.unmatched] == ["duplicate of an existing learned rule", "blank content"]


def test_replace_and_delete_need_exactly_one_match():
    skill = apply_edits(BODY, [Edit("add", "Keep it under 900 characters."), Edit("add", "Keep a risks section.")], 4).skill
    ambiguous = apply_edits(skill, [Edit("replace", "x", anchor="keep")], 4)
    assert ambiguous.unmatched[0][1] == "anchor matches 2 learned rules; it must match exactly one"
    replaced = apply_edits(skill, [Edit("replace", "Keep it under 800 characters.", anchor="900 characters")], 4)
    assert rules_of(replaced.skill) == ["Keep it under 800 characters.", "Keep a risks section."]
    deleted = apply_edits(skill, [Edit("delete", anchor="risks section")], 4)
    assert rules_of(deleted.skill) == ["Keep it under 900 characters."]
    missing = apply_edits(skill, [Edit("delete", anchor="nothing like this")], 4)
    assert missing.unmatched[0][1] == "anchor matches no learned rule" and missing.skill == skill


def test_hand_written_body_is_never_edited():
    out = apply_edits(BODY, [Edit("delete", anchor="hand-written bullet"), Edit("replace", "x", anchor="Write briefs")], 4)
    assert out.applied == () and out.skill == BODY


def test_budget_limits_applied_edits():
    edits = [Edit("add", f"Rule {i}.") for i in range(6)]
    out = apply_edits(BODY, edits, budget=4)
    assert len(out.applied) == 4 and len(rules_of(out.skill)) == 4
    assert [why for _, why in out.unmatched] == ["over the edit budget of 4"] * 2


def test_later_edits_see_earlier_ones():
    out = apply_edits(BODY, [Edit("add", "Rule A."), Edit("replace", "Rule B.", anchor="rule a")], 4)
    assert rules_of(out.skill) == ["Rule B."]


def test_unknown_op_and_oversized_content():
    out = apply_edits(BODY, [Edit("rewrite", "x"), Edit("add", "x" * 5000)], 4)
    assert [why.split(";")[0] for _, why in out.unmatched] == ["unknown op 'rewrite'", "content longer than 2000 characters"]


def _block(skill):
    return skill[skill.index(START):] if START in skill else ""


def test_the_learned_block_never_grows_past_its_cap():
    skill = BODY
    for night in range(12):
        skill = apply_edits(skill, [Edit("add", f"Night {night} rule {i}: " + "é" * 150) for i in range(4)], 4).skill
    assert len(_block(skill).encode()) <= LEARNED_MAX_BYTES
    another = "Another rule: " + "é" * 150
    out = apply_edits(skill, [Edit("add", another), Edit("delete", anchor="night 0 rule 0"), Edit("add", another)], 4)
    assert [e.op for e in out.applied] == ["delete", "add"]
    assert out.unmatched[0][1].startswith("the learned rules would take ") and "over their cap of 2048" in out.unmatched[0][1]
    grown = apply_edits(skill, [Edit("replace", "x" * 1500, anchor="night 1 rule 0")], 4)
    assert not grown.applied and grown.skill == skill


def test_a_hand_written_block_over_the_cap_may_shrink_but_not_grow():
    big = render_skill(BODY, [f"Rule {i}: " + "w" * 300 for i in range(10)])
    assert len(_block(big).encode()) > LEARNED_MAX_BYTES
    assert not apply_edits(big, [Edit("add", "A new rule.")], 4).applied
    shrunk = apply_edits(big, [Edit("replace", "Rule 3, shorter.", anchor="rule 3:")], 4).skill
    assert len(shrunk) < len(big) and "Rule 3, shorter." in shrunk


def test_no_edits_take_a_skill_past_max_skill_bytes():
    """Random nights of adds, replaces and deletes (multi-line, non-ASCII) never pass the plan's bound."""
    rng = random.Random(7)
    words = ["é", "rule", "- item", "\n", "\n\n", "x" * 40, "日本", "`code`"]
    for seed_skill in (BODY, "# Tiny\n", render_skill(BODY, ["kept " + "k" * 2500])):
        bound, skill = max_skill_bytes(seed_skill), seed_skill
        for _ in range(60):
            edits = []
            for _ in range(rng.randint(1, 6)):
                content = "".join(rng.choice(words) for _ in range(rng.randint(1, 80)))
                anchor = rng.choice(split_skill(skill)[1] or ["none"])[:12]
                edits.append(Edit(rng.choice(["add", "add", "replace", "delete"]), content, anchor))
            skill = apply_edits(skill, edits, rng.randint(1, 6)).skill
            assert len(skill.encode()) <= bound


def test_no_rules_means_no_block():
    assert START not in render_skill(BODY, [])


@pytest.mark.parametrize(
    "reply",
    [
        '[{"op": "add", "content": "Rule."}]',
        'Here you go:\n```json\n[{"op": "add", "content": "Rule."}]\n```\nThanks [1].',
        'Note [see below]\n[{"content": "Rule."}]',
    ],
)
def test_parse_edits_tolerates_fences_and_prose(reply):
    assert parse_edits(reply) == [Edit("add", "Rule.")]


def test_parse_keeps_anchor_only_deletes_and_multiline():
    edits = parse_edits('[{"op":"DELETE","anchor":"old"},{"op":"add","content":"a\\nb"},{"op":"add","content":""}]')
    assert edits == [Edit("delete", "", "old"), Edit("add", "a\nb")]


def test_parse_fails_clearly():
    with pytest.raises(EditParseError, match="no JSON array"):
        parse_edits("I would add a risks section.")


def test_fences_inside_edit_content_survive_parsing():
    content = "Use this skeleton:\n```\n## Key Risks\n- <risk>\n```"
    reply = "```json\n" + json.dumps([{"op": "add", "content": content}]) + "\n```"
    assert parse_edits(reply) == [Edit("add", content)]
    assert parse_edits(json.dumps([{"op": "add", "content": content}])) == [Edit("add", content)]
