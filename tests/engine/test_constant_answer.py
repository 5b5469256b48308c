"""Checks a constant answer passes: the share of held-out tasks one recorded answer passes (rule checks only), the
flag at half, the collection warning for identical format-only checks, and the transferred answers' collapse."""

from __future__ import annotations

import json

import pytest
from plugin_support import make_seed, project

from pytest_skilltransfer.engine.constant_answer import collapse, constant_answer, identical_checks
from pytest_skilltransfer.engine.judges import Check, Judge
from pytest_skilltransfer.engine.seed_data import Task

FORMAT = (Check("regex", "^Sentiment: (Positive|Negative)$"),)


def _task(i: int, *extra: Check, rubric: bool = False) -> Task:
    checks = FORMAT + extra + ((Check("rubric", "Right sentiment."),) if rubric else ())
    return Task(f"t{i}", f"review {i}", Judge("rubric" if rubric else "rule", checks))


def test_a_format_only_seed_is_passed_by_one_answer_and_a_labelled_one_is_not() -> None:
    answers = ["Sentiment: Positive", "Sentiment: Negative", "I liked it."]
    format_only = [_task(i) for i in range(24)]
    found = constant_answer(format_only, answers)
    assert (found.passes, found.tasks, found.flagged) == (24, 24, True) and identical_checks(format_only)
    assert found.text() == "a constant answer passes 24/24: these checks cannot tell a right answer from a wrong one"
    labelled = [_task(i, Check("regex", f"^Sentiment: {'Positive' if i % 3 else 'Negative'}$")) for i in range(24)]
    found = constant_answer(labelled, answers)
    assert (found.passes, found.flagged) == (16, True)  # 16 of 24 reviews are positive: the majority label passes
    balanced = [_task(i, Check("regex", f"^Sentiment: {'Positive' if i % 2 else 'Negative'}$")) for i in range(24)]
    assert constant_answer(balanced, answers).passes == 12 and not identical_checks(balanced)
    third = [_task(i, Check("contains", f"item-{i % 3}")) for i in range(24)]
    assert not constant_answer(third, ["Sentiment: Positive item-0"]).flagged  # 8/24


def test_rubric_checks_are_left_out_and_said_so() -> None:
    tasks = [_task(i, rubric=True) for i in range(6)]
    found = constant_answer(tasks, ["Sentiment: Positive"])
    assert found.rubric_left_out == 6 and "rubric checks left out on 6 task(s)" in found.text()
    assert not identical_checks(tasks)  # the rubric may tell answers apart: not decided at collection


def test_collapse_reads_the_labels_the_checks_match() -> None:
    base = [f"Review {i}.\nSentiment: {'Positive' if i % 2 else 'Negative'}" for i in range(24)]
    same = [f"Review {i}.\nSentiment: Positive" for i in range(24)]
    patterns = ("^Sentiment: (Positive|Negative)$",)
    assert collapse(base, same, 24, patterns).collapsed
    assert not collapse(base, same, 24).collapsed  # whole answers differ: nothing collapses without the checks


def test_collection_warns_and_the_row_and_json_say_it(pytester: pytest.Pytester) -> None:
    project(pytester, ini="skilltransfer_pair = toy-a:toy-b\n", seeds=())
    make_seed(pytester.path / "seeds", "same-checks", tasks=8)
    result = pytester.runpytest("--snapshot-update", "--skilltransfer-json=r.json", "-p", "no:randomly")
    result.stdout.fnmatch_lines(["*seed same-checks: its 8 held-out tasks carry the same checks*a constant answer "
                                 "that passes one passes 8/8: these checks cannot tell a right answer from a wrong "
                                 "one*", "*outcome*const*verdict*", "*transfers*8/8*"], consecutive=False)
    record = json.loads((pytester.path / "r.json").read_text())["results"][0]
    assert record["constant_answer"]["flagged"] and record["constant_answer"]["passes"] == 8
