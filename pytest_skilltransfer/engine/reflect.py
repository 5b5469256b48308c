"""The optimizer's prompt and the parsing of its reply into edits.

The optimizer sees the current skill, the training criteria that failed (in plain English, each
followed by a machine-readable `(check: op json-arg)` tag), failing and succeeding training
attempts, and edits that earlier nights tried and the gate rejected. For a failed rubric check of
a training attempt it also sees the judge's one-line reason (only training attempts are ever shown).
It answers with a JSON array.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ..guards.edits import Edit
from ..guards.json_text import embedded_json
from ..guards.prompt_format import (
    CURRENT_SKILL,
    FAILING_ATTEMPTS,
    FAILING_CRITERIA,
    PASSING_ATTEMPTS,
    REJECTED_EDITS,
    budget_line,
    check_tag,
    rejected_line,
)
from ..models.base import Message, Request
from .judges import Judge, describe_check

REFLECT_SYSTEM = """\
You improve a skill document that an AI agent follows. The agent ran training tasks with the
current skill; some answers failed their checks. Propose small, general edits to the skill's
learned rules so that future answers pass every listed criterion without breaking what already works.

Rules for edits:
- Each edit is general and reusable, never about one specific task.
- Be concrete: quote exact headings, labels, limits and tool names.
- A rule may span several lines: a template or a short worked example is a good edit.
- If the hand-written skill conflicts with a criterion, write a rule that explicitly overrides it.
- Do not repeat an edit listed as already rejected.

Reply with ONLY a JSON array, no prose and no code fences, of at most __BUDGET__ objects:
[{"op": "add" | "replace" | "delete", "content": "<rule text>", "anchor": "<text of the learned rule to replace or delete>", "rationale": "<why>"}]
"""

MAX_FAILURES_SHOWN = 8
MAX_SUCCESSES_SHOWN = 3
EXCERPT_CHARS = 400
REFLECT_MAX_TOKENS = 1024  # the optimizer's reply at most (the plan bounds it by this)


@dataclass(frozen=True)
class Observation:
    """A training attempt as the optimizer sees it."""

    task_id: str
    task: str
    answer: str
    judge: Judge
    failed: tuple[str, ...]
    tools_called: tuple[str, ...] = ()
    judge_reasons: tuple[str, ...] = ()  # "<criterion>: <the judge's reason>" for failed rubric checks


@dataclass(frozen=True)
class RejectedEdit:
    """An edit the gate rejected in an earlier night, with the scores that rejected it."""

    edit: Edit
    night: int
    before: float
    after: float


def _criteria(failures: list[Observation]) -> list[str]:
    counts: Counter[str] = Counter()
    lines: dict[str, str] = {}
    for obs in failures:
        if obs.judge.kind == "qrels":
            key = "qrels"
            lines[key] = f"the agent retrieves the page about the task's topic with a tool call {check_tag('qrels', with_arg=False)}"
            counts[key] += 1
            continue
        for check in obs.judge.checks:
            if check.label() in obs.failed:
                key = check.label()
                lines[key] = f"{describe_check(check)} {check_tag(check.op, check.arg)}"
                counts[key] += 1
    return [f"- {lines[key]} -- failed on {n} of {len(failures)} failing tasks" for key, n in counts.most_common()]


def _excerpt(text: str) -> str:
    text = text.strip()
    return text if len(text) <= EXCERPT_CHARS else text[:EXCERPT_CHARS] + f" [... {len(text) - EXCERPT_CHARS} more characters]"


def _observation_block(obs: Observation) -> str:
    tools = ", ".join(obs.tools_called) or "none"
    status = ("Failed: " + "; ".join(obs.failed)) if obs.failed else "Passed every check."
    reasons = "".join(f"\nJudge's reason for {reason}" for reason in obs.judge_reasons)
    return (f"## Task {obs.task_id}\nTask: {obs.task}\nTools called: {tools}\nAnswer ({len(obs.answer)} characters):\n"
            f"{_excerpt(obs.answer)}\n{status}{reasons}")


def build_reflect_request(
    skill: str,
    failures: list[Observation],
    successes: list[Observation],
    rejected: list[RejectedEdit],
    edit_budget: int,
    sample_id: int = 0,
) -> Request:
    """The optimizer request for one night."""
    parts = [CURRENT_SKILL, skill.strip(), "", FAILING_CRITERIA]
    parts += _criteria(failures) or ["- (none)"]
    parts += ["", f"{FAILING_ATTEMPTS} ({min(len(failures), MAX_FAILURES_SHOWN)} of {len(failures)})"]
    parts += [_observation_block(o) for o in failures[:MAX_FAILURES_SHOWN]] or ["(none)"]
    parts += ["", f"{PASSING_ATTEMPTS} ({min(len(successes), MAX_SUCCESSES_SHOWN)} of {len(successes)})"]
    parts += [_observation_block(o) for o in successes[:MAX_SUCCESSES_SHOWN]] or ["(none)"]
    parts += ["", REJECTED_EDITS]
    parts += [
        rejected_line(r.night, r.edit.op, r.edit.content or r.edit.anchor, r.before, r.after) for r in rejected
    ] or ["- (none)"]
    parts += ["", budget_line(edit_budget)]
    return Request(
        system=REFLECT_SYSTEM.replace("__BUDGET__", str(edit_budget)),
        messages=(Message(role="user", content="\n".join(parts)),),
        max_tokens=REFLECT_MAX_TOKENS,
        sample_id=sample_id,
    )


RETRY_NOTE = "Your reply could not be parsed. Reply with ONLY the JSON array of edit objects, nothing else."


class EditParseError(ValueError):
    """The optimizer's reply held no usable JSON array of edits."""


def parse_edits(text: str) -> list[Edit]:
    """Parse the first JSON array of edit objects in a reply (code fences and prose tolerated).

    An empty array `[]` (and no other array of edits) means the optimizer proposes no edit: [].
    """
    arrays = embedded_json(text, list)
    for array in arrays:
        items = [item for item in array if isinstance(item, dict)]
        if not items:
            continue
        edits = []
        for item in items:
            op = str(item.get("op") or "add").strip().lower()
            content = item.get("content") or ""
            anchor = item.get("anchor") or ""
            if not isinstance(content, str) or not isinstance(anchor, str):
                continue
            if content.strip() or (op == "delete" and anchor.strip()):
                edits.append(Edit(op=op, content=content, anchor=anchor, rationale=str(item.get("rationale") or "")))
        if edits:
            return edits
    if any(array == [] for array in arrays):
        return []
    raise EditParseError(f"no JSON array of edits in the optimizer reply: {text[:200]!r}")
