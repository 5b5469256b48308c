"""The shipped JSON Schema for task lines accepts exactly the lines the seed loader accepts."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest

from pytest_skilltransfer.commands import scaffold
from pytest_skilltransfer.engine.task_files import read_tasks
from pytest_skilltransfer.engine.seed_data import SeedProblem

jsonschema = pytest.importorskip("jsonschema")

SCHEMA = json.loads(resources.files("pytest_skilltransfer").joinpath("task.schema.json").read_text(encoding="utf-8"))
RULE = {"kind": "rule", "checks": [{"op": "contains", "arg": "Owner:"}]}


def line(**fields):
    return {"task_id": "t-1", "task": "Write it.", "judge": RULE, **fields}


def check(op, arg=None, **extra):
    return line(judge={"kind": "rule", "checks": [{"op": op, **({} if arg is None else {"arg": arg}), **extra}]})


CASES = [
    line(),
    line(notes="extra fields are kept for people"), line(cluster="billing"), line(cluster="a b"),
    *[check(op, "Risks") for op in ("section_present", "section_contains", "contains", "not_contains", "tool_called")],
    check("regex", "^Status: (Green|Red)$"), check("max_chars", 900), check("min_chars", 0), check("max_chars", 3.0),
    check("no_refusal"), check("no_refusal", "ignored"), check("rubric", "names the root cause"),
    line(judge={"kind": "qrels", "expected_slugs": ["projects/x"]}),
    line(judge={"kind": "qrels", "expected_slugs": ["projects/x", "projects/y"], "k": 3}),
    # refused
    {"task": "Write it.", "judge": RULE}, line(task_id=""), line(task_id=" "), line(task_id=7), line(task="  "),
    line(judge="contains Owner:"), line(judge={"kind": "llm"}), line(judge={"kind": "rule"}),
    line(judge={"kind": "rule", "checks": []}), line(judge={"kind": "rule", "checks": ["contains"]}),
    check("no_such_op", "x"), check("rubric"), check("rubric", " "), check("rubric", 3), check("contains"), check("contains", ""), check("contains", 3), check("regex", "  "),
    check("regex", "("), check("max_chars", -1), check("max_chars", "900"), check("min_chars", True),
    check("max_chars", 2.5), line(judge={"kind": "qrels"}), line(judge={"kind": "qrels", "expected_slugs": []}),
    line(judge={"kind": "qrels", "expected_slugs": [""]}), line(judge={"kind": "qrels", "expected_slugs": ["x"], "k": 0}),
    line(judge={"kind": "qrels", "expected_slugs": ["x"], "k": None}), ["not", "an", "object"],
    line(cluster=""), line(cluster="  "), line(cluster=3), line(cluster=None), line(cluster=["billing"]),
]


def loader_accepts(tmp_path: Path, raw: object) -> bool:
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps(raw) + "\n", encoding="utf-8")
    problems: list[SeedProblem] = []
    return bool(read_tasks(path, problems)) and not problems


@pytest.mark.parametrize("raw", CASES, ids=lambda raw: json.dumps(raw)[:60])
def test_schema_and_loader_agree(tmp_path: Path, raw: object) -> None:
    validator = jsonschema.Draft202012Validator(SCHEMA, format_checker=jsonschema.FormatChecker())
    assert validator.is_valid(raw) == loader_accepts(tmp_path, raw)


def test_the_schema_is_valid_and_the_init_tasks_follow_it() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    for task in scaffold.TRAIN + scaffold.TEST:
        jsonschema.validate(task, SCHEMA)
    ops = {c["op"] for t in scaffold.TRAIN + scaffold.TEST if t["judge"]["kind"] == "rule" for c in t["judge"]["checks"]}
    # the template's tasks show every op but rubric, which needs a judge model (its seed.toml shows the [judge])
    assert ops == set(SCHEMA["$defs"]["check"]["properties"]["op"]["enum"]) - {"rubric"}
