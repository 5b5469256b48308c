"""The judge part of a result, in JSON and as report lines: agreement, unstable checks, calibration.

Agreement is the mean, over the rubric verdicts of the held-out scores (baseline, transferred,
direct), of the share of judge samples on the majority side; it needs `--judge-samples` >= 2. A
verdict is unstable when its samples disagree and uncertain when it is unstable or rests on a
judge error; the gates treat uncertain verdicts as unknown (see `plugin.gating`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..engine.judges import RubricVerdict
from ..engine.results import Evaluation, TransferResult
from ..evidence.item_record import ArmRecord, GainRecord, Interval, ItemRecord, SampleRecord, ScoreRecord

HELD_OUT = ("baseline", "transferred", "direct")


def verdict_json(verdict: RubricVerdict) -> dict[str, Any]:
    """One rubric verdict of one sample."""
    return {"criterion": verdict.criterion, "passed": verdict.passed, "reason": verdict.reason,
            "votes": list(verdict.votes), "agreement": None if verdict.agreement is None else round(verdict.agreement, 4),
            "unstable": verdict.unstable}


def _verdicts(name: str, ev: Evaluation | None) -> list[tuple[str, str, int, RubricVerdict]]:
    if ev is None:
        return []
    return [(name, t.task_id, s.sample_id, v) for t in ev.tasks for s in t.samples for v in s.rubric]


def judge_json(result: TransferResult) -> dict[str, Any] | None:
    """The `judge` section of a result; None when the seed has no judge."""
    judge = result.judge
    if judge is None:
        return None
    rows = [row for name in HELD_OUT for row in _verdicts(name, getattr(result, name))]
    agreements = [v.agreement for *_, v in rows if v.agreement is not None]
    calibration = judge.calibration
    return {
        "model": judge.model_id,
        "samples": judge.samples,
        "warning": judge.warning,
        "verdicts": len(rows),
        "agreement": round(sum(agreements) / len(agreements), 4) if agreements else None,
        "errors": sum(v.errors for *_, v in rows),
        "unstable": [{"phase": phase, "task_id": task, "sample_id": sample, "criterion": v.criterion,
                      "votes": list(v.votes)} for phase, task, sample, v in rows if v.unstable],
        "calibration": None if calibration is None else {
            "model": calibration.model_id, "n": calibration.n, "correct": calibration.correct,
            "accuracy": round(calibration.accuracy, 4), "ci_low": round(calibration.low, 4),
            "ci_high": round(calibration.high, 4), "min_accuracy": calibration.min_accuracy,
            "passed": calibration.passed, "unstable": calibration.unstable,
            "disagreements": [{"where": d.item.origin, "criterion": d.item.criterion,
                               "expected": "pass" if d.item.expected else "fail",
                               "votes": list(d.verdict.votes), "reason": d.verdict.reason}
                              for d in calibration.disagreements],
        },
    }


def judge_line(result: ItemRecord) -> str | None:
    """`incident-review: judge sim-judge x3: agreement 0.98 over 54 verdicts, 1 unstable, calibration 15/16 ...`."""
    judge = result.judge
    if not judge:
        return None
    agreement = "n/a (1 sample)" if judge["agreement"] is None else f"{judge['agreement']:.2f}"
    parts = [f"agreement {agreement} over {judge['verdicts']} verdicts", f"{len(judge['unstable'])} unstable"]
    if judge["errors"]:
        parts.append(f"{judge['errors']} judge error(s)")
    calibration = judge["calibration"]
    if calibration is None:
        parts.append("no calibration file")
    else:
        parts.append(f"calibration {calibration['correct']}/{calibration['n']} = {calibration['accuracy']:.2f} "
                     f"[{calibration['ci_low']:.2f}, {calibration['ci_high']:.2f}] (min {calibration['min_accuracy']:.2f})")
    line = f"{result.seed} {result.source}->{result.target}: judge {judge['model']} x{judge['samples']}: " \
           + ", ".join(parts)
    return line + (f"\n  warning: {judge['warning']}" if judge["warning"] else "")


def unstable_lines(result: ItemRecord, limit: int = 10) -> list[str]:
    """The unstable rubric checks of a result: `transferred test-004 sample 0: pass/pass/fail on "<criterion>"`."""
    rows = (result.judge or {}).get("unstable", [])
    lines = [f"{r['phase']} {r['task_id']} sample {r['sample_id']}: {'/'.join(r['votes'])} on \"{r['criterion']}\""
             for r in rows[:limit]]
    return lines + ([f"... and {len(rows) - limit} more"] if len(rows) > limit else [])


def judge_lines(results: list[ItemRecord]) -> list[str]:
    """One line per result that has a judge (plus its warning, if any)."""
    return [line for r in results if (line := judge_line(r))]


def _uncertain(verdict: dict[str, Any]) -> bool:
    return verdict["unstable"] or "error" in verdict["votes"]


def _adverse_hard(sample: SampleRecord, against: bool) -> float:
    """A sample's hard score with its uncertain rubric verdicts resolved adversely.

    `against=True` (the skill being credited): an uncertain passing verdict fails, so the sample fails.
    `against=False` (the reference being beaten): the sample passes when only uncertain verdicts failed it.
    """
    uncertain = [v for v in sample.rubric or () if _uncertain(v)]
    if not uncertain:
        return sample.hard
    if against:
        return 0.0 if any(v["passed"] for v in uncertain) else sample.hard
    doubtful = {f"rubric={v['criterion']}" for v in uncertain if not v["passed"]}
    return 1.0 if sample.failed and all(f in doubtful for f in sample.failed) else sample.hard


def uncertain_count(result: ItemRecord) -> int:
    """Uncertain rubric verdicts (unstable, or resting on a judge error) in the held-out scores."""
    arms = [getattr(result.scores, name) for name in HELD_OUT]
    return sum(1 for arm in arms if arm is not None for t in arm.tasks for s in t.samples
               for v in s.rubric or () if _uncertain(v))


def adverse(result: ItemRecord) -> ItemRecord:
    """The result with every uncertain rubric verdict resolved against the transferred skill (the
    baseline's in its favour): if the gates still pass on this, the verdict does not rest on them."""
    from ..evidence.stats import clustered_gain, clustered_score, efficiency_ratio

    def adjusted(evaluation: ArmRecord, against: bool) -> ArmRecord:
        tasks = tuple(replace(t, hard=sum(_adverse_hard(s, against) for s in t.samples) / len(t.samples))
                      for t in evaluation.tasks)
        clusters = [t.cluster for t in tasks]
        hard = clustered_score([[t.hard for t in tasks]], clusters).as_dict()
        return replace(evaluation, tasks=tasks, hard=ScoreRecord.from_json(hard))

    assert result.scores.baseline is not None and result.scores.transferred is not None
    baseline, transferred = adjusted(result.scores.baseline, False), adjusted(result.scores.transferred, True)
    before, after = [t.hard for t in baseline.tasks], [t.hard for t in transferred.tasks]
    clusters = [t.cluster for t in baseline.tasks]
    gain = clustered_gain(before, [after], clusters)
    direct = result.scores.direct
    headroom = clustered_gain(before, [[t.hard for t in direct.tasks]], clusters) if direct else None
    ratio = efficiency_ratio(gain, headroom) if headroom is not None else None
    return replace(result, scores=replace(result.scores, baseline=baseline, transferred=transferred),
                   baseline_target=baseline.hard.mean, transferred=transferred.hard.mean,
                   transfer_gain=round(gain.mean, 3), gain=GainRecord.from_json(gain.as_dict()),
                   headroom=None if headroom is None else GainRecord.from_json(headroom.as_dict()),
                   efficiency=None if ratio is None else ratio.mean,
                   efficiency_ci=None if ratio is None else Interval.from_json(ratio.as_dict()), judge=None)
