"""Transfer gates on one result: min gain, min transferred score, min efficiency, no regression.

With samples > 1 the gain and score gates use the lower bound of the 95% interval, and say so.
Efficiency is undefined without a direct run (or when direct did not beat the baseline): its gate
is then skipped with a note. The regression gate compares the transferred score with the committed
snapshot's and is off while `--snapshot-update` accepts new results.

A verdict never rests on uncertain rubric verdicts (unstable judge samples, judge errors): the gates
are applied again with each of them resolved against the transferred skill, and a gate that
passes only thanks to them fails, naming how many there were.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..seeds import Thresholds

EPSILON = 1e-9


@dataclass(frozen=True)
class GateOutcome:
    """What the gates decided: failures (empty = pass) and notes on gates that were skipped or bounded."""

    failures: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    on_lower_bound: bool = False
    thresholds: dict[str, float | None] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return not self.failures

    def as_dict(self) -> dict[str, Any]:
        return {"passed": self.passed, "failures": list(self.failures), "notes": list(self.notes),
                "on_lower_bound": self.on_lower_bound, "thresholds": self.thresholds}


def _gated(estimate: dict[str, Any], lower: bool) -> float:
    return estimate["ci_low"] if lower else estimate["mean"]


def evaluate(result: dict[str, Any], thresholds: Thresholds, committed: float | None = None,
             updating: bool = False) -> GateOutcome:
    """Apply every configured gate to a result in the JSON shape of `result_json`."""
    lower = result["config"]["samples"] > 1
    basis = " (lower 95% bound, samples > 1)" if lower else ""
    failures: list[str] = []
    notes: list[str] = []
    if thresholds.min_gain is not None:
        gain = _gated(result["gain"], lower)
        if gain < thresholds.min_gain - EPSILON:
            failures.append(f"gain {gain:+.3f}{basis} is below min_gain {thresholds.min_gain:+.3f}")
    if thresholds.min_score is not None:
        score = _gated(result["scores"]["transferred"]["hard"], lower)
        if score < thresholds.min_score - EPSILON:
            failures.append(f"transferred score {score:.3f}{basis} is below min_score {thresholds.min_score:.3f}")
    if thresholds.min_efficiency is not None:
        efficiency = result["efficiency"]
        if efficiency is None:
            why = "no direct run (--no-direct)" if result["direct_target"] is None else "direct did not beat the baseline"
            notes.append(f"min_efficiency gate skipped: efficiency is undefined ({why})")
        elif efficiency < thresholds.min_efficiency - EPSILON:
            failures.append(f"efficiency {efficiency:.3f} is below min_efficiency {thresholds.min_efficiency:.3f}")
    if thresholds.regression_tolerance is not None and committed is not None and not updating:
        drop = committed - result["transferred"]
        if drop > thresholds.regression_tolerance + EPSILON:
            failures.append(f"transferred score {result['transferred']:.3f} dropped {drop:.3f} below the committed "
                            f"snapshot's {committed:.3f} (tolerance {thresholds.regression_tolerance:.3f}); "
                            "run with --snapshot-update to accept")
    if lower and (thresholds.min_gain is not None or thresholds.min_score is not None):
        notes.append("gain and score gates use the lower 95% bound because samples > 1")
    failures += _resting_on_uncertain_verdicts(result, thresholds, committed, updating, failures)
    return GateOutcome(tuple(failures), tuple(notes), lower, dict(thresholds.__dict__))


def _resting_on_uncertain_verdicts(result: dict[str, Any], thresholds: Thresholds, committed: float | None,
                                   updating: bool, failures: list[str]) -> list[str]:
    """Failures the gates show once uncertain rubric verdicts are resolved against the skill."""
    from ..judge_report import adverse, uncertain_count

    count = uncertain_count(result) if result.get("judge") else 0
    if not count or failures:
        return []
    worst = evaluate(adverse(result), thresholds, committed, updating)
    return [f"the verdict rests on {count} uncertain rubric verdict(s) (unstable judge samples or judge errors): "
            f"with them resolved against the skill, {f}; raise --judge-samples or sharpen the criterion"
            for f in worst.failures]
