"""Paired gains between two scorings of one task set: one exact test gives the p-value and the interval
(`paired_exact`), over tasks, clusters or restart-averaged tasks; its decisions, power, minimal detectable gain and
the number of tasks a decision needs (the methods are described in `stats`)."""

from __future__ import annotations

import math
from dataclasses import replace
from functools import lru_cache
from typing import Any, Iterable

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
    N_EXACT,
    PASS,
    SCORE_METHOD,
    Estimate,
    decide,
    interval_of_sum,
    mean,
    score,
)


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


def moves(differences: Iterable[float]) -> tuple[float, float]:
    """The exact test's statistics of per-task differences (after - before, in [-1, 1]): the summed moves up and
    the summed moves down (both >= 0; a fractional difference is a fractional move)."""
    values = list(differences)
    return sum(d for d in values if d > 0), -sum(d for d in values if d < 0)


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


@lru_cache(maxsize=65536)
def gain_decision(n: int, up: float, down: float, threshold: float, level: float = LEVEL) -> str:
    """`decide` on the gain's interval without computing it: the same test at the threshold itself
    (pass: it rejects every gain below the threshold; fail: every gain at or above it). Kept per arguments: a
    look's predictive probability asks it of every final count the remaining tasks can reach, and the item's
    next look asks most of them again."""
    if n <= 0:
        return INCONCLUSIVE
    if n > N_EXACT:
        return decide(*gain_interval(n, up, down, level), threshold)
    up, down, alpha = round(up, 9), round(down, 9), (1 - level) / 2
    if threshold <= -1.0 + EPSILON or paired_exact.rejects_below(n, up, down, threshold - EPSILON, alpha):
        return PASS
    if threshold > 1.0 or paired_exact.rejects_above(n, up, down, threshold - EPSILON, alpha):
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


def difference_interval_of_mean(mean_value: float, n: int, level: float = LEVEL) -> tuple[float, float]:
    """`difference_interval` from the mean of n differences (what a JSON report keeps)."""
    low, high = interval_of_sum((mean_value + 1) / 2 * n, n, level)
    return 2 * low - 1, 2 * high - 1


# -- decisions, power and task counts ------------------------------------------------------------


