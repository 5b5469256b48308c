"""`python -m pytest_skilltransfer check SEED TASK_ID ANSWER_FILE`: which checks of one task an answer passes.

For writing and debugging judges: the answer is scored exactly as a rollout's final text is (rule
checks; a rubric check needs a judge model and is listed as not checked here). Exit 0 when every
check ran passes, 1 when one fails, 2 for bad input.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..engine.constant_answer import constant_answer
from ..engine.judges import RUBRIC_OP, Attempt, PatternTimeout, check_passes, describe_check
from ..engine.seeds import load_seed
from ..engine.seed_data import SeedError


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m pytest_skilltransfer check",
                                     description="Show which checks of one task an answer passes.")
    parser.add_argument("seed", help="the seed folder")
    parser.add_argument("task_id", help="a task id of its benchmark.jsonl or held-out.jsonl")
    parser.add_argument("answer_file", help="a file holding the answer text ('-': standard input)")
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
    failed = 0
    print(f"{seed.name} {task.id} ({task.origin}): {task.text.splitlines()[0][:100] if task.text else ''}")
    for check in task.judge.checks:
        if check.op == RUBRIC_OP:
            print(f"  not checked  {check.label()}  (a rubric check: graded by the judge model in a run)")
            continue
        try:
            passed, why = check_passes(check, attempt), describe_check(check)
        except PatternTimeout as exc:  # as in a run: the check fails, and says why
            passed, why = False, (f"{exc}: it fails in a run too; simplify it in {task.origin} (nested or overlapping "
                                  "repeats such as (a|aa)+ backtrack exponentially)")
        failed += not passed
        print(f"  {'pass' if passed else 'FAIL'}  {check.label()}  ({why})")
    ran = sum(1 for c in task.judge.checks if c.op != RUBRIC_OP)
    print(f"{ran - failed}/{ran} checks pass")
    print(constant_answer_line(seed.test, text))
    return 1 if failed else 0


def constant_answer_line(held_out: Any, text: str) -> str:
    """How many held-out tasks this one answer passes, as a fixed answer (rule checks only): at half or more, the
    seed's checks cannot tell a right answer from a wrong one."""
    found = constant_answer(held_out, [text])
    return f"as a fixed answer on every held-out task: {found.text()}"
