"""Why an item moved: checks per arm, the checks newly missed, and the learned lines they point at."""

from __future__ import annotations

from typing import Any

from pytest_skilltransfer.evidence.item_record import ItemRecord
from pytest_skilltransfer.reports.why import check_arms, learned_lines, pointed_lines, run_checks, why

SEED = "# Skill\n\nAnswer the question.\n- Say what to check afterwards.\n"
LEARNED = SEED.replace("- Say what to check afterwards.\n", "") + (
    "\n<!-- skilltransfer:learned start -->\n## Learned rules\n- Keep answers short.\n- Never say simply.\n"
    "<!-- skilltransfer:learned end -->\n")


def arm(*tasks: list[list[str]]) -> dict[str, Any]:
    """An evaluation whose task i has one sample per list of missed checks."""
    score = {"mean": 0.0, "ci_low": 0.0, "ci_high": 1.0, "n": len(tasks)}
    return {"hard": score, "soft": score,
            "tasks": [{"task_id": f"t{i}", "samples": [{"sample_id": j, "hard": float(not failed), "soft": 0.0,
                                                        "failed": failed} for j, failed in enumerate(samples)]}
                      for i, samples in enumerate(tasks)]}


def result(**fields: Any) -> ItemRecord:
    """The record of `data(**fields)`."""
    return ItemRecord.from_json(data(**fields))


def data(**fields: Any) -> dict[str, Any]:
    scores = {"baseline": arm([[]], [["max_chars=900"]], [[]]),
              "transferred": arm([["min_chars=300"]], [[], ["min_chars=300"]], [["max_chars=900"]]),
              "direct": None}
    return {"seed": "s", "source": "a", "target": "b", "optimizer": None, "item": "seeds/s/SKILL.md::transfer[a->b]",
            "baseline_target": 0.0, "transferred": 0.0, "gain": {"mean": 0.0, "ci_low": 0.0, "ci_high": 0.0, "n": 3,
                                                                 "p_value": 1.0}, "scores": scores, "seed_skill": SEED, "learned_skill": LEARNED, **fields}


def test_a_check_is_missed_on_a_task_when_any_sample_missed_it_and_the_worst_change_comes_first() -> None:
    rows = check_arms(result())
    assert rows == [
        {"check": "min_chars=300", "tasks": 3, "baseline": 0, "transferred": 2, "direct": None, "change": 2,
         "newly_missed": 2, "fixed": 0},
        {"check": "max_chars=900", "tasks": 3, "baseline": 1, "transferred": 1, "direct": None, "change": 0,
         "newly_missed": 1, "fixed": 1},
    ]


def test_the_learned_lines_are_the_diff_without_markers_and_headings() -> None:
    assert learned_lines(result()) == ["- - Say what to check afterwards.", "+ - Keep answers short.",
                                       "+ - Never say simply."]
    assert learned_lines(result(seed_skill=None)) == []


def test_a_check_points_at_the_lines_naming_its_words_in_the_miss_direction_or_for_length_pushing_that_way() -> None:
    lines = learned_lines(result())
    assert pointed_lines("min_chars=300", lines) == ["+ - Keep answers short."]
    assert pointed_lines("not_contains=simply", lines) == []  # it forbids what the check looks for: a mention
    assert pointed_lines("regex=^Team: (Platform|Payments)$", lines) == []


def test_why_names_the_checks_newly_missed_with_their_tasks_and_lines() -> None:
    found = why(result())
    assert found["kind"] == "newly missed"
    assert found["checks"][0] == {"check": "min_chars=300", "tasks": 2, "of": 3, "lines": ["+ - Keep answers short."],
                                  "mentions": []}
    still = why(result(scores={**data()["scores"], "transferred": data()["scores"]["baseline"]}))
    assert still["kind"] == "still missed" and still["checks"][0]["check"] == "max_chars=900"


def test_the_run_counts_each_seed_and_pair_once() -> None:
    matrix = result()
    hand = result(item="seeds/test_s.py::test_s")  # the same (seed, pair) again
    other = result(seed="t", item="seeds/t/SKILL.md::transfer[a->b]")
    rows = {r["check"]: r for r in run_checks([matrix, hand, other])}
    assert rows["min_chars=300"] == {"check": "min_chars=300", "items": 2, "tasks": 6, "baseline": 0,
                                     "transferred": 4, "direct": 0, "change": 4}


def test_a_plan_only_report_shows_the_plan_with_its_breakdown() -> None:
    """`--plan --skilltransfer-json/--skilltransfer-html`: no item ran, the page shows what the run would cost."""
    from pytest_skilltransfer.reports import html_report

    plan = {"prices_effective": "2026-12-01", "total": {"calls": 182, "bound_usd": 4.84, "expected_usd": 1.2},
            "lanes": {"batch": {"bound": 2.42, "expected": 0.6}},
            "breakdown": {"by_phase": {"direct": {"bound_usd": 2.0, "expected_usd": 0.5, "calls": 48}}},
            "items": [{"item": "seeds/a/SKILL.md::transfer[x->y]", "calls": 182, "bound_usd": 4.84}]}
    page = html_report.render({"results": [], "plan": plan})
    section = page.split("<h2>Plan</h2>", 1)[1]
    assert "No transfer item produced a result" not in page
    for text in ("<td>4.8400</td>", "<h3>by phase</h3>", "<td>direct</td>", "<td>batch</td>", "<td>2.4200</td>",
                 "seeds/a/SKILL.md::transfer[x-&gt;y]"):
        assert text in section, text


def test_a_line_forbidding_what_a_missed_check_looks_for_is_a_mention_not_a_cause() -> None:
    from pytest_skilltransfer.reports.why import CAUSE_RULE, mentioning_lines

    lines = ["+ - Never write 'Great question'.", "+ - Open with 'Great question' to sound warm.",
             "- - Do not say simply.", "+ - Always include an Owner: line.", "+ - Don't add an Owner: line."]
    check = "not_contains=Great question"
    assert mentioning_lines(check, lines) == lines[:2]
    assert pointed_lines(check, lines) == ["+ - Open with 'Great question' to sound warm."]
    assert pointed_lines("not_contains=simply", lines) == ["- - Do not say simply."]  # removing a ban may cause it
    assert pointed_lines("contains=Owner:", lines) == ["+ - Don't add an Owner: line."]
    assert pointed_lines("max_chars=900", ["+ - Keep answers short."]) == []
    assert pointed_lines("max_chars=900", ["+ - Be exhaustive and detailed."]) == ["+ - Be exhaustive and detailed."]
    skill = "# Skill\n\nAnswer.\n"
    found = why(result(seed_skill=skill, learned_skill=skill + "- Never write 'Great question'.\n",
                       scores={"baseline": arm([[]]), "transferred": arm([[check]]), "direct": None}))
    assert found["checks"] == [{"check": check, "tasks": 1, "of": 1, "lines": [],
                                "mentions": ["+ - Never write 'Great question'."]}]
    assert "never its cause" in CAUSE_RULE
    from pytest_skilltransfer.reports.html_report import _why_item

    item = result(seed_skill=skill, learned_skill=skill + "- Never write 'Great question'.\n",
                  scores={"baseline": arm([[]]), "transferred": arm([[check]]), "direct": None})
    assert "may cause it</span>; <span" in _why_item(item, {})  # two clauses on the page, not one run-on


def test_why_knows_only_ops_the_judges_have() -> None:
    from pytest_skilltransfer.engine.judges import RULE_OPS
    from pytest_skilltransfer.reports import why as why_module

    named = set(why_module.KIND_WORDS)
    assert named <= set(RULE_OPS), named - set(RULE_OPS)


def test_a_length_line_pushes_the_way_its_first_length_word_says() -> None:
    line = "+ - Hard limit: keep every answer under 450 characters, even when other rules ask for detail."
    assert pointed_lines("max_chars=700", [line]) == [] and pointed_lines("min_chars=300", [line]) == [line]
    assert pointed_lines("max_chars=700", ["+ - Never be brief: explain every step."]) == [
        "+ - Never be brief: explain every step."]
