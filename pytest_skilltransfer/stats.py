"""Means with bootstrap confidence intervals, and the paired gain between two scorings of one task set.

The unit of resampling is the task: a task's value is the mean over its samples, and the interval
is the percentile interval of the task-resampled mean. Resampling uses a fixed RNG seed, so the same
scores always give the same interval.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

RESAMPLES = 2000
LEVEL = 0.95
RNG_SEED = 20260


@dataclass(frozen=True)
class Estimate:
    """A mean with a confidence interval over `n` tasks."""

    mean: float
    low: float
    high: float
    n: int

    def half_width(self) -> float:
        return (self.high - self.low) / 2

    def as_dict(self) -> dict[str, float | int]:
        return {"mean": round(self.mean, 4), "ci_low": round(self.low, 4), "ci_high": round(self.high, 4), "n": self.n}


def mean(values: list[float]) -> float:
    """Arithmetic mean; 0.0 for no values."""
    return sum(values) / len(values) if values else 0.0


def _percentile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return 0.0
    position = q * (len(sorted_values) - 1)
    lower = int(position)
    upper = min(lower + 1, len(sorted_values) - 1)
    return sorted_values[lower] + (sorted_values[upper] - sorted_values[lower]) * (position - lower)


def bootstrap(values: list[float], resamples: int = RESAMPLES, level: float = LEVEL) -> Estimate:
    """Mean of per-task values with a percentile bootstrap interval."""
    n = len(values)
    if n == 0:
        return Estimate(0.0, 0.0, 0.0, 0)
    center = mean(values)
    if n == 1 or len(set(values)) == 1:
        return Estimate(center, center, center, n)
    rng = random.Random(RNG_SEED)
    means = sorted(mean([values[rng.randrange(n)] for _ in range(n)]) for _ in range(resamples))
    tail = (1 - level) / 2
    return Estimate(center, _percentile(means, tail), _percentile(means, 1 - tail), n)


def paired_gain(before: list[float], after: list[float]) -> Estimate:
    """Mean of per-task differences after - before, with a task-resampled bootstrap interval."""
    if len(before) != len(after):
        raise ValueError(f"paired comparison needs equal task lists, got {len(before)} and {len(after)}")
    return bootstrap([b - a for a, b in zip(before, after)])
