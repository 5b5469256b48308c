"""Paired gains as the package reports them: the Gain (mean, exact interval, p-value, counts, minimal detectable
gain) of two scorings of one task set, over tasks, clusters or restart-averaged tasks, and the efficiency ratio
of two gains (the tests themselves are `gain_tests`)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from .gain_tests import (
    _sd,
    cluster_means,
    design_effect,
    gain_bounds_of,
    gain_interval,
    gain_method,
    gain_p_value,
    is_clustered,
    moves,
    restart_interval,
    restart_p_value,
    restart_span,
)
from .power import minimal_detectable_gain
from .score_intervals import CLUSTER_UNIT, EPSILON, GAIN_METHOD, LEVEL, RESTART_GAIN_METHOD, TASK_UNIT, mean


@dataclass(frozen=True)
class Gain:
    """The paired gain after - before over `n` tasks: mean, exact interval, exact p-value, counts."""

    mean: float
    low: float
    high: float
    n: int
    p_value: float
    improved: int
    worsened: int
    tied: int
    mdg: float | None  # minimal detectable gain at POWER and two-sided alpha 1 - LEVEL for n tasks
    method: str = GAIN_METHOD
    restart_gains: tuple[float, ...] = ()  # one gain per optimization restart (empty for one restart)
    up: float = 0.0  # sum of the positive per-task differences (the test's "improved" count)
    down: float = 0.0  # sum of the negative per-task differences, as a positive number
    restart_span: tuple[float, float] = (-1.0, 1.0)  # with restarts: the range a restart's gain can take
    unit: str = TASK_UNIT  # what `n` counts: held-out tasks, or clusters of them (`clustered_gain`)
    tasks: int = 0  # with clusters: the held-out tasks in them (n is then the number of clusters)
    design_effect: float | None = None  # with clusters: Var(mean | clusters) / Var(mean | independent tasks)
    task_mean: float | None = None  # with clusters: the plain mean over tasks (the mean above is over clusters)
    first: "Gain | None" = None  # with restarts: restart 1's own gain, exactly what a run without restarts measures

    @property
    def clustered(self) -> bool:
        return self.unit == CLUSTER_UNIT

    @property
    def restart_sd(self) -> float:
        return _sd(list(self.restart_gains))

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "mean": round(self.mean, 4), "ci_low": round(self.low, 4), "ci_high": round(self.high, 4),
            "n": self.n, "p_value": float(f"{self.p_value:.6g}"), "improved": self.improved,
            "worsened": self.worsened, "tied": self.tied,
            "mdg": None if self.mdg is None else round(self.mdg, 4), "method": self.method,
            "up": round(self.up, 6), "down": round(self.down, 6)}
        if self.restart_gains:
            gains = [round(g, 4) for g in self.restart_gains]
            data["restarts"] = {"count": len(gains), "gains": gains, "sd": round(self.restart_sd, 4),
                                "min": min(gains), "max": max(gains),
                                "span": [round(self.restart_span[0], 6), round(self.restart_span[1], 6)],
                                "these": _these_dict(self.n, self.up, self.down)}
            if self.first is not None:
                data["restarts"]["first"] = {k: v for k, v in self.first.as_dict().items()
                                             if k in ("mean", "ci_low", "ci_high", "p_value", "up", "down")}
        if self.clustered:
            data.update({"unit": CLUSTER_UNIT, "clusters": self.n, "tasks": self.tasks,
                         "design_effect": None if self.design_effect is None else round(self.design_effect, 4),
                         "task_mean": None if self.task_mean is None else round(self.task_mean, 4)})
        return data


def _these_dict(n: int, up: float, down: float) -> dict[str, float]:
    """The interval and p-value for the mean over the R skills actually learned (`these_bounds_of`) at 95%."""
    low, high = gain_interval(n, up, down)
    return {"ci_low": round(low, 4), "ci_high": round(high, 4), "p_value": float(f"{gain_p_value(n, up, down):.6g}")}


def restart_gain(before: list[float], afters: list[list[float]], level: float = LEVEL) -> Gain:
    """The mean gain over R restarts (the population of optimizations): per-task gains averaged over
    restarts, the two-level interval (`restart_interval`), its p-value and the per-restart gains."""
    if len(afters) == 1:
        return paired_gain(before, afters[0], level)
    for after in afters:
        if len(after) != len(before):
            raise ValueError(f"paired comparison needs equal task lists, got {len(before)} and {len(after)}")
    averaged = [mean(after[i] for after in afters) for i in range(len(before))]
    differences = [a - b for b, a in zip(before, averaged)]
    n = len(differences)
    per_restart = tuple(mean(a - b for b, a in zip(before, after)) for after in afters)
    span = restart_span(before)
    up, down = moves(differences)
    low, high = restart_interval(n, up, down, per_restart, span, level)
    return Gain(mean(differences), low, high, n, restart_p_value(n, up, down, per_restart, span),
                sum(d > EPSILON for d in differences), sum(d < -EPSILON for d in differences),
                sum(abs(d) <= EPSILON for d in differences), minimal_detectable_gain(n, level, restarts=len(afters)),
                RESTART_GAIN_METHOD, per_restart, up=up, down=down, restart_span=span,
                first=paired_gain(before, afters[0], level))


def clustered_gain(before: list[float], afters: list[list[float]], clusters: list[str | None] | tuple[str | None, ...],
                   level: float = LEVEL) -> Gain:
    """The paired gain with clusters of tasks as the units: within each restart, per-task scores are
    averaged within their cluster, then the same exact family (`restart_gain`: fractional moves up and
    down, the two-level interval with restarts) runs on the C cluster means. The estimand is the mean
    gain over clusters (each cluster weighs the same). Without a cluster of two or more tasks this is
    exactly `restart_gain` on the tasks."""
    if len(clusters) != len(before):
        raise ValueError(f"clustered comparison needs a cluster per task, got {len(clusters)} for {len(before)} tasks")
    if not is_clustered(clusters):
        return restart_gain(before, afters, level)
    unit = restart_gain(cluster_means(before, clusters), [cluster_means(after, clusters) for after in afters], level)
    averaged = [mean(after[i] for after in afters) - before[i] for i in range(len(before))]
    return replace(unit, method=f"{unit.method} (on cluster means)", unit=CLUSTER_UNIT, tasks=len(before),
                   design_effect=design_effect(averaged, clusters), task_mean=mean(averaged))


def paired_gain(before: list[float], after: list[float], level: float = LEVEL) -> Gain:
    """The paired per-task gain after - before: exact interval, exact sign-flip p-value, counts, MDG."""
    if len(before) != len(after):
        raise ValueError(f"paired comparison needs equal task lists, got {len(before)} and {len(after)}")
    differences = [a - b for b, a in zip(before, after)]
    n = len(differences)
    if n == 0:
        return Gain(0.0, -1.0, 1.0, 0, 1.0, 0, 0, 0, None)
    up, down = moves(differences)
    low, high = gain_interval(n, up, down, level)
    return Gain(mean(differences), low, high, n, gain_p_value(n, up, down),
                sum(d > EPSILON for d in differences), sum(d < -EPSILON for d in differences),
                sum(abs(d) <= EPSILON for d in differences), minimal_detectable_gain(n, level),
                gain_method(n), up=up, down=down)


@dataclass(frozen=True)
class Ratio:
    """Efficiency gain / headroom with a joint interval (each part at level (1 + LEVEL) / 2, Bonferroni)."""

    mean: float
    low: float
    high: float

    def as_dict(self) -> dict[str, float]:
        return {"mean": round(self.mean, 4), "ci_low": round(self.low, 4), "ci_high": round(self.high, 4)}


def efficiency_ratio(gain: Gain, headroom: Gain, level: float = LEVEL) -> Ratio | None:
    """gain / headroom, or None unless the headroom's lower bound (at the Bonferroni level) is above 0.

    Both intervals are taken at level 1 - (1 - level) / 2, so the ratio's interval holds with
    probability at least `level`; a headroom that may be 0 leaves the ratio unbounded, hence None.
    """
    joint = 1 - (1 - level) / 2
    head_low, head_high = gain_bounds_of(headroom.as_dict(), joint)
    if head_low <= EPSILON or headroom.mean <= EPSILON:
        return None
    gain_low, gain_high = gain_bounds_of(gain.as_dict(), joint)
    low = gain_low / head_high if gain_low >= 0 else gain_low / head_low
    high = gain_high / head_low if gain_high >= 0 else gain_high / head_high
    return Ratio(gain.mean / headroom.mean, low, high)
