"""Across items and runs: Holm's step-down adjustment of a family of p-values, and the paired regression check
against a committed result."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from .gain_tests import gain_interval
from .gains import Gain, clustered_gain
from .score_intervals import EPSILON, FAIL, LEVEL, PASS


def holm(p_values: list[float]) -> list[float]:
    """Holm's step-down adjusted p-values (family-wise error), in the input order."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted = [1.0] * len(p_values)
    running = 0.0
    m = len(p_values)
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


@lru_cache(maxsize=None)
def seeds_needed(level: float = LEVEL) -> int:
    """The fewest seeds whose interval over seeds can lie wholly above 0 (every seed at gain +1): below it
    the summary and the source frontier give no interval over seeds."""
    k = 1
    while gain_interval(k, k, 0.0, level)[0] <= 0:
        k += 1
    return k


@dataclass(frozen=True)
class Regression:
    """A paired comparison of per-task scores before (committed) and after (this run)."""

    verdict: str  # pass or fail: fail only on evidence of a drop beyond the tolerance
    gain: Gain | None  # after - before over the common tasks; None without common tasks
    tolerance: float
    common: int
    only_before: tuple[str, ...]
    only_after: tuple[str, ...]

    def message(self) -> str:
        if self.gain is None:
            return "no task in common with the committed snapshot: regression not tested"
        g = self.gain
        over = (f"{g.n} cluster(s) of {self.common} common task(s)" if g.clustered
                else f"{self.common} common task(s)")
        return (f"transferred change {g.mean:+.3f} [{g.low:+.3f}, {g.high:+.3f}] over {over} "
                f"vs the committed snapshot (p = {g.p_value:.3g}, tolerance {self.tolerance:.3f})")


def regression(before: dict[str, float], after: dict[str, float], tolerance: float,
               level: float = LEVEL, clusters: dict[str, str | None] | None = None) -> Regression:
    """Fail only when the paired change after - before on the common tasks is surely below -tolerance;
    with `clusters` ({task id: cluster}), clusters of the common tasks are the units (`clustered_gain`)."""
    common = [task for task in before if task in after]
    only_before = tuple(t for t in before if t not in after)
    only_after = tuple(t for t in after if t not in before)
    if not common:
        return Regression(PASS, None, tolerance, 0, only_before, only_after)
    gain = clustered_gain([before[t] for t in common], [[after[t] for t in common]],
                          [(clusters or {}).get(t) for t in common], level)
    verdict = FAIL if gain.high < -tolerance - EPSILON else PASS
    return Regression(verdict, gain, tolerance, len(common), only_before, only_after)
