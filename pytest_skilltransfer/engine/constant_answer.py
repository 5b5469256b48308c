"""Checks that a constant answer passes measure nothing: measured for free from a run's own answers.

For a seed's held-out tasks, every answer the run recorded (any arm, any task) is tried as a fixed answer against
every task's rule checks (`judges.check_passes`, as a rollout's final text is scored; no model call). The share of
tasks the best such answer passes is the seed's **constant-answer share**; at half of the tasks or more the checks
cannot tell a right answer from a wrong one, and the item is flagged. Rubric checks need a judge model, so they
are left out (a task whose checks are all rubric is not counted) and the result says so; qrels tasks (retrieval)
are left out too.

Before any answer exists, a seed whose held-out tasks all carry the same rule checks and no rubric is flagged at
collection (`identical_checks`): any answer that passes one task passes every one.

The transferred arm's answers **collapse** when they hold far fewer distinct normalised answers (case and
whitespace folded; with regex checks, only the parts they match, such as a tagging seed's labels) than the
baseline's: at most half as many, and at most a quarter of the tasks (a tagger's 24 right answers can share
about a dozen label pairs; 2 for 24 tasks is a constant).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from .judges import RUBRIC_OP, Attempt, PatternTimeout, check_passes, compile_pattern

FLAG_SHARE = 0.5


@dataclass(frozen=True)
class ConstantAnswer:
    """The best fixed answer's pass count over the held-out tasks its rule checks can judge."""

    passes: int
    tasks: int
    answer: str
    rubric_left_out: int  # tasks with rubric checks (judged on their rule checks only, or not at all)

    @property
    def share(self) -> float:
        return self.passes / self.tasks if self.tasks else 0.0

    @property
    def flagged(self) -> bool:
        return self.tasks > 0 and self.passes >= FLAG_SHARE * self.tasks

    def text(self) -> str:
        left = (f"; rubric checks left out on {self.rubric_left_out} task(s) (they need a judge model)"
                if self.rubric_left_out else "")
        if self.flagged:
            return (f"a constant answer passes {self.passes}/{self.tasks}: these checks cannot tell a right answer "
                    f"from a wrong one{left}")
        return f"a constant answer passes at most {self.passes}/{self.tasks} held-out task(s){left}"

    def as_dict(self) -> dict[str, Any]:
        return {"passes": self.passes, "tasks": self.tasks, "share": round(self.share, 4), "flagged": self.flagged,
                "answer": self.answer[:200], "rubric_left_out": self.rubric_left_out, "text": self.text(),
                "checks": "rule checks only"}


def _rule_checks(task: Any) -> tuple[Any, ...] | None:
    judge = task.judge
    if judge.kind == "qrels":
        return None
    rules = tuple(c for c in judge.checks if c.op != RUBRIC_OP)
    return rules or None


def _passes(checks: tuple[Any, ...], answer: str) -> bool:
    attempt = Attempt(answer)
    try:
        return all(check_passes(c, attempt) for c in checks)
    except PatternTimeout:
        return False


def constant_answer(tasks: Iterable[Any], answers: Iterable[str]) -> ConstantAnswer:
    """The best of `answers`, each tried as a fixed answer on every task's rule checks."""
    tasks = list(tasks)
    judged = [(t, rules) for t in tasks if (rules := _rule_checks(t)) is not None]
    rubric = sum(any(c.op == RUBRIC_OP for c in t.judge.checks) for t in tasks)
    best = ConstantAnswer(0, len(judged), "", rubric)
    by_checks: dict[tuple[Any, ...], list[Any]] = {}
    for task, rules in judged:
        by_checks.setdefault(rules, []).append(task)
    for answer in sorted(set(answers)):
        passes = sum(len(group) for rules, group in by_checks.items() if _passes(rules, answer))
        if passes > best.passes:
            best = ConstantAnswer(passes, len(judged), answer, rubric)
            if passes == len(judged):
                break
    return best


def identical_checks(tasks: Iterable[Any]) -> bool:
    """Whether every held-out task carries the same rule checks and no rubric (so the checks alone decide that
    one answer passes all of them or none)."""
    tasks = list(tasks)
    if len(tasks) < 2 or any(t.judge.kind != "rule" or any(c.op == RUBRIC_OP for c in t.judge.checks)
                             for t in tasks):
        return False
    return len({tuple(t.judge.checks) for t in tasks}) == 1


def normalised(answer: str, patterns: tuple[str, ...] = ()) -> str:
    """An answer with case and whitespace folded; with the seed's regex checks, only the parts they match (the
    labels a tagging seed checks, not the free text around them)."""
    if patterns:
        found = []
        for pattern in patterns:
            try:
                match = compile_pattern(pattern).search(answer)
            except Exception:  # a pattern the judge cannot compile fails its check; it adds nothing here
                match = None
            found.append(match.group(0) if match else "")
        if any(found):
            answer = "\n".join(found)
    return " ".join(answer.lower().split())


def regex_patterns(tasks: Iterable[Any]) -> tuple[str, ...]:
    """The distinct regex checks of the tasks, in order."""
    seen: dict[str, None] = {}
    for task in tasks:
        for check in task.judge.checks:
            if check.op == "regex" and isinstance(check.arg, str):
                seen.setdefault(check.arg, None)
    return tuple(seen)


@dataclass(frozen=True)
class Collapse:
    """Distinct normalised answers of the baseline and the transferred arm over the held-out tasks."""

    baseline: int
    transferred: int
    tasks: int

    @property
    def collapsed(self) -> bool:
        return self.tasks > 1 and self.transferred * 2 <= self.baseline and self.transferred * 4 <= self.tasks

    def text(self) -> str:
        return (f"the transferred skill's answers collapse: {self.transferred} distinct answer(s) over {self.tasks} "
                f"task(s), against {self.baseline} for the baseline")

    def as_dict(self) -> dict[str, Any]:
        return {"baseline": self.baseline, "transferred": self.transferred, "tasks": self.tasks,
                "collapsed": self.collapsed}


def collapse(baseline: Iterable[str], transferred: Iterable[str], tasks: int, patterns: tuple[str, ...] = ()) -> Collapse:
    """Distinct normalised answers of each arm (`normalised`, through the seed's regex checks when it has any)."""
    return Collapse(len({normalised(a, patterns) for a in baseline}),
                    len({normalised(a, patterns) for a in transferred}), tasks)
