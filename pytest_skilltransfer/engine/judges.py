r"""Rule and qrels judges: score one attempt against one task's judge.

Semantics follow gbrain-evals `skillopt-v1` where it defines an op, and are strict elsewhere:

| op | passes when |
|---|---|
| section_present X | a line `^#{1,6}\s+X\s*$` (any case), X without leading `#`s, as gbrain matches it |
| section_contains X | a Markdown heading line whose text contains X (any case) |
| regex P | P finds a match, multiline, case-sensitive, `\d` `\w` `\b` ASCII-only as in JavaScript |
| contains S | S occurs in the text (case-sensitive, as in gbrain) |
| not_contains S | S does not occur in the text in any case |
| max_chars N / min_chars N | the length in UTF-16 code units (JavaScript's `length`) is <= N / >= N |
| no_refusal | the text is not empty and does not open with a refusal |
| tool_called T | the agent made at least one successful call of tool T through the tool loop |
| rubric C | a judge model, shown only the task, the answer and the criterion C, says it meets C |

Line ends: `\r\n` and `\r` count as `\n` for `section_present` and `regex`, as JavaScript's
multiline `^`/`$` treat them. A regex gets REGEX_TIMEOUT_SECONDS per check (the `regex` library's
timeout); a pattern that exceeds it fails that check, with a warning naming the task's file, line
and pattern, and the run goes on.

Differences from gbrain's `applyCheck` that remain, each pinned by a test: Python-only regex syntax
(`(?m)`, `(?P<n>...)`, `\A`, `\Z`; the seed loader warns about them) is accepted here where
JavaScript throws and gbrain fails the check; `\s` is ASCII whitespace here and Unicode in
JavaScript; a pattern that matches `\r` itself sees `\n`.

Extra ops registered with `register_op` (from a conftest's `pytest_skilltransfer_configure`) join
the table: the loader accepts them and reports use their description.

A rule judge scores hard = 1 when every check passes and soft = the fraction that pass. Rubric
checks mix with the others; `score` asks a `Grade` callable for them (see `rubric`), and a rubric
verdict that is not a clear majority pass (a judge error, a tie) fails its check.
A qrels judge scores soft = nDCG@k of the slugs the agent's successful tool calls returned
(deduplicated in call order, binary relevance; gbrain's score) and hard = 1 when every expected slug
is in the top k (gbrain has no pass/fail: a page at rank 3 is hard 1, soft 0.5).
"""

from __future__ import annotations

import math
import re
import warnings
from dataclasses import dataclass
from typing import Any, Callable

import regex

from ..guards import timed_regex
from ..guards.regex_size import too_large
from ..guards.run_scope import Scoped

RUBRIC_OP = "rubric"
JUDGE_KINDS = ("rule", "qrels", "rubric")
REGEX_FLAGS = regex.MULTILINE | regex.ASCII
REGEX_TIMEOUT_SECONDS = timed_regex.TIMEOUT_SECONDS
RegexTimeoutWarning = timed_regex.RegexTimeoutWarning
PatternTimeout = timed_regex.PatternTimeout

ARG_KINDS = ("string", "integer", "none")  # what a registered op's argument is
PRESENT, ABSENT, LENGTH = "present", "absent", "length"  # what a missed check means (`Op.miss`)


@dataclass(frozen=True)
class Op:
    """A rule op, defined once: its argument kind (`string`, `regex`, `integer`, `none`, `criterion`), its
    plain-English wording (with `{arg}`), what a miss means (`present`: the answer has what the check
    forbids; `absent`: it lacks what the check asks; `length`: too short or too long; None: other), and its
    test on the answer text (None: `tool_called` and `rubric`, decided from the attempt or by a judge)."""

    arg: str
    wording: str
    miss: str | None = None
    passes: Callable[[str, Any], bool] | None = None
    built_in: bool = True


OPS: dict[str, Op] = {}  # the built-in rule ops (below, after their tests)
_registered: Scoped[dict[str, Op]] = Scoped("judge_ops", dict)  # the ops this run's hook registered


def op_spec(name: str) -> Op | None:
    """A rule op by name: built in, or registered for this run; None when unknown."""
    return OPS.get(name) or _registered().get(name)


def register_op(name: str, passes: Callable[[str, Any], bool], arg: str = "string", description: str = "") -> None:
    """Add a rule op: `passes(answer_text, arg)`; `arg` is string, integer or none; `description` may use {arg}."""
    if name in OPS:
        raise ValueError(f"judge op {name!r} is built in; choose another name")
    if arg not in ARG_KINDS:
        raise ValueError(f"judge op {name!r}: arg must be one of {', '.join(ARG_KINDS)}, got {arg!r}")
    wording = description or f"passes the {name} check" + (" {arg}" if arg != "none" else "")
    _registered()[name] = Op(arg, wording, None, passes, built_in=False)


def rule_ops() -> tuple[str, ...]:
    """Built-in ops, then the registered ones."""
    return RULE_OPS + tuple(sorted(_registered()))


def miss_of(op: str) -> str | None:
    """What a missed check of `op` means (`Op.miss`); None for an unknown op."""
    spec = op_spec(op)
    return spec.miss if spec is not None else None


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
class RubricVerdict:
    """A judge model's majority verdict on one rubric criterion for one answer.

    `votes` holds one of "pass", "fail", "error" per judge sample; `passed` needs a strict majority
    of "pass". `agreement` is the share of votes equal to the most common one (None with one sample);
    a check is unstable when its votes disagree.
    """

    criterion: str
    passed: bool
    reason: str
    votes: tuple[str, ...]

    @property
    def agreement(self) -> float | None:
        if len(self.votes) < 2:
            return None
        return max(self.votes.count(v) for v in set(self.votes)) / len(self.votes)

    @property
    def unstable(self) -> bool:
        return len(set(self.votes)) > 1

    @property
    def errors(self) -> int:
        return self.votes.count("error")

    @property
    def uncertain(self) -> bool:
        """Unstable, or resting on a judge error: the check's outcome is not a clean verdict."""
        return self.unstable or self.errors > 0


Grade = Callable[[Check], RubricVerdict]


@dataclass(frozen=True)
class Verdict:
    """A judged attempt: hard (0/1), soft (0..1), the labels of the checks that failed, rubric verdicts."""

    hard: float
    soft: float
    failed: tuple[str, ...] = ()
    rubric: tuple[RubricVerdict, ...] = ()


def _heading_texts(text: str) -> list[str]:
    return [m.group(1).strip() for m in re.finditer(r"^ {0,3}#{1,6}[ \t]+(.+?)[ \t#]*$", text, re.M)]


def _lines(text: str) -> str:
    """CRLF and lone CR as LF: what JavaScript's multiline `^` and `$` see as line ends."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def utf16_length(text: str) -> int:
    """The length JavaScript reports: UTF-16 code units (an emoji outside the BMP counts 2)."""
    return len(text.encode("utf-16-le")) // 2


def compile_pattern(pattern: str) -> "regex.Pattern[str]":
    """A judge regex compiled with the judge's flags (raises regex.error when it does not compile, or
    would take too long to: `regex_size`)."""
    why = too_large(pattern)
    if why:
        raise regex.error(why)
    return regex.compile(pattern, REGEX_FLAGS)


def regex_search(pattern: str, text: str, timeout: float | None = None) -> bool:
    """Whether `pattern` matches `text` under the judge's flags, within the time limit (else PatternTimeout)."""
    return timed_regex.search(pattern, _lines(text), REGEX_FLAGS, timeout or REGEX_TIMEOUT_SECONDS) is not None


def _opening(text: str) -> str:
    stripped = re.sub(r"[*_#>`]+", "", text).strip().lower()
    return stripped[:160].replace("\u2019", "'")


def _section_present(text: str, arg: str) -> bool:
    heading = re.sub(r"^#+\s*", "", arg).strip()
    return re.search(rf"^#{{1,6}}\s+{re.escape(heading)}\s*$", _lines(text), re.M | re.I) is not None


def _section_contains(text: str, arg: str) -> bool:
    want = arg.casefold()
    return any(want in h.casefold() for h in _heading_texts(text))


def _no_refusal(text: str, _arg: Any) -> bool:
    opening = _opening(text)
    return bool(opening) and not opening.startswith(REFUSAL_OPENINGS)


OPS.update({
    "section_present": Op("string", 'has a Markdown heading whose whole text is "{arg}"', ABSENT, _section_present),
    "section_contains": Op("string", 'has a Markdown heading that mentions "{arg}"', ABSENT, _section_contains),
    "regex": Op("regex", "matches the regular expression /{arg}/ (multiline)", ABSENT,
                lambda text, arg: regex_search(arg, text)),
    "contains": Op("string", 'contains the exact text "{arg}"', ABSENT, lambda text, arg: arg in text),
    "not_contains": Op("string", 'never contains the phrase "{arg}" (in any case)', PRESENT,
                       lambda text, arg: arg.casefold() not in text.casefold()),
    "max_chars": Op("integer", "is at most {arg} characters long", LENGTH,
                    lambda text, arg: utf16_length(text) <= int(arg)),
    "min_chars": Op("integer", "is at least {arg} characters long", LENGTH,
                    lambda text, arg: utf16_length(text) >= int(arg)),
    "no_refusal": Op("none", "answers the request instead of refusing it", PRESENT, _no_refusal),
    "tool_called": Op("string", 'calls the "{arg}" tool before answering'),
    RUBRIC_OP: Op("criterion", 'meets this criterion, as a judge model reads it: "{arg}"'),
})
RULE_OPS = tuple(OPS)  # the built-in ops, in the order docs and schemas list them


class NoJudgeModel(ValueError):
    """A rubric check was scored without a judge model."""


def check_passes(check: Check, attempt: Attempt) -> bool:
    """Whether one rule check passes on an attempt (rubric checks need `score` with a `Grade`)."""
    if check.op == RUBRIC_OP:
        raise NoJudgeModel(f"rubric check {check.arg!r} needs a judge model (--judge MODEL)")
    if check.op == "tool_called":
        return check.arg in attempt.tools_called
    op = op_spec(check.op)
    if op is None or op.passes is None:
        raise ValueError(f"unknown judge op {check.op!r}; known ops: {', '.join(rule_ops())}")
    return bool(op.passes(attempt.text, check.arg))


def ndcg_at_k(retrieved: tuple[str, ...], expected: tuple[str, ...], k: int) -> float:
    """Binary-relevance nDCG@k of retrieved slugs against expected slugs."""
    relevant = set(expected)
    dcg = sum(1 / math.log2(rank + 2) for rank, slug in enumerate(retrieved[:k]) if slug in relevant)
    ideal = sum(1 / math.log2(rank + 2) for rank in range(min(len(relevant), k)))
    return dcg / ideal if ideal else 0.0


def _check_outcome(check: Check, attempt: Attempt, origin: str) -> str | None:
    """None when the check passes, else its failure label (a timed-out regex says so)."""
    try:
        return None if check_passes(check, attempt) else check.label()
    except PatternTimeout:
        where = origin or "a task"
        warnings.warn(RegexTimeoutWarning(
            f"{where}: regex {check.arg!r} ran past its {REGEX_TIMEOUT_SECONDS:g} s limit on a "
            f"{len(attempt.text)}-character answer; the check fails and the run goes on. Simplify the pattern "
            "(nested or overlapping repeats such as (a|aa)+ backtrack exponentially).", check.arg), stacklevel=2)
        return f"{check.label()} (timed out after {REGEX_TIMEOUT_SECONDS:g} s)"


def score(judge: Judge, attempt: Attempt, grade: Grade | None = None, origin: str = "") -> Verdict:
    """Judge one attempt; `grade` answers the rubric checks (a judge model behind it); `origin` (`file:line`
    of the task) names the task in warnings."""
    if judge.kind == "qrels":
        top = attempt.retrieved_slugs[: judge.k]
        missing = tuple(f"qrels: {slug} not in top {judge.k}" for slug in judge.expected_slugs if slug not in top)
        return Verdict(hard=0.0 if missing else 1.0, soft=ndcg_at_k(attempt.retrieved_slugs, judge.expected_slugs, judge.k), failed=missing)
    if judge.kind not in ("rule", "rubric"):
        raise ValueError(f"unknown judge kind {judge.kind!r}; known kinds: {', '.join(JUDGE_KINDS)}")
    rubric: list[RubricVerdict] = []
    failed: list[str] = []
    for check in judge.checks:
        if check.op == RUBRIC_OP:
            if grade is None:
                raise NoJudgeModel(f"rubric check {check.arg!r} needs a judge model (--judge MODEL)")
            verdict = grade(check)
            rubric.append(verdict)
            if not verdict.passed:
                failed.append(check.label())
        else:
            label = _check_outcome(check, attempt, origin)
            if label is not None:
                failed.append(label)
    total = len(judge.checks)
    soft = (total - len(failed)) / total if total else 0.0
    return Verdict(hard=1.0 if total and not failed else 0.0, soft=soft, failed=tuple(failed), rubric=tuple(rubric))


def has_rubric(judge: Judge) -> bool:
    """Whether a judge holds at least one rubric check."""
    return any(c.op == RUBRIC_OP for c in judge.checks)


def describe_check(check: Check) -> str:
    """Plain-English wording of a check, as an optimizer or a reviewer would read it."""
    op = op_spec(check.op)
    wording = op.wording.format(arg=check.arg) if op is not None else None
    return f"the answer {wording}" if wording else f"{check.op} {check.arg}"


