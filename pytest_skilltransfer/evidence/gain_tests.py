"""Paired gains between two scorings of one task set: one exact test gives the p-value and the interval
(`paired_exact`), over tasks, clusters or restart-averaged tasks; its decisions, power, minimal detectable gain and
the number of tasks a decision needs (the methods are described in `stats`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from . import paired_exact
from .bounded_mean import mean_bounds
from .score_intervals import (
    CLUSTER_UNIT,
    EPSILON,
    FAIL,
    GAIN_METHOD,
    GAIN_METHOD_LARGE,
    INCONCLUSIVE,
    LEVEL,
    MAX_TASKS,
    N_EXACT,
    PASS,
    POWER,
    RESTART_GAIN_METHOD,
    SCORE_METHOD,
    TASK_UNIT,
    Estimate,
    _above,
    _below,
    beta_cdf,
    decide,
    interval_of_sum,
    mean,
    score,
)


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


def _sd(values: list[float]) -> float:
    """Sample standard deviation (n - 1); 0.0 below two values."""
    if len(values) < 2:
        return 0.0
    center = mean(values)
    return math.sqrt(sum((v - center) ** 2 for v in values) / (len(values) - 1))


SCORE_SPAN = (0.0, 1.0)
GAIN_SPAN = (-1.0, 1.0)


def part_level(level: float) -> float:
    """The level of each part of a two-level interval (tasks, restarts): 1 - a/2, so that together they
    hold at `level` (Bonferroni)."""
    return 1 - (1 - level) / 2


def restart_margins(values: tuple[float, ...] | list[float], span: tuple[float, float],
                    level: float) -> tuple[float, float]:
    """How far below and above the restarts' mean the mean over the population of optimizations may lie:
    the distribution-free bounds (`bounded_mean.mean_bounds`) at `part_level` for values within `span`."""
    low, high = mean_bounds(values, span[0], span[1], part_level(level))
    center = mean(values)
    return max(0.0, center - low), max(0.0, high - center)


def _widened(task_bounds: tuple[float, float], values: tuple[float, ...] | list[float], span: tuple[float, float],
             level: float, limits: tuple[float, float]) -> tuple[float, float]:
    """A task-level interval (taken at `part_level`) widened by the restart margins, within `limits`."""
    below, above = restart_margins(values, span, level)
    return max(limits[0], task_bounds[0] - below), min(limits[1], task_bounds[1] + above)


def score_bounds(mean_value: float, n: int, level: float = LEVEL,
                 restart_means: tuple[float, ...] | list[float] = ()) -> tuple[float, float]:
    """A score's interval from its mean over n tasks (and, with R > 1 restarts, the restarts' means).

    The score counterpart of `restart_interval`: Clopper-Pearson, and for R > 1 the task-level bound at
    level 1 - a/2 widened by the restart margins (`restart_margins`, scores lying in [0, 1]).
    """
    means = list(restart_means)
    if len(means) <= 1:
        return interval_of_sum(mean_value * n, n, level)
    return _widened(interval_of_sum(mean_value * n, n, part_level(level)), means, SCORE_SPAN, level, SCORE_SPAN)


def restart_score(per_restart: list[list[float]], level: float = LEVEL) -> Estimate:
    """The mean over restarts of per-task scores, with the two-level interval (`score_bounds`)."""
    if len(per_restart) == 1:
        return score(per_restart[0], level)
    averaged = [mean(values) for values in zip(*per_restart)]
    low, high = score_bounds(mean(averaged), len(averaged), level, [mean(v) for v in per_restart])
    return Estimate(mean(averaged), low, high, len(averaged),
                    SCORE_METHOD + " widened by a distribution-free bound over restarts")


def gain_bounds(mean_value: float, n: int, level: float = LEVEL,
                restart_gains: tuple[float, ...] | list[float] = (),
                span: tuple[float, float] = GAIN_SPAN) -> tuple[float, float]:
    """The gain's interval from a mean over n tasks and the per-restart gains, for a record that kept no
    counts: the exact task-level interval (`difference_interval_of_mean`), with R > 1 restarts at level
    1 - a/2 and widened by the restart margins (`restart_margins`)."""
    gains = list(restart_gains)
    if len(gains) <= 1:
        return difference_interval_of_mean(mean_value, n, level)
    return _widened(difference_interval_of_mean(mean_value, n, part_level(level)), gains, span, level, GAIN_SPAN)


def restart_span(before: list[float]) -> tuple[float, float]:
    """The range a restart's mean gain can take: every restart is scored against the same baseline, so
    with scores in [0, 1] its gain lies in [-mean(before), 1 - mean(before)]."""
    base = mean(before)
    return -base, 1.0 - base


def restart_interval(n: int, up: float, down: float, gains: tuple[float, ...] | list[float],
                     span: tuple[float, float], level: float = LEVEL) -> tuple[float, float]:
    """The two-level interval for the mean gain over the population of optimizations (Bonferroni): the
    exact task-level interval of the restart-averaged gains at level 1 - a/2, widened below and above
    by the restart margins (`restart_margins`: distribution-free, at level 1 - a/2)."""
    return _widened(gain_interval(n, up, down, part_level(level)), gains, span, level, GAIN_SPAN)


def restart_p_value(n: int, up: float, down: float, gains: tuple[float, ...] | list[float],
                    span: tuple[float, float]) -> float:
    """The smallest 1 - level at which `restart_interval` excludes 0 (so p <= 0.05 exactly when the 95%
    interval does): bisection on alpha, each step the task-level test at the restart margin."""
    def excludes(alpha: float) -> bool:
        below, above = restart_margins(gains, span, 1 - alpha)
        inner = part_level(1 - alpha)
        return (below < 1.0 and gain_decision(n, up, down, below + EPSILON, inner) == PASS) or \
            (above < 1.0 and gain_decision(n, up, down, -above - EPSILON, inner) == FAIL)

    if not excludes(0.999999):
        return 1.0
    low, high = 0.0, 0.999999  # excludes(high) holds
    for _ in range(30):
        middle = (low + high) / 2
        low, high = (low, middle) if excludes(middle) else (middle, high)
    return high


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
    up, down = sum(d for d in differences if d > 0), -sum(d for d in differences if d < 0)
    low, high = restart_interval(n, up, down, per_restart, span, level)
    return Gain(mean(differences), low, high, n, restart_p_value(n, up, down, per_restart, span),
                sum(d > EPSILON for d in differences), sum(d < -EPSILON for d in differences),
                sum(abs(d) <= EPSILON for d in differences), minimal_detectable_gain(n, level, restarts=len(afters)),
                RESTART_GAIN_METHOD, per_restart, up=up, down=down, restart_span=span,
                first=paired_gain(before, afters[0], level))


# -- clustered tasks -----------------------------------------------------------------------------


def cluster_keys(clusters: list[str | None] | tuple[str | None, ...]) -> list[str]:
    """Each task's unit: its cluster name, or a key of its own when it names none."""
    return [f"cluster:{c}" if c is not None else f"task:{i}" for i, c in enumerate(clusters)]


def is_clustered(clusters: list[str | None] | tuple[str | None, ...]) -> bool:
    """True when at least one cluster holds two or more tasks (else every task is its own unit)."""
    names = [c for c in clusters if c is not None]
    return len(set(names)) < len(names)


def cluster_count(clusters: list[str | None] | tuple[str | None, ...]) -> int:
    """The number of units: distinct clusters, each task without one counting alone."""
    return len(set(cluster_keys(clusters)))


def cluster_means(values: list[float], clusters: list[str | None] | tuple[str | None, ...]) -> list[float]:
    """The mean of `values` within each cluster, clusters in order of first appearance."""
    groups: dict[str, list[float]] = {}
    for key, value in zip(cluster_keys(clusters), values):
        groups.setdefault(key, []).append(value)
    return [mean(group) for group in groups.values()]


def design_effect(differences: list[float], clusters: list[str | None] | tuple[str | None, ...]) -> float | None:
    """Var(mean) with clusters as the units over Var(mean) with independent tasks, both estimated from the
    data: (s^2 of the cluster means / C) / (s^2 of the task differences / n). About 1 + (m - 1) * ICC
    for clusters of m tasks; None with fewer than two clusters or no spread between tasks."""
    means = cluster_means(differences, clusters)
    n, units = len(differences), len(means)
    task_spread = _sd(differences) ** 2
    if units < 2 or n < 2 or task_spread <= EPSILON ** 2:
        return None
    return (_sd(means) ** 2 / units) / (task_spread / n)


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


def clustered_score(per_restart: list[list[float]], clusters: list[str | None] | tuple[str | None, ...],
                    level: float = LEVEL) -> Estimate:
    """A score over clusters: each restart's per-task scores averaged within clusters, then `restart_score`
    (Clopper-Pearson on the C cluster means, two-level with restarts). The mean is over clusters, as the
    clustered gain's; without a cluster of two or more tasks it is `restart_score` on the tasks."""
    if per_restart and len(clusters) != len(per_restart[0]):
        raise ValueError(f"clustered score needs a cluster per task, got {len(clusters)} for {len(per_restart[0])} tasks")
    if not is_clustered(clusters):
        return restart_score(per_restart, level)
    unit = restart_score([cluster_means(values, clusters) for values in per_restart], level)
    return replace(unit, method=f"{unit.method} (on cluster means)", unit=CLUSTER_UNIT, tasks=len(clusters))


def undecidable_units(n: int, level: float = LEVEL) -> bool:
    """True when n units can never give a significant gain or harm: even every unit moving fully one way
    has a p-value above 1 - level (the smallest p-value of the exact family with n units is 2 / 2**n)."""
    return n <= 0 or gain_p_value(n, float(n), 0.0) > 1 - level + EPSILON


def units_needed(level: float = LEVEL) -> int:
    """The fewest units at which a significant gain or harm is possible at all."""
    return next(k for k in range(1, 64) if not undecidable_units(k, level))


def _normal_upper(z: float) -> float:
    """P(Z >= z) for a standard normal Z."""
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def _normal_quantile(q: float) -> float:
    low, high = -40.0, 40.0
    for _ in range(200):
        middle = (low + high) / 2
        low, high = (middle, high) if 1 - _normal_upper(middle) < q else (low, middle)
    return (low + high) / 2


def _asymptotic_interval(n: int, up: float, down: float, level: float) -> tuple[float, float]:
    """Every gain whose Tango statistic lies within +-z (`paired_exact.statistic` decreases in d0)."""
    z = _normal_quantile(1 - (1 - level) / 2)

    def crossing(target: float) -> float:
        low, high = -1.0 + 1e-12, 1.0 - 1e-12
        if paired_exact.statistic(n, up, down, low) < target:
            return -1.0
        if paired_exact.statistic(n, up, down, high) > target:
            return 1.0
        for _ in range(60):
            middle = (low + high) / 2
            low, high = (middle, high) if paired_exact.statistic(n, up, down, middle) > target else (low, middle)
        return (low + high) / 2

    return crossing(z), crossing(-z)


def gain_interval(n: int, up: float, down: float, level: float = LEVEL) -> tuple[float, float]:
    """The gain's interval from n, the sums of positive (`up`) and negative (`down`) differences."""
    if n <= 0:
        return -1.0, 1.0
    up, down = round(up, 9), round(down, 9)
    if n > N_EXACT:
        return _asymptotic_interval(n, up, down, level)
    return paired_exact.interval(n, up, down, level)


def gain_p_value(n: int, up: float, down: float) -> float:
    """The two-sided p-value of "no effect" from the same test as `gain_interval`."""
    if n <= 0:
        return 1.0
    up, down = round(up, 9), round(down, 9)
    if n > N_EXACT:
        return min(1.0, 2 * _normal_upper(abs(paired_exact.statistic(n, up, down, 0.0))))
    return paired_exact.p_value(n, up, down)


def gain_decision(n: int, up: float, down: float, threshold: float, level: float = LEVEL) -> str:
    """`decide` on the gain's interval without computing it: the same test at the threshold itself
    (pass: it rejects "gain below the threshold"; fail: it rejects "gain at or above it")."""
    if n <= 0:
        return INCONCLUSIVE
    if n > N_EXACT:
        return decide(*gain_interval(n, up, down, level), threshold)
    up, down, alpha = round(up, 9), round(down, 9), (1 - level) / 2
    if threshold <= -1.0 + EPSILON or paired_exact.upper_p(n, up, down, threshold - EPSILON) <= alpha:
        return PASS
    if threshold > 1.0 or paired_exact.lower_p(n, up, down, threshold - EPSILON) <= alpha:
        return FAIL
    return INCONCLUSIVE


def mean_gain_interval(gains: list[float], level: float = LEVEL) -> tuple[float, float]:
    """The interval of a mean of gains in [-1, 1] with the units (e.g. seeds) as the sample, by the same
    family: each gain a fractional move up or down."""
    return gain_interval(len(gains), sum(g for g in gains if g > 0), -sum(g for g in gains if g < 0), level)


def gain_method(n: int) -> str:
    return GAIN_METHOD_LARGE if n > N_EXACT else GAIN_METHOD


def _span_of(restarts: dict[str, Any]) -> tuple[float, float]:
    """A gain record's restart span (`Gain.restart_span`); records written without one get [-1, 1]."""
    span = restarts.get("span") or GAIN_SPAN
    return float(span[0]), float(span[1])


def gain_bounds_of(gain: dict[str, Any], level: float = LEVEL) -> tuple[float, float]:
    """A gain record's (`Gain.as_dict`) interval at `level`: its own at 95%, recomputed from its counts
    at another level, the two-level one with restarts."""
    spread = gain.get("restarts") or {}
    restarts = spread.get("gains") or []
    if abs(level - LEVEL) < 1e-12 and "ci_low" in gain:
        return gain["ci_low"], gain["ci_high"]
    if "up" not in gain:  # a record from before the exact family
        return gain_bounds(gain["mean"], gain["n"], level, restarts, _span_of(spread))
    if len(restarts) > 1:
        return restart_interval(gain["n"], gain["up"], gain["down"], restarts, _span_of(spread), level)
    return gain_interval(gain["n"], gain["up"], gain["down"], level)


def these_bounds_of(gain: dict[str, Any], level: float = LEVEL) -> tuple[float, float] | None:
    """With R > 1 restarts: the interval for the mean gain of the R skills actually learned (these skills,
    not the population of optimizations): the exact task-level interval of the restart-averaged per-task
    gains at `level`, with no bound over restarts. None for one optimization or a record without counts."""
    if restart_count_of(gain) <= 1 or "up" not in gain:
        return None
    return gain_interval(gain["n"], gain["up"], gain["down"], level)


def first_bounds_of(gain: dict[str, Any], level: float = LEVEL) -> tuple[float, float, float] | None:
    """With R > 1 restarts: restart 1's own gain (mean, low, high) at `level`, by the exact test a run
    without restarts applies to the same evidence (restart 1 is that run: same split, same sample ids).
    None for one optimization or a record that kept no restart-1 counts."""
    first = (gain.get("restarts") or {}).get("first")
    if restart_count_of(gain) <= 1 or not first or "up" not in first:
        return None
    return (first["mean"], *gain_interval(gain["n"], first["up"], first["down"], level))


def restart_count_of(gain: dict[str, Any]) -> int:
    """How many optimization restarts a gain record averages (1 without restarts)."""
    return len((gain.get("restarts") or {}).get("gains") or []) or 1


def difference_interval(differences: list[float], level: float = LEVEL) -> tuple[float, float]:
    """Bounds for the mean of values in [-1, 1]: Clopper-Pearson on (d + 1) / 2, mapped back."""
    low, high = interval_of_sum(sum((d + 1) / 2 for d in differences), len(differences), level)
    return 2 * low - 1, 2 * high - 1


def paired_gain(before: list[float], after: list[float], level: float = LEVEL) -> Gain:
    """The paired per-task gain after - before: exact interval, exact sign-flip p-value, counts, MDG."""
    if len(before) != len(after):
        raise ValueError(f"paired comparison needs equal task lists, got {len(before)} and {len(after)}")
    differences = [a - b for b, a in zip(before, after)]
    n = len(differences)
    if n == 0:
        return Gain(0.0, -1.0, 1.0, 0, 1.0, 0, 0, 0, None)
    up, down = sum(d for d in differences if d > 0), -sum(d for d in differences if d < 0)
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


def difference_interval_of_mean(mean_value: float, n: int, level: float = LEVEL) -> tuple[float, float]:
    """`difference_interval` from the mean of n differences (what a JSON report keeps)."""
    low, high = interval_of_sum((mean_value + 1) / 2 * n, n, level)
    return 2 * low - 1, 2 * high - 1


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


# -- decisions, power and task counts ------------------------------------------------------------


def bounds(mean_value: float, n: int, level: float = LEVEL, paired: bool = False,
           restart_values: tuple[float, ...] | list[float] = ()) -> tuple[float, float]:
    """The interval of a gain (`paired`) or a score from what a report keeps (`gain_bounds`, `score_bounds`)."""
    return (gain_bounds if paired else score_bounds)(mean_value, n, level, restart_values)


def _decided(mean_value: float, n: int, threshold: float, level: float, paired: bool,
             restart_values: list[float]) -> bool:
    """Would an observed mean of `mean_value` over n tasks decide against `threshold`?"""
    if len(restart_values) > 1:
        return decide(*bounds(mean_value, n, level, paired, restart_values), threshold) != INCONCLUSIVE
    if paired:
        mean_value, threshold = (mean_value + 1) / 2, (threshold + 1) / 2
    total = mean_value * n
    return _above(total, n, threshold, level) or _below(total, n, threshold, level)


def tasks_to_decide(mean_value: float, n: int, threshold: float, level: float = LEVEL,
                    paired: bool = False, restart_values: tuple[float, ...] | list[float] = ()) -> int | None:
    """The fewest tasks (>= n) at which the same observed mean would decide the gate; None if never.

    `paired` treats the mean as a gain in [-1, 1]. A mean that equals the threshold never decides,
    nor does one within the between-restart margin of it (that needs restarts, not tasks).
    """
    values = list(restart_values)
    if abs(mean_value - threshold) <= EPSILON:
        return None
    if len(values) > 1:
        below, above = restart_margins(values, GAIN_SPAN if paired else SCORE_SPAN, level)
        if (below if mean_value > threshold else above) >= abs(mean_value - threshold):
            return None
    if _decided(mean_value, n, threshold, level, paired, values):
        return n
    low, high = n, max(2 * n, 1)
    while not _decided(mean_value, high, threshold, level, paired, values):
        low, high = high, 2 * high
        if high > MAX_TASKS:
            return None
    while high - low > 1:
        middle = (low + high) // 2
        if _decided(mean_value, middle, threshold, level, paired, values):
            high = middle
        else:
            low = middle
    return high


def gain_tasks_to_decide(gain: dict[str, Any], threshold: float, level: float = LEVEL,
                         limit: int = 2000) -> int | None:
    """The fewest tasks (>= n) at which the same per-task result (the same shares of tasks moving up
    and down) would decide a gain gate at `threshold`; None if no number up to `limit` does."""
    spread = gain.get("restarts") or {}
    restarts = spread.get("gains") or []
    n = gain["n"]
    if "up" not in gain:
        return tasks_to_decide(gain["mean"], n, threshold, level, paired=True, restart_values=restarts)
    if len(restarts) > 1:  # more tasks narrow only the task-level part; the restart margins stay
        below, above = restart_margins(restarts, _span_of(spread), level)
        margin = below if gain["mean"] > threshold else above
        if margin >= abs(gain["mean"] - threshold):
            return None
        inner = {"n": n, "up": gain["up"], "down": gain["down"], "mean": gain["mean"]}
        shifted = threshold + margin if gain["mean"] > threshold else threshold - margin
        return gain_tasks_to_decide(inner, shifted, part_level(level), limit)
    if n <= 0 or abs(gain["mean"] - threshold) <= EPSILON:
        return None

    def decided(m: int) -> bool:
        return gain_decision(m, gain["up"] * m / n, gain["down"] * m / n, threshold, level) != INCONCLUSIVE

    if decided(n):
        return n
    low, high = n, 2 * n
    while not decided(high):
        low, high = high, 2 * high
        if low > limit:
            return None
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if decided(middle) else (middle, high)
    return high if high <= limit else None


def _binomial_upper_tail(n: int, p: float, k: int) -> float:
    """P(Binomial(n, p) >= k)."""
    if k <= 0:
        return 1.0
    if k > n:
        return 0.0
    return beta_cdf(p, k, n - k + 1)


@lru_cache(maxsize=4096)
def _improvements_needed(n: int, level: float, threshold: float = 0.0, restarts: int = 1) -> int | None:
    """Fewest improved tasks (the rest tied, none worse) whose gain interval lies at or above
    `threshold` (above 0 for threshold 0); None when none does. The interval rejects `threshold` from
    above exactly when the one-sided p-value there is at most (1 - level) / 2, monotone in the count.
    With R > 1 restarts, the two-level interval of R restarts that all moved the same tasks from 0."""
    inner = level if restarts == 1 else part_level(level)  # the task-level part's level

    def clears(improved: int) -> bool:
        bar = threshold
        if restarts > 1:  # the task-level bound must clear the threshold plus the margin below
            bar += restart_margins([improved / n] * restarts, SCORE_SPAN, level)[0]
            if bar >= 1.0:
                return False
        if n > N_EXACT:
            low = gain_interval(n, improved, 0, inner)[0]
            return low >= bar - EPSILON and (bar > 0 or low > EPSILON)
        return paired_exact.upper_p(n, improved, 0, bar) <= (1 - inner) / 2

    if not clears(n):
        return None
    low, high = -1, n  # clears(high) holds, clears(low) does not (or low is -1)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if clears(middle) else (middle, high)
    return high


def detection_power(gain: float, n: int, level: float = LEVEL, threshold: float = 0.0, restarts: int = 1) -> float:
    """Chance that n tasks show a gain above `threshold` (0: any gain) when each task improves with
    probability `gain`.

    The alternative is the most favourable one for a binary task: a task either improves from fail
    to pass or is unchanged (no task gets worse, no noise; with restarts, every restart alike, from a
    baseline of 0). Real data can only need more tasks. By symmetry it is also the chance of showing
    harm (`hurts`) of size `gain`.
    """
    needed = _improvements_needed(n, level, threshold, restarts)
    return 0.0 if needed is None else _binomial_upper_tail(n, min(max(gain, 0.0), 1.0), needed)


@lru_cache(maxsize=4096)
def minimal_detectable_gain(n: int, level: float = LEVEL, power: float = POWER, restarts: int = 1) -> float | None:
    """The smallest gain detected (interval above 0) with probability `power` by n tasks (and R
    restarts, by the two-level interval); None if none."""
    if n <= 0 or detection_power(1.0, n, level, restarts=restarts) < power:
        return None
    low, high = 0.0, 1.0
    for _ in range(60):
        middle = (low + high) / 2
        if detection_power(middle, n, level, restarts=restarts) >= power:
            high = middle
        else:
            low = middle
    return high


@lru_cache(maxsize=256)
def _passing_counts(n: int, level: float) -> tuple[tuple[int, int], ...]:
    """Every (improved, worsened) count of n binary tasks whose gain interval lies above 0."""
    return tuple((up, down) for up in range(n + 1) for down in range(n + 1 - up)
                 if gain_decision(n, float(up), float(down), EPSILON, level) == PASS)


def mixed_detection_power(improve: float, worsen: float, n: int, level: float = LEVEL) -> float:
    """Chance that n binary tasks show a gain (interval above 0) when each improves from fail to pass with
    probability `improve`, gets worse with probability `worsen`, and is otherwise unchanged: exact, over every
    (improved, worsened) count. With `worsen` 0 it is `detection_power`, the most favourable case."""
    if n <= 0 or n > N_EXACT:
        raise ValueError(f"mixed_detection_power enumerates 1..{N_EXACT} tasks, got {n}")
    same = max(0.0, 1 - improve - worsen)
    return sum(math.comb(n, up) * math.comb(n - up, down) * improve ** up * worsen ** down * same ** (n - up - down)
               for up, down in _passing_counts(n, level))


@lru_cache(maxsize=256)
def minimal_detectable_net_gain(n: int, worsen: float, level: float = LEVEL, power: float = POWER) -> float | None:
    """The smallest net gain (share improved - share worsened) detected with probability `power` by n binary
    tasks of which a share `worsen` gets worse: `minimal_detectable_gain` (the best case) when `worsen` is 0."""
    if mixed_detection_power(1.0 - worsen, worsen, n, level) < power:
        return None
    low, high = 0.0, 1.0 - worsen
    for _ in range(40):
        middle = (low + high) / 2
        low, high = (low, middle) if mixed_detection_power(middle, worsen, n, level) >= power else (middle, high)
    return high - worsen


@lru_cache(maxsize=1024)
def tasks_for_gain(gain: float, level: float = LEVEL, power: float = POWER, limit: int = 2000,
                   threshold: float = 0.0, restarts: int = 1) -> int | None:
    """The fewest held-out tasks that show a true `gain` above `threshold` with probability `power`
    (None beyond `limit`). With threshold 0 it is the tasks needed to detect a gain, or a harm, of
    that size; with threshold = min_gain, the tasks needed to *pass* a min_gain gate."""
    if gain <= max(threshold, 0.0):
        return None
    n = 1
    while detection_power(gain, n, level, threshold, restarts) < power:  # double, then bisect (power grows with n)
        if n > limit:
            return None
        n *= 2
    low, high = n // 2, n
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if detection_power(gain, middle, level, threshold, restarts) >= power else (middle, high)
    while high > 1 and detection_power(gain, high - 1, level, threshold, restarts) >= power:  # power is not monotone in n
        high -= 1
    return high if high <= limit else None


def tasks_to_pass(min_gain: float, margin: float = 0.1, level: float = LEVEL, power: float = POWER,
                  restarts: int = 1) -> int | None:
    """Held-out tasks needed to pass a `min_gain` gate with probability `power` at a true gain of min_gain + margin
    (with R restarts, by the two-level interval); None when no number up to 2000 does."""
    return tasks_for_gain(round(min_gain + margin, 6), level, power, threshold=min_gain, restarts=restarts)
