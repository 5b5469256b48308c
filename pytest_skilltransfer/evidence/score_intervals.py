"""Score intervals for a mean of task values in [0, 1] (Clopper-Pearson in its Beta form, exact arithmetic),
the decision of an interval against a threshold, and the levels and words every statistic of the package shares
(the methods are described in `stats`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable

LEVEL = 0.95
POWER = 0.80
SCORE_METHOD = "clopper-pearson"
N_EXACT = 100  # above this many units the gain's test and interval are Tango's asymptotic ones
GAIN_METHOD = "exact unconditional (Tango score order); interval inverts the same test"
GAIN_METHOD_LARGE = f"Tango score, asymptotic (above {N_EXACT} tasks); interval inverts the same test"
RESTART_GAIN_METHOD = ("exact unconditional on restart-averaged tasks at 97.5%, widened by a distribution-free "
                       "bound over restarts at 97.5% (Anderson); p inverts the same interval")
EPSILON = 1e-9
MAX_TASKS = 100_000  # beyond this a decision is reported as out of reach

PASS, FAIL, INCONCLUSIVE = "pass", "fail", "inconclusive"
TASK_UNIT, CLUSTER_UNIT = "task", "cluster"
TRANSFERS, HURTS, NO_EFFECT = "transfers", "hurts", "no effect shown"


# -- the Beta distribution -----------------------------------------------------------------------


def _beta_fraction(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta (modified Lentz), valid for x < (a+1)/(a+b+2)."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    result = d
    for m in range(1, 1000):
        m2 = 2 * m
        for numerator in (m * (b - m) * x / ((a + m2 - 1) * (a + m2)),
                          -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1))):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            result *= c * d
        if abs(c * d - 1.0) < 1e-15:
            break
    return result


def beta_cdf(x: float, a: float, b: float) -> float:
    """The regularized incomplete beta function I_x(a, b) for a, b > 0."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_fraction(b, a, 1.0 - x) / b


def beta_quantile(q: float, a: float, b: float) -> float:
    """The q-quantile of Beta(a, b), by bisection on `beta_cdf`."""
    low, high = 0.0, 1.0
    for _ in range(100):
        middle = (low + high) / 2
        if beta_cdf(middle, a, b) < q:
            low = middle
        else:
            high = middle
        if high - low < 1e-12:
            break
    return (low + high) / 2


# -- score intervals -----------------------------------------------------------------------------


def _alpha(level: float) -> float:
    return (1.0 - level) / 2.0


def interval_of_sum(total: float, n: int, level: float = LEVEL) -> tuple[float, float]:
    """Clopper-Pearson bounds for the mean of n values in [0, 1] summing to `total`."""
    if n <= 0:
        return 0.0, 1.0
    total = min(max(total, 0.0), float(n))
    tail = _alpha(level)
    low = 0.0 if total <= EPSILON else beta_quantile(tail, total, n - total + 1)
    high = 1.0 if total >= n - EPSILON else beta_quantile(1 - tail, total + 1, n - total)
    return low, high


def _above(total: float, n: int, threshold: float, level: float) -> bool:
    """True when the lower bound is at or above `threshold` (one Beta evaluation, no bisection)."""
    if threshold <= 0.0:
        return True
    if total <= EPSILON:
        return False
    return beta_cdf(threshold, total, n - total + 1) <= _alpha(level) + 1e-12


def _below(total: float, n: int, threshold: float, level: float) -> bool:
    """True when the upper bound is strictly below `threshold`."""
    if threshold > 1.0:
        return True
    if total >= n - EPSILON:
        return False
    return beta_cdf(threshold, total + 1, n - total) > 1 - _alpha(level) + 1e-12


@dataclass(frozen=True)
class Estimate:
    """A mean over `n` tasks with its exact interval."""

    mean: float
    low: float
    high: float
    n: int
    method: str = SCORE_METHOD
    unit: str = TASK_UNIT  # what `n` counts: tasks, or clusters of them (`clustered_score`)
    tasks: int = 0  # with clusters: the tasks in them

    def as_dict(self) -> dict[str, float | int | str]:
        data: dict[str, float | int | str] = {
            "mean": round(self.mean, 4), "ci_low": round(self.low, 4), "ci_high": round(self.high, 4),
            "n": self.n, "method": self.method}
        if self.unit == CLUSTER_UNIT:
            data.update({"unit": CLUSTER_UNIT, "clusters": self.n, "tasks": self.tasks})
        return data


def mean(values: Iterable[float]) -> float:
    """Arithmetic mean; 0.0 for no values."""
    values = list(values)
    return sum(values) / len(values) if values else 0.0


def score(values: list[float], level: float = LEVEL) -> Estimate:
    """Mean of per-task values in [0, 1] with the Clopper-Pearson interval on their sum."""
    n = len(values)
    if n == 0:
        return Estimate(0.0, 0.0, 1.0, 0)
    low, high = interval_of_sum(sum(values), n, level)
    return Estimate(mean(values), low, high, n)


def outcome(low: float, high: float) -> str:
    """What a gain's interval shows: `transfers` (wholly above 0), `hurts` (wholly below 0), else `no effect shown`."""
    if low > EPSILON:
        return TRANSFERS
    if high < -EPSILON:
        return HURTS
    return NO_EFFECT


def decide(low: float, high: float, threshold: float) -> str:
    """pass: the interval lies at or above `threshold`; fail: entirely below it; else inconclusive."""
    if low >= threshold - EPSILON:
        return PASS
    if high < threshold - EPSILON:
        return FAIL
    return INCONCLUSIVE
