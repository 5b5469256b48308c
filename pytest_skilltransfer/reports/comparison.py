"""Regression against a base ref, as reports show it: the verdict words and one row per compared item,
from the items' `compare` records in the JSON report (written by `plugin.compare_to`)."""

from __future__ import annotations

import difflib
import math
import shlex
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..evidence.item_record import ItemRecord

VERDICT_WORDS = {"pass": "ok", "fail": "regressed", "new": "new (no snapshot at the ref)",
                 "unscored": "not compared (the snapshot at the ref has no per-task scores)",
                 "off": "not gated (regression_tolerance off)"}


def regression_verdict(gate: dict[str, Any]) -> str:
    """The regression gate's verdict in a gate record: pass or fail, "off" when it did not run."""
    for decision in gate.get("gates", []):
        if decision["gate"] == "regression_tolerance":
            return str(decision["verdict"])
    return "off"


def comparisons(results: list[ItemRecord]) -> tuple[str, list[tuple[str, str, str, str]]]:
    """The heading `regression against REF (commit): counts` and one (item, before, after, verdict)
    row per item compared with the base ref; ("", []) without a ref."""
    compared = [r for r in results if r.compare]
    if not compared:
        return "", []
    first = compared[0].compare
    counts = {v: sum(1 for r in compared if r.compare["verdict"] == v) for v in VERDICT_WORDS if v != "pass"}
    said = ", ".join(f"{n} {VERDICT_WORDS[v]}" for v, n in counts.items() if n) or "no regression"
    short = sum(1 for r in compared if "reference_tasks" in r.compare)
    if short:
        said += f"; {short} compared on fewer tasks than the held-out set (a short reference at the ref)"
    rows = []
    for result in compared:
        record = result.compare
        rows.append((result.item or result.seed, "-" if record["before"] is None else f"{record['before']:.2f}",
                     f"{record['after']:.2f}", VERDICT_WORDS.get(record["verdict"], record["verdict"])
                     + short_note(record)))
    return f"regression against {first['ref']} ({first['commit'][:7]}): {said}", rows


def short_note(record: dict[str, Any]) -> str:
    """` (the snapshot at the ref holds 6 of 24 held-out tasks: ...)` for a comparison on a reference written by a
    run that stopped early and kept no scores past its stop; "" otherwise."""
    if "reference_tasks" not in record:
        return ""
    return (f" (the snapshot at the ref holds {record['reference_tasks']} of {record['of']} held-out tasks: a "
            "regression on the others cannot be seen; re-make it there with --snapshot-update)")


def summary_lines(results: list[ItemRecord]) -> list[str]:
    """For the terminal: the heading and the items whose score or verdict needs a look, the rest counted."""
    heading, rows = comparisons(results)
    if not heading:
        return []
    shown = [row for row in rows if row[3] != VERDICT_WORDS["pass"] or row[1] != row[2]]
    lines = [heading, *(f"  {item}: {before} -> {after}  {verdict}" for item, before, after, verdict in shown)]
    if len(shown) < len(rows):
        lines.append(f"  ({len(rows) - len(shown)} more item(s) unchanged and passing; every item is in the "
                     "Markdown and JSON reports)")
    return lines


LEARNED_FENCE = "## Learned skill\n\n````markdown\n"  # how a snapshot holds the learned skill (`plugin.snapshots`)
TASKS_SHOWN = 6
ANSWER_CHARS = 300  # of each dropped task's answer now, in the cause record (the snapshot at the ref keeps none)


def label(compare: dict[str, Any]) -> str:
    """`vs main (1a2b3c4)`: what an item's change is measured against."""
    commit = str(compare.get("commit", ""))[:7]
    return f"vs {compare.get('ref', 'the base')}" + (f" ({commit})" if commit else "")


def moved_record(result: ItemRecord) -> dict[str, Any]:
    """The record of an item's move with its cause: against the base ref (`compare`, with `--compare-to`),
    else against the committed snapshot (`snapshot_change`, when the regression gate failed there); {}."""
    compare = result.compare or {}
    return compare if compare.get("cause") is not None else (result.snapshot_change or {})


def accept_tolerance(gate: dict[str, Any]) -> float | None:
    """The least `regression_tolerance` that accepts a failed regression gate's drop (its interval's upper
    bound, rounded up to 0.01); None when the gate did not fail."""
    for decision in gate.get("gates", []):
        if decision["gate"] == "regression_tolerance" and decision["verdict"] == "fail" and decision.get("ci_high") is not None:
            return math.ceil(-decision["ci_high"] * 100 - 1e-9) / 100
    return None


def dropped_tasks(per_task: dict[str, float], result: ItemRecord) -> list[dict[str, Any]]:
    """The held-out tasks scoring lower now than in the snapshot at the ref, with the checks they now miss and
    the start of their answer now (the snapshot at the ref keeps scores, not answers)."""
    rows = []
    transferred = result.scores.transferred
    for task in transferred.tasks if transferred is not None else ():
        before = per_task.get(task.task_id)
        if before is None or task.hard >= before:
            continue
        missed = sorted({label for sample in task.samples for label in sample.failed})
        answer = next((s.answer for s in task.samples if s.answer is not None), None)
        rows.append({"task": task.task_id, "before": before, "after": task.hard, "missed": missed,
                     "answer": None if answer is None else answer[:ANSWER_CHARS]})
    return rows


def learned_at(snapshot: str) -> str | None:
    """The learned skill a snapshot holds, None when it holds none."""
    start = snapshot.find(LEARNED_FENCE)
    if start < 0:
        return None
    body = snapshot[start + len(LEARNED_FENCE):]
    end = body.rfind("\n````")
    return body[:end] + "\n" if end >= 0 else None


def newly_missed(cause: dict[str, Any]) -> list[tuple[str, int]]:
    """Each check the dropped tasks now miss, with how many of them miss it; most first."""
    counts: dict[str, int] = {}
    for task in cause.get("tasks", []):
        for check in task["missed"]:
            counts[check] = counts.get(check, 0) + 1
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))


def learned_diff(result: ItemRecord) -> list[str]:
    """The learned skill at the ref against this run's, as a unified diff ([] when equal or unknown, or when
    this run's nights accepted no edit)."""
    before = (moved_record(result).get("cause") or {}).get("learned_before")
    if before is None or result.learned_skill == result.seed_skill:
        return []  # no night accepted an edit: the seed's diff says it all
    return list(difflib.unified_diff(before.splitlines(), str(result.learned_skill).splitlines(),
                                     "learned skill (at the ref)", "learned skill (now)", lineterm="", n=1))


def accept_commands(result: ItemRecord) -> list[tuple[str, str]]:
    """(what, text) that accepts a regression on purpose: the seed.toml line the reviewer sees in the diff,
    and the command that checks it; [] when nothing regressed."""
    compare = moved_record(result)
    cause = compare.get("cause") or {}
    tolerance = cause.get("accept_tolerance")
    if tolerance is None:
        return []
    where = cause.get("seed_toml") or f"seeds/{result.seed}/seed.toml"
    said = [("accept the drop on purpose", f"[thresholds] regression_tolerance = {tolerance:g}  # in {where}; "
             "the ini's skilltransfer_regression_tolerance, a marker or the command line win over it")]
    if result.item:
        against = [f"--transfer-compare-to={compare['ref']}"] if result.compare is compare else []
        said.append(("check it passes then", shlex.join([
            "pytest", result.item, "--transfer-pair", f"{result.source}->{result.target}", *against,
            f"--transfer-regression-tolerance={tolerance:g}"])))
    return said


def cause_lines(result: ItemRecord) -> list[str]:
    """The cause of a change against the base ref, as text (terminal and Markdown): before -> after, the
    checks newly missed on the tasks that dropped, the seed's diff from the ref, the learned skill's change,
    and how to accept the drop on purpose; [] when the item did not move against the ref."""
    compare = moved_record(result)
    cause = compare.get("cause")
    if cause is None:
        return []
    before = "-" if compare.get("before") is None else f"{compare['before']:.2f}"
    lines = [f"{label(compare)}: transferred {before} -> {compare['after']:.2f} "
             f"({VERDICT_WORDS.get(compare.get('verdict', ''), compare.get('verdict', ''))})"]
    tasks = cause.get("tasks", [])
    if tasks:
        lines.append(f"  held-out tasks lower than at {compare.get('ref', 'the ref')}: {len(tasks)}; checks they now miss: "
                     + ", ".join(f"{check} ({n} of {len(tasks)})" for check, n in newly_missed(cause)))
        for t in tasks[:TASKS_SHOWN]:
            lines.append(f"    {t['task']}: {t['before']:g} -> {t['after']:g}, misses {', '.join(t['missed']) or 'none'}")
            if t.get("answer") is not None:
                lines.append(f"      answer now: {' '.join(t['answer'].split())[:100]}")
        if len(tasks) > TASKS_SHOWN:
            lines.append(f"    ({len(tasks) - TASKS_SHOWN} more)")
    diff = cause.get("seed_diff") or ""
    lines.append(f"  the seed's files {label(compare)} (git diff; SKILL.md, tasks, seed.toml):" if diff
                 else f"  the seed's files are as at {compare.get('ref', 'the ref')} (no diff): the change is elsewhere "
                      "(models, options, cassettes)")
    lines += [f"    {line}" for line in diff.splitlines()]
    moved = learned_diff(result)
    if moved:
        lines.append("  the learned skill now against the one at the ref:")
        lines += [f"    {line}" for line in moved]
    for what, text in accept_commands(result):
        lines.append(f"  {what}: {text}")
    return lines
