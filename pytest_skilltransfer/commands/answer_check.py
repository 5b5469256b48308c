"""`python -m pytest_skilltransfer check SEED TASK_ID ANSWER_FILE`: which checks of one task an answer passes.

For writing and debugging judges: the answer is scored exactly as a rollout's final text is, every
check a run grades: rule checks, and rubric checks through the judge model (`--judge MODEL`, else the
seed's `[judge] model`; `sim-judge` is a free simulated one) with the seed's votes per check. Without a
judge model a rubric check is listed as not checked, saying how to grade it. Regex checks run with the
judge's flags, stated in the output. Exit 0 when every check ran passes, 1 when one fails, 2 for bad input.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..engine.constant_answer import constant_answer
from ..engine.judges import RUBRIC_OP, Attempt, Check, PatternTimeout, check_passes, describe_check
from ..engine.seeds import load_seed
from ..engine.seed_data import Seed, SeedError, Task
from ..models.base import ModelError

REGEX_FLAGS_NOTE = ("regex checks: multiline (^ and $ match at every line), case-sensitive, \\d \\w \\b ASCII-only, "
                    "\\r\\n read as \\n (the judge's flags in a run)")


def rubric_grader(seed: Seed, task: Task, text: str, judge: str | None):
    """A function grading one rubric check of `task` on `text` with the judge model (None: no judge named),
    or the reason it cannot be built."""
    from ..engine.ledger import CallCache, Meter
    from ..engine.rubric import JudgeSetup, RubricJudge
    from ..engine.slots import ModelSlots
    from ..models.registry import resolve_model

    name = judge or seed.judge.model
    if not name:
        return None, ("no judge model: pass --judge MODEL or set [judge] model in seed.toml "
                      "(sim-judge is a free simulated judge)")
    try:
        model = resolve_model(name)
    except ModelError as exc:
        return None, f"judge {name}: {exc}"
    samples = seed.judge.samples or 1
    rubric = RubricJudge(JudgeSetup(model, samples), CallCache(ModelSlots(lambda _model: 1)))
    meter = Meter()
    return (lambda check: rubric.verdict(task.text, text, str(check.arg), meter)), f"judge {name}, {samples} vote(s)"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m pytest_skilltransfer check",
                                     description="Show which checks of one task an answer passes.")
    parser.add_argument("seed", help="the seed folder")
    parser.add_argument("task_id", help="a task id of its benchmark.jsonl or held-out.jsonl")
    parser.add_argument("answer_file", help="a file holding the answer text ('-': standard input)")
    parser.add_argument("--judge", metavar="MODEL", help="the judge model for rubric checks (default: the seed's "
                                                         "[judge] model; sim-judge is a free simulated one)")
    args = parser.parse_args(argv)
    try:
        seed = load_seed(Path(args.seed))
    except SeedError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    tasks = {task.id: task for task in (*seed.train, *seed.val, *seed.test)}
    task = tasks.get(args.task_id)
    if task is None:
        print(f"error: {seed.name} has no task {args.task_id!r}; its tasks: {', '.join(sorted(tasks))}", file=sys.stderr)
        return 2
    try:
        text = sys.stdin.read() if args.answer_file == "-" else Path(args.answer_file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        print(f"error: cannot read the answer {args.answer_file}: {exc}", file=sys.stderr)
        return 2
    if task.judge.kind == "qrels":
        print(f"{task.id} ({task.origin}) is judged by retrieved pages (qrels), not by its text: nothing to check")
        return 2
    attempt = Attempt(text=text)
    failed = ran = 0
    print(f"{seed.name} {task.id} ({task.origin}): {task.text.splitlines()[0][:100] if task.text else ''}")
    if any(c.op == "regex" for c in task.judge.checks):
        print(f"  {REGEX_FLAGS_NOTE}")
    grade, judged_by = (None, "")
    if any(c.op == RUBRIC_OP for c in task.judge.checks):
        grade, judged_by = rubric_grader(seed, task, text, args.judge)
    for check in task.judge.checks:
        passed, why = _outcome(check, attempt, task, grade, judged_by)
        if passed is None:
            print(f"  not checked  {check.label()}  ({why})")
            continue
        ran += 1
        failed += not passed
        print(f"  {'pass' if passed else 'FAIL'}  {check.label()}  ({why})")
    print(f"{ran - failed}/{ran} checks pass")
    print(constant_answer_line(seed.test, text))
    return 1 if failed else 0


def _outcome(check: Check, attempt: Attempt, task: Task, grade, judged_by: str) -> tuple[bool | None, str]:
    """(passed, why) of one check; passed None when it could not be graded."""
    if check.op == RUBRIC_OP:
        if grade is None:
            return None, f"a rubric check: {judged_by}"
        try:
            verdict = grade(check)
        except ModelError as exc:
            return None, f"a rubric check: the judge could not answer: {str(exc).splitlines()[0]}"
        votes = "/".join(verdict.votes)
        return verdict.passed, f"{judged_by}: {votes}; {verdict.reason}"
    try:
        return check_passes(check, attempt), describe_check(check)
    except PatternTimeout as exc:  # as in a run: the check fails, and says why
        return False, (f"{exc}: it fails in a run too; simplify it in {task.origin} (nested or overlapping "
                       "repeats such as (a|aa)+ backtrack exponentially)")


def constant_answer_line(held_out: Any, text: str) -> str:
    """How many held-out tasks this one answer passes, as a fixed answer (rule checks only): at half or more, the
    seed's checks cannot tell a right answer from a wrong one."""
    found = constant_answer(held_out, [text])
    return f"as a fixed answer on every held-out task: {found.text()}"
