"""The wording of the prompts the engine builds and the simulator reads, defined once: the optimizer's
reflection sections and its check tags, and a rubric judge's three sections. The engine writes with these
and the in-process simulator parses with them, so rewording a prompt here changes both sides at once (a copy
on one side would make every simulated optimization silently propose nothing)."""

from __future__ import annotations

import json
import re
from typing import Any

# the optimizer's request (`engine.reflect.build_reflect_request`), in order
CURRENT_SKILL = "# Current skill"
FAILING_CRITERIA = "# Failing criteria (training tasks)"
FAILING_ATTEMPTS = "# Failing attempts"
PASSING_ATTEMPTS = "# Passing attempts, keep these working"
REJECTED_EDITS = "# Edits already tried and rejected by validation"
REFLECT_SECTIONS = (CURRENT_SKILL, FAILING_CRITERIA, FAILING_ATTEMPTS, PASSING_ATTEMPTS, REJECTED_EDITS)

# a failing criterion's machine-readable tag: `(check: op json-arg)`, or `(check: qrels)`
_CHECK_TAG = re.compile(r"\(check: (\w+)")


def check_tag(op: str, arg: Any = None, with_arg: bool = True) -> str:
    """`(check: contains "Owner:")`: the tag a criterion line ends with."""
    return f"(check: {op} {json.dumps(arg)})" if with_arg else f"(check: {op})"


def read_check_tag(line: str) -> tuple[str, str] | None:
    """(op, the text after the op) of the first check tag in `line`; None without one. The text after the op
    starts with a space and the JSON argument when the tag has one."""
    match = _CHECK_TAG.search(line)
    return (match.group(1), line[match.end():]) if match else None


def rejected_line(night: int, op: str, text: str, before: float, after: float) -> str:
    """One rejected edit in its section: `- night 2: add "Be brief." (validation 0.50 -> 0.40)`."""
    return f"- night {night}: {op} {json.dumps(text)} (validation {before:.2f} -> {after:.2f})"


_REJECTED = re.compile(r"- night \d+: \w+ (\".*\") \(validation")


def read_rejected_line(line: str) -> str | None:
    """The edit's text of a `rejected_line`, None for any other line."""
    match = _REJECTED.match(line)
    return json.loads(match.group(1)) if match else None


def budget_line(edits: int) -> str:
    """The request's last line: how many edits the optimizer may return."""
    return f"Return at most {edits} edits as a JSON array."


_BUDGET = re.compile(r"Return at most (\d+) edits")


def read_budget(text: str) -> int | None:
    """The edit budget a request states, None when it states none."""
    match = _BUDGET.search(text)
    return int(match.group(1)) if match else None


# a rubric judge's request (`engine.rubric`)
TASK_HEADER, ANSWER_HEADER, CRITERION_HEADER = "# Task", "# Answer", "# Criterion"
RUBRIC_SECTIONS = (TASK_HEADER, ANSWER_HEADER, CRITERION_HEADER)
