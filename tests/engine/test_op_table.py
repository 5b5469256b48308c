"""A judge op is defined once (`engine.judges.OPS`): the task schema, the loader, the wording, the "why" matching
and the simulator follow that table."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_skilltransfer.engine.judges import ABSENT, LENGTH, OPS, PRESENT, RULE_OPS, Check, describe_check
from pytest_skilltransfer.reports.why import causes

SCHEMA = Path(__file__).resolve().parents[2] / "pytest_skilltransfer" / "task.schema.json"
SCHEMA_KINDS = {"string": "string", "regex": "regex", "integer": "integer", "none": "none", "criterion": "string"}


def test_the_task_schema_lists_every_op_with_its_argument() -> None:
    check = json.loads(SCHEMA.read_text())["$defs"]["check"]
    assert tuple(check["properties"]["op"]["enum"]) == RULE_OPS
    kinds: dict[str, str] = {}
    for branch in check["oneOf"]:
        op = branch["properties"]["op"]
        arg = branch["properties"].get("arg")
        kind = "none" if arg is None else "regex" if arg.get("format") == "regex" else arg["type"]
        for name in op.get("enum", [op.get("const")]):
            kinds[name] = kind
    assert kinds == {name: SCHEMA_KINDS[op.arg] for name, op in OPS.items() if op.built_in}


def test_every_op_has_wording_and_a_meaning_for_a_miss() -> None:
    for name in RULE_OPS:
        assert describe_check(Check(name, "x")).startswith("the answer ")
    assert {name: OPS[name].miss for name in RULE_OPS} == {
        "section_present": ABSENT, "section_contains": ABSENT, "regex": ABSENT, "contains": ABSENT,
        "not_contains": PRESENT, "max_chars": LENGTH, "min_chars": LENGTH, "no_refusal": PRESENT,
        "tool_called": None, "rubric": None}


def test_a_missed_regex_is_blamed_on_a_line_against_it_not_on_one_asking_for_it() -> None:
    """A regex check misses when the answer lacks the pattern: a learned line that asks for it cannot be why."""
    assert not causes("+ Always end with Owner: @team", "regex=Owner: @\\w+")
    assert causes("+ Never name an Owner in the answer", "regex=Owner: @\\w+")
