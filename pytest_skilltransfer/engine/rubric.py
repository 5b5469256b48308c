"""Model-graded checks: the judge request, the verdict parsing, the majority vote and calibration.

A rubric check `{"op": "rubric", "arg": "<criterion>"}` is answered by a judge model. The judge
request holds exactly three things: the task, the answer and the criterion (never another task's
data). The reply is a verdict `{"verdict": "pass" | "fail", "reason": "<one line>"}`, forced through
the provider's structured output (OpenAI) or a forced tool call (Anthropic) and parsed robustly
from plain text otherwise. An unusable reply is asked again once; a second unusable reply is a
judge error, which never counts as a pass.

With `samples` k > 1 the judge is asked k times (distinct sample ids) and the majority decides;
the check's agreement is the share of votes on the majority side, and a check whose votes differ
is unstable. Every judge call goes through the seed's call cache and the phase's meter under the
role `judge`, so it is recorded, replayed and priced like any other call.

Calibration: a seed's `judge-calibration.jsonl` lists answers with the verdict a person expects;
the judge's accuracy on it is measured before the seed's items run and reported with an exact
(Clopper-Pearson) 95% interval.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..evidence.stats import interval_of_sum
from ..guards.json_text import embedded_json
from ..guards.prompt_format import ANSWER_HEADER, CRITERION_HEADER, TASK_HEADER
from ..models.base import Message, Model, ModelCallError, Reply, Request, ResponseSchema
from .judges import Grade, RubricVerdict
from .ledger import CallCache, Meter

JUDGE_ROLE = "judge"
VERDICT_TOOL = "record_verdict"
VERDICT_SCHEMA = ResponseSchema(
    name=VERDICT_TOOL,
    description="Record whether the answer meets the criterion, with a one-line reason.",
    schema={
        "type": "object",
        "properties": {
            "verdict": {"type": "string", "enum": ["pass", "fail"]},
            "reason": {"type": "string", "description": "one line: why the answer meets the criterion or not"},
        },
        "required": ["verdict", "reason"],
        "additionalProperties": False,
    },
)
JUDGE_SYSTEM = """\
You grade one answer against one criterion. Read the task, the answer and the criterion, then
decide whether the answer meets the criterion. Judge only the criterion, not style or length
unless the criterion asks for them. Reply with a verdict, "pass" or "fail", and a one-line reason,
as JSON: {"verdict": "pass" | "fail", "reason": "<one line>"}.
"""
RETRY_NOTE = 'Your reply could not be read. Reply with ONLY the JSON object {"verdict": "pass" | "fail", "reason": "<one line>"}.'
JUDGE_MAX_TOKENS = 256
REASON_CHARS = 200
DEFAULT_MIN_ACCURACY = 0.8


def judge_request(task: str, answer: str, criterion: str, sample_id: int = 0) -> Request:
    """The judge request: the task, the answer and the criterion, nothing else."""
    user = f"{TASK_HEADER}\n{task.strip()}\n\n{ANSWER_HEADER}\n{answer.strip()}\n\n{CRITERION_HEADER}\n{criterion.strip()}\n"
    return Request(system=JUDGE_SYSTEM, messages=(Message("user", user),), max_tokens=JUDGE_MAX_TOKENS,
                   sample_id=sample_id, response_schema=VERDICT_SCHEMA)


class VerdictParseError(ValueError):
    """A judge reply held no usable verdict."""


def _one_line(text: str) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= REASON_CHARS else line[: REASON_CHARS - 3] + "..."


def _from_mapping(value: Any) -> tuple[bool, str] | None:
    if not isinstance(value, dict):
        return None
    verdict = str(value.get("verdict", "")).strip().lower()
    if verdict not in ("pass", "fail"):
        return None
    return verdict == "pass", _one_line(value.get("reason") or "")


def parse_verdict(reply: Reply) -> tuple[bool, str]:
    """(passed, reason) from the forced tool call, a JSON object in the text, or a leading PASS/FAIL word."""
    for call in reply.tool_calls:
        parsed = _from_mapping(call.arguments) if call.name == VERDICT_TOOL else None
        if parsed is not None:
            return parsed
    for value in embedded_json(reply.text, dict):
        parsed = _from_mapping(value)
        if parsed is not None:
            return parsed
    word = re.match(r"\W*(?:verdict\W*)?(pass|fail)\b[\s:.,-]*(.*)", reply.text.strip(), re.I | re.S)
    if word:
        return word.group(1).lower() == "pass", _one_line(word.group(2))
    raise VerdictParseError(f"no verdict in the judge reply: {reply.text[:200]!r}")


def majority(votes: tuple[str, ...]) -> bool:
    """A pass needs a strict majority of "pass" votes; ties and judge errors do not pass."""
    return votes.count("pass") * 2 > len(votes)


@dataclass(frozen=True)
class JudgeSetup:
    """The judge of one seed: the model, how many samples per check, the calibration threshold."""

    model: Model
    samples: int = 1
    min_accuracy: float = DEFAULT_MIN_ACCURACY


class RubricJudge:
    """Asks a judge model about rubric criteria through the seed's call cache, metered as `judge`.

    The cache's slots keep the judge model's calls within its concurrency, whatever the number of
    agent threads that ask for verdicts.
    """

    def __init__(self, setup: JudgeSetup, cache: CallCache):
        self.setup = setup
        self.cache = cache

    def _call(self, request: Request, meter: Meter) -> Reply:
        return self.cache.call(self.setup.model, request, meter, JUDGE_ROLE)

    def _vote(self, request: Request, meter: Meter) -> tuple[str, str]:
        reply = self._call(request, meter)
        try:
            passed, reason = parse_verdict(reply)
        except VerdictParseError:
            retry = Request(system=request.system,
                            messages=request.messages + (Message("assistant", reply.text), Message("user", RETRY_NOTE)),
                            max_tokens=request.max_tokens, sample_id=request.sample_id,
                            response_schema=request.response_schema)
            second = self._call(retry, meter)
            try:
                passed, reason = parse_verdict(second)
            except VerdictParseError as exc:
                return "error", f"judge error: unusable reply after one retry ({exc})"
        return ("pass" if passed else "fail"), reason

    def verdict(self, task: str, answer: str, criterion: str, meter: Meter) -> RubricVerdict:
        """The majority verdict of `samples` judge calls on one criterion."""
        votes, reasons = [], []
        for sample in range(self.setup.samples):
            try:
                vote, reason = self._vote(judge_request(task, answer, criterion, sample), meter)
            except ModelCallError as exc:
                if hasattr(exc, "with_phase"):  # a cassette miss: the phase is the judge's
                    raise exc.with_phase(JUDGE_ROLE) from exc.__cause__
                raise
            votes.append(vote)
            reasons.append(reason)
        passed = majority(tuple(votes))
        side = "pass" if passed else next((v for v in ("fail", "error") if v in votes), "pass")
        reason = next((r for v, r in zip(votes, reasons) if v == side), reasons[0] if reasons else "")
        return RubricVerdict(criterion=criterion, passed=passed, reason=reason, votes=tuple(votes))

    def grader(self, task: str, answer: str, meter: Meter) -> Grade:
        """A `Grade` for `judges.score`, bound to one task and answer."""
        return lambda check: self.verdict(task, answer, str(check.arg), meter)


# -- calibration ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class CalibrationItem:
    """One line of `judge-calibration.jsonl`: an answer, a criterion and the verdict a person expects."""

    answer: str
    criterion: str
    expected: bool
    task: str = ""
    origin: str = ""


@dataclass(frozen=True)
class Disagreement:
    """A calibration line where the judge and the person differ."""

    item: CalibrationItem
    verdict: RubricVerdict


@dataclass(frozen=True)
class Calibration:
    """The judge's measured accuracy on a seed's calibration file."""

    model_id: str
    samples: int
    n: int
    correct: int
    low: float
    high: float
    min_accuracy: float
    disagreements: tuple[Disagreement, ...]
    unstable: int

    @property
    def accuracy(self) -> float:
        return self.correct / self.n if self.n else 0.0

    @property
    def passed(self) -> bool:
        return self.n > 0 and self.accuracy >= self.min_accuracy - 1e-9

    def summary(self) -> str:
        """`sim-judge: 11/12 = 0.92 [0.62, 1.00] (min 0.80)`."""
        return (f"{self.model_id}: {self.correct}/{self.n} = {self.accuracy:.2f} "
                f"[{self.low:.2f}, {self.high:.2f}] (min {self.min_accuracy:.2f})")

    def failure_message(self, seed: str) -> str:
        """Why a seed's items fail: the accuracy and every disagreement."""
        lines = [f"judge calibration failed for seed {seed!r}: accuracy {self.summary()}; "
                 f"{len(self.disagreements)} disagreement(s) with the expected verdicts:"]
        for d in self.disagreements:
            want = "pass" if d.item.expected else "fail"
            got = "pass" if d.verdict.passed else "fail"
            lines.append(f"  {d.item.origin}: expected {want}, judge said {got} ({'/'.join(d.verdict.votes)}): "
                         f"{d.verdict.reason}")
            lines.append(f"      criterion: {d.item.criterion}")
            lines.append(f"      answer: {_one_line(d.item.answer)}")
        lines.append("Fix the judge (another --judge model, more --judge-samples, sharper criteria) or the expected "
                     "verdicts; the threshold is [judge] min_accuracy in seed.toml or --judge-min-accuracy.")
        return "\n".join(lines)


def calibrate(judge: RubricJudge, items: tuple[CalibrationItem, ...], meter: Meter) -> Calibration:
    """Measure the judge on every calibration line."""
    disagreements, correct, unstable = [], 0, 0
    for item in items:
        verdict = judge.verdict(item.task, item.answer, item.criterion, meter)
        unstable += verdict.unstable
        if verdict.passed == item.expected:
            correct += 1
        else:
            disagreements.append(Disagreement(item, verdict))
    low, high = interval_of_sum(correct, len(items))  # exact Clopper-Pearson 95%
    setup = judge.setup
    return Calibration(setup.model.model_id, setup.samples, len(items), correct, low, high, setup.min_accuracy,
                       tuple(disagreements), unstable)


# -- judge families ----------------------------------------------------------------------------


def model_family(model: Model) -> str:
    """The provider family of a model: the SDK provider, the simulator, or the backend's own family."""
    family = getattr(model, "family", None)
    if family:
        return str(family)
    target = getattr(model, "target", None)
    if target is not None and getattr(target, "provider", None):
        return str(target.provider)
    return type(model).__name__


def family_warning(judge: Model, graded: list[Model]) -> str | None:
    """A warning when the judge shares a provider family with a model it grades (self-preference risk)."""
    family = model_family(judge)
    same = sorted({m.model_id for m in graded if model_family(m) == family})
    if not same:
        return None
    return (f"judge {judge.model_id} shares the provider family {family!r} with {', '.join(same)}, which it grades; "
            "judges tend to favour their own family's answers: prefer a judge from another family")
