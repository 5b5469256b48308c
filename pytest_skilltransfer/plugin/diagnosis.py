"""The failure report of a transfer item: what a reviewer needs to act on a failed gate.

Sections: the failed gates; the scores table; the held-out tasks that got worse than the baseline
(with the checks they now miss and the learned lines the nights accepted); the held-out tasks that fail on the target with the
learned skill and the checks they miss (with the judge's reason and votes for a rubric check); the diff from the seed's skill to the learned skill; the
edits accepted and rejected per night.
"""

from __future__ import annotations

import difflib
from dataclasses import replace
from typing import Any

import pytest

from ..evidence.item_record import ArmRecord, GateRecord, ItemRecord, TaskRecord
from ..guards.edits import Edit
from ..guards.terminal import safe
from ..reports.report import (
    design_effect_text,
    efficiency_text,
    gain_text,
    mdg_text,
    night_verdict,
    p_text,
    pair_text,
    unfinished_answers,
    units_text,
)
from .gating import GateOutcome, restart_count

TASK_CHARS = 90


class TransferFailed(pytest.fail.Exception):  # type: ignore[misc,name-defined]
    """A failed (or, by default, inconclusive) transfer item: the full diagnosis and its one-line summary."""

    def __init__(self, diagnosis: str, summary: str):
        super().__init__(safe(diagnosis), pytrace=False)  # task texts and answers reach the terminal escaped
        self.summary = safe(summary)


def _estimate(evaluation: ArmRecord | None) -> tuple[str, str, str]:
    if evaluation is None:
        return "-", "-", "-"
    hard = evaluation.hard
    return f"{hard.mean:.2f}", f"[{hard.ci_low:.2f}, {hard.ci_high:.2f}]", f"{evaluation.soft.mean:.2f}"


def scores_table(result: ItemRecord) -> list[str]:
    """Baseline, transferred and direct on the target: hard mean, its interval, soft mean."""
    lines = [f"  {'':<12} {'hard':>5}  {'95% CI':<13} {'soft':>5}"]
    for name in ("baseline", "transferred", "direct"):
        mean, interval, soft = _estimate(getattr(result.scores, name))
        lines.append(f"  {name:<12} {mean:>5}  {interval:<13} {soft:>5}")
    gain = result.gain
    lines.append(f"  gain {gain_text(result)} over {units_text(gain)}{design_effect_text(gain)}, "
                 f"p = {p_text(gain.p_value)} ({gain.improved} improved, {gain.worsened} worse, "
                 f"{gain.tied} tied{' clusters' if gain.unit == 'cluster' else ''}), "
                 f"minimal detectable gain {mdg_text(result)}; efficiency {efficiency_text(result, interval=True)}")
    return lines


def _tasks(evaluation: ArmRecord | None) -> tuple[TaskRecord, ...]:
    return evaluation.tasks if evaluation is not None else ()


def failing_tasks(result: ItemRecord, task_texts: dict[str, str]) -> list[str]:
    """Held-out tasks the target still fails with the learned skill, and the checks each misses."""
    lines = []
    for task in _tasks(result.scores.transferred):
        if task.hard >= 1.0:
            continue
        missed = sorted({label for sample in task.samples for label in sample.failed})
        judged = {f"rubric={v['criterion']}": f" (judge: {v['reason']}; votes {'/'.join(v['votes'])})"
                  for sample in task.samples for v in sample.rubric or () if not v["passed"]}
        text = task_texts.get(task.task_id, "")
        text = text if len(text) <= TASK_CHARS else text[: TASK_CHARS - 3] + "..."
        lines.append(f"  {task.task_id} (hard {task.hard:.2f}): {text}")
        lines.extend(f"      misses: {label}{judged.get(label, '')}" for label in missed)
    return lines or ["  (none: every held-out task passes)"]


def worse_tasks(result: ItemRecord, task_texts: dict[str, str]) -> list[str]:
    """Held-out tasks scoring lower with the learned skill than with the seed's, and the checks they now miss."""
    baseline = {t.task_id: t for t in _tasks(result.scores.baseline)}
    lines = []
    for task in _tasks(result.scores.transferred):
        before = baseline.get(task.task_id)
        if before is None or task.hard >= before.hard:
            continue
        missed_before = {label for sample in before.samples for label in sample.failed}
        missed_now = sorted({label for sample in task.samples for label in sample.failed} - missed_before)
        text = task_texts.get(task.task_id, "")
        text = text if len(text) <= TASK_CHARS else text[: TASK_CHARS - 3] + "..."
        lines.append(f"  {task.task_id} (hard {before.hard:.2f} -> {task.hard:.2f}): {text}")
        lines.extend(f"      now misses: {label}" for label in missed_now)
    return lines


def learned_lines(optimization: dict[str, Any] | None) -> list[str]:
    """The edits the nights accepted on the source: the learned lines behind a change on the target."""
    if optimization is None:
        return []
    return [f"  night {night['night']}: {_edit_line(edit)}"
            for night in optimization["nights"] if night["accepted"] for edit in night["applied"]]


def skill_diff(seed_skill: str, learned_skill: str) -> list[str]:
    """Unified diff from the seed's SKILL.md to the learned skill."""
    diff = difflib.unified_diff(seed_skill.splitlines(), learned_skill.splitlines(),
                                "seed SKILL.md", "learned skill", lineterm="", n=2)
    return ["  " + line for line in diff] or ["  (no change: the optimizer kept the seed's skill)"]


def nights(optimization: dict[str, Any] | None, label: str) -> list[str]:
    """Per night: the validation scores, accepted or rejected, and each edit."""
    if optimization is None:
        return []
    lines = [f"  {label} on {optimization['agent']} (optimizer {optimization['optimizer']}):"]
    for night in optimization["nights"]:
        after = "-" if night["val_after"] is None else f"{night['val_after']:.2f}"
        note = f" ({night['note']})" if night["note"] else ""
        lines.append(f"    night {night['night']}: val {night['val_before']:.2f} -> {after}, {night_verdict(night)}{note}")
        mark = "+" if night["accepted"] else "-"
        for edit in night["applied"]:
            lines.append(f"      {mark} {_edit_line(edit)}")
        for edit in night["unmatched"]:
            lines.append(f"      x {_edit_line(edit)} [not applied: {edit['reason']}]")
    return lines


def _edit_line(edit: dict[str, Any]) -> str:
    return Edit(edit["op"], edit["content"], edit["anchor"]).summary()


def diagnose(result: ItemRecord, outcome: GateOutcome, seed_skill: str, task_texts: dict[str, str],
             snapshot_diff: list[str] | None = None) -> str:
    """The full failure text of one item."""
    what = "failed" if outcome.failures or snapshot_diff else "inconclusive"
    head = f"skill transfer {what} for {result.seed} ({pair_text(result)}):"
    lines = [head, *(f"  FAILED {f}" for f in outcome.failures),
             *(f"  INCONCLUSIVE {m}" for m in outcome.inconclusive), *(f"  note: {n}" for n in outcome.notes)]
    restarts = restart_count(result.gain.as_gain())
    over = f" and {restarts} restarts" if restarts > 1 else ""
    for gate in outcome.gates:
        if gate.name != "min_gain" or gate.verdict == "pass":
            continue
        at = f"  note: at a true gain of {gate.threshold + 0.1:+.2f}, passing min_gain {gate.threshold:+.2f} with 80% power"
        if gate.tasks_for_power is not None:
            lines.append(f"{at} needs {gate.tasks_for_power} "
                         f"{'clusters' if result.gain.unit == 'cluster' else 'held-out tasks'}{over} "
                         "(none getting worse; two-sided alpha 0.05)")
        elif restarts > 1:
            lines.append(f"{at} takes more restarts than {restarts}: no number of held-out tasks up to 2000 does it")
    if outcome.inconclusive and not outcome.failures:
        lines.append("  (an unproven claim is not a pass; --transfer-inconclusive=xfail|pass changes what it does)")
    from ..reports.comparison import cause_lines

    cause = cause_lines(result)
    if cause:
        lines += ["", "cause of the change " + cause[0], *cause[1:]]
    if snapshot_diff:
        from ..reports.rerun import rerun_commands

        mismatch = GateRecord(verdict="fail", passed=False, snapshot=snapshot_diff[0])
        accept = [command for what, command in rerun_commands(replace(result, gate=mismatch)) if what != "rerun"]
        lines += ["", "snapshot mismatch" + (f" (accept once reviewed: {accept[0]})" if accept else
                                             " (run with --snapshot-update to accept)") + ":",
                  *(f"  {d}" for d in snapshot_diff)]
    unfinished = unfinished_answers(result)
    if unfinished:
        lines += ["", f"unfinished answers (counted as given): {unfinished}"]
    lines += ["", f"scores on {result.target} (held-out):", *scores_table(result)]
    worse = worse_tasks(result, task_texts)
    if worse:
        lines += ["", f"held-out tasks worse on {result.target} with the learned skill than with the seed's "
                  f"({len(worse and [w for w in worse if not w.startswith('      ')])}), and the checks they now miss:",
                  *worse]
        learned = learned_lines(result.optimization["source"])
        if learned:
            lines += [f"learned lines accepted on {result.source} (the nights that added them):", *learned]
    lines += ["", f"held-out tasks failing on {result.target} with the learned skill:",
              *failing_tasks(result, task_texts)]
    lines += ["", "learned skill vs seed skill:", *skill_diff(seed_skill, result.learned_skill)]
    lines += ["", "edits per night (+ accepted, - rejected, x not applied):",
              *nights(result.optimization["source"], "optimized"),
              *nights(result.optimization["direct"], "direct reference, optimized")]
    return "\n".join(lines)
