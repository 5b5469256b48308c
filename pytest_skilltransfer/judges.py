"""Rule and qrels judges: score one attempt against one task's judge.

Semantics follow gbrain-evals `skillopt-v1` where it defines an op, and are strict elsewhere:

| op | passes when |
|---|---|
| section_present X | a Markdown heading line whose whole text is X (any case, 1-6 `#`) |
| section_contains X | a Markdown heading line whose text contains X (any case) |
| regex P | `re.search(P, text, re.MULTILINE)` finds a match (case-sensitive unless P says so) |
| contains S | S occurs in the text (case-sensitive, as in gbrain) |
| not_contains S | S does not occur in the text in any case |
| max_chars N / min_chars N | len(text) <= N / len(text) >= N |
| no_refusal | the text is not empty and does not open with a refusal |
| tool_called T | the agent made at least one successful call of tool T through the tool loop |

A rule judge scores hard = 1 when every check passes and soft = the fraction that pass.
A qrels judge scores soft = nDCG@k of the slugs the agent's successful tool calls returned
(deduplicated in call order, binary relevance) and hard = 1 when every expected slug is in the top k.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Callable

TEXT_OPS = ("section_present", "section_contains", "regex", "contains", "not_contains")
BOUND_OPS = ("max_chars", "min_chars")
RULE_OPS = TEXT_OPS + BOUND_OPS + ("no_refusal", "tool_called")
JUDGE_KINDS = ("rule", "qrels")

REFUSAL_OPENINGS = (
    "i can't",
    "i cannot",
    "i can not",
    "i won't",
    "i will not",
    "i'm unable",
    "i am unable",
    "i'm not able",
    "i am not able",
    "i'm sorry, but",
    "sorry, i can't",
    "sorry, but i can't",
    "unfortunately, i can't",
    "unfortunately, i cannot",
    "as an ai, i cannot",
)


@dataclass(frozen=True)
class Check:
    """One rule check: an op and its argument."""

    op: str
    arg: Any = None

    def describe(self) -> str:
        """Plain English for optimizer prompts and failure reports."""
        return describe_check(self)

    def label(self) -> str:
        """Short `op=arg` form."""
        return self.op if self.arg in (None, "") else f"{self.op}={self.arg}"


@dataclass(frozen=True)
class Judge:
    """A task's judge: rule checks, or qrels over retrieved slugs."""

    kind: str
    checks: tuple[Check, ...] = ()
    expected_slugs: tuple[str, ...] = ()
    k: int = 5


@dataclass(frozen=True)
class Attempt:
    """What the agent produced for a task: final text, tools it called, slugs those calls returned."""

    text: str
    tools_called: tuple[str, ...] = ()
    retrieved_slugs: tuple[str, ...] = ()
    stop_reason: str = ""  # the provider's reason for ending the final reply (see models.stops)


@dataclass(frozen=True)
class Verdict:
    """A judged attempt: hard (0/1), soft (0..1) and the labels of the checks that failed."""

    hard: float
    soft: float
    failed: tuple[str, ...] = ()


def _heading_texts(text: str) -> list[str]:
    return [m.group(1).strip() for m in re.finditer(r"^ {0,3}#{1,6}[ \t]+(.+?)[ \t#]*$", text, re.M)]


def _opening(text: str) -> str:
    stripped = re.sub(r"[*_#>`]+", "", text).strip().lower()
    return stripped[:160].replace("\u2019", "'")


def _section_present(text: str, arg: str) -> bool:
    want = arg.lstrip("#").strip().casefold()
    return any(h.casefold() == want for h in _heading_texts(text))


def _section_contains(text: str, arg: str) -> bool:
    want = arg.casefold()
    return any(want in h.casefold() for h in _heading_texts(text))


def _no_refusal(text: str, _arg: Any) -> bool:
    opening = _opening(text)
    return bool(opening) and not opening.startswith(REFUSAL_OPENINGS)


TEXT_CHECKS: dict[str, Callable[[str, Any], bool]] = {
    "section_present": _section_present,
    "section_contains": _section_contains,
    "regex": lambda text, arg: re.search(arg, text, re.M) is not None,
    "contains": lambda text, arg: arg in text,
    "not_contains": lambda text, arg: arg.casefold() not in text.casefold(),
    "max_chars": lambda text, arg: len(text) <= int(arg),
    "min_chars": lambda text, arg: len(text) >= int(arg),
    "no_refusal": _no_refusal,
}


def check_passes(check: Check, attempt: Attempt) -> bool:
    """Whether one rule check passes on an attempt."""
    if check.op == "tool_called":
        return check.arg in attempt.tools_called
    try:
        rule = TEXT_CHECKS[check.op]
    except KeyError:
        raise ValueError(f"unknown judge op {check.op!r}; known ops: {', '.join(RULE_OPS)}") from None
    return rule(attempt.text, check.arg)


def ndcg_at_k(retrieved: tuple[str, ...], expected: tuple[str, ...], k: int) -> float:
    """Binary-relevance nDCG@k of retrieved slugs against expected slugs."""
    relevant = set(expected)
    dcg = sum(1 / math.log2(rank + 2) for rank, slug in enumerate(retrieved[:k]) if slug in relevant)
    ideal = sum(1 / math.log2(rank + 2) for rank in range(min(len(relevant), k)))
    return dcg / ideal if ideal else 0.0


def score(judge: Judge, attempt: Attempt) -> Verdict:
    """Judge one attempt."""
    if judge.kind == "qrels":
        top = attempt.retrieved_slugs[: judge.k]
        missing = tuple(f"qrels: {slug} not in top {judge.k}" for slug in judge.expected_slugs if slug not in top)
        return Verdict(hard=0.0 if missing else 1.0, soft=ndcg_at_k(attempt.retrieved_slugs, judge.expected_slugs, judge.k), failed=missing)
    if judge.kind != "rule":
        raise ValueError(f"unknown judge kind {judge.kind!r}; known kinds: {', '.join(JUDGE_KINDS)}")
    failed = tuple(c.label() for c in judge.checks if not check_passes(c, attempt))
    total = len(judge.checks)
    soft = (total - len(failed)) / total if total else 0.0
    return Verdict(hard=1.0 if total and not failed else 0.0, soft=soft, failed=failed)


def describe_check(check: Check) -> str:
    """Plain-English wording of a check, as an optimizer or a reviewer would read it."""
    arg = check.arg
    wording = {
        "section_present": f'has a Markdown heading whose whole text is "{arg}"',
        "section_contains": f'has a Markdown heading that mentions "{arg}"',
        "regex": f"matches the regular expression /{arg}/ (multiline)",
        "contains": f'contains the exact text "{arg}"',
        "not_contains": f'never contains the phrase "{arg}" (in any case)',
        "max_chars": f"is at most {arg} characters long",
        "min_chars": f"is at least {arg} characters long",
        "no_refusal": "answers the request instead of refusing it",
        "tool_called": f'calls the "{arg}" tool before answering',
    }.get(check.op)
    return f"the answer {wording}" if wording else f"{check.op} {arg}"


def describe_judge(judge: Judge) -> list[str]:
    """Plain-English criteria of a judge."""
    if judge.kind == "qrels":
        return [f"the agent retrieves the relevant page(s) {', '.join(judge.expected_slugs)} with a tool call"]
    return [describe_check(c) for c in judge.checks]
