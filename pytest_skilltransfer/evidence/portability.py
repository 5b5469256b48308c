"""Is a skill optimized against a validation set of models more portable than one optimized on the source alone?

Three paired comparisons on the target's held-out tasks form one family:

1. `single`: the single-model transferred skill - baseline (today's gain);
2. `multi`: the multi-model (portable) transferred skill - baseline;
3. `multi_vs_single`: portable - single-model, task by task.

Each is the same exact paired test as every gain (`clustered_gain`: one test gives p and interval).
Holm's step-down runs over the three p-values, and each interval is taken at the level of the Holm step
that decides its comparison: the k-th smallest p-value is tested at alpha / (m - k + 1); once a step
fails, every later comparison keeps that step's level. So an interval excludes 0 exactly when its
Holm-adjusted p is at most alpha: the interval, the adjusted p and the outcome never disagree.

The outcome word reads comparison 3: `more portable` (its interval wholly above 0), `less portable`
(wholly below), else `no difference shown`. With restarts, comparisons 1 and 2 are the restart
gains as elsewhere; comparison 3 pairs the restart-averaged task scores of the two arms (over tasks,
conditional on the optimizations run), which its `method` says.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from statistics import mean
from typing import Any

from .family import holm
from .gains import Gain, clustered_gain
from .score_intervals import HURTS, LEVEL, TRANSFERS, outcome

MORE_PORTABLE, NO_DIFFERENCE, LESS_PORTABLE = "more portable", "no difference shown", "less portable"
COMPARISONS = ("single", "multi", "multi_vs_single")
LABELS = {"single": "single-model - baseline", "multi": "multi-model - baseline",
          "multi_vs_single": "multi-model - single-model"}
RESTART_MEANS = " (restart means, over tasks)"


@dataclass(frozen=True)
class Comparison:
    """One comparison of the family: its gain (interval at `level`), raw and Holm-adjusted p, and outcome."""

    name: str
    gain: Gain
    p_adjusted: float
    level: float

    @property
    def outcome(self) -> str:
        return outcome(self.gain.low, self.gain.high)

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "label": LABELS[self.name], **self.gain.as_dict(),
                "p_holm": float(f"{self.p_adjusted:.6g}"), "level": round(self.level, 6), "outcome": self.outcome}


@dataclass(frozen=True)
class Portability:
    """The family of three comparisons and the outcome word for the portable skill."""

    comparisons: tuple[Comparison, ...]

    def __getitem__(self, name: str) -> Comparison:
        return next(c for c in self.comparisons if c.name == name)

    @property
    def word(self) -> str:
        return portability_word(self["multi_vs_single"].gain.low, self["multi_vs_single"].gain.high)

    def as_dict(self) -> dict[str, Any]:
        return {"outcome": self.word, "correction": "holm", "alpha": round(1 - LEVEL, 6),
                "comparisons": [c.as_dict() for c in self.comparisons]}


def portability_word(low: float, high: float) -> str:
    """`more portable` when the portable - single interval is wholly above 0, `less portable` wholly below:
    the item's outcome rule (`score_intervals.outcome`) in the comparison's words."""
    return {TRANSFERS: MORE_PORTABLE, HURTS: LESS_PORTABLE}.get(outcome(low, high), NO_DIFFERENCE)


def holm_levels(p_values: list[float], level: float = LEVEL) -> list[float]:
    """The confidence level of each comparison's interval under Holm's step-down (see the module doc)."""
    alpha = 1 - level
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    levels = [level] * m
    stopped: float | None = None
    for rank, index in enumerate(order):
        step = alpha / (m - rank)
        if stopped is None and p_values[index] > step:
            stopped = step
        levels[index] = 1 - (stopped if stopped is not None else step)
    return levels


def portability(baseline: list[float], single: list[list[float]], multi: list[list[float]],
                clusters: list[str | None] | tuple[str | None, ...], level: float = LEVEL) -> Portability:
    """The family for per-task hard scores: `single` and `multi` hold one list per restart (same tasks)."""
    if len(single) != len(multi):
        raise ValueError(f"the two arms need the same restarts, got {len(single)} and {len(multi)}")

    def between(at: float) -> Gain:
        if len(single) == 1:
            return clustered_gain(single[0], [multi[0]], clusters, at)
        before = [mean(run[i] for run in single) for i in range(len(baseline))]
        after = [mean(run[i] for run in multi) for i in range(len(baseline))]
        found = clustered_gain(before, [after], clusters, at)
        return replace(found, method=found.method + RESTART_MEANS)

    compute = {"single": lambda at: clustered_gain(baseline, single, clusters, at),
               "multi": lambda at: clustered_gain(baseline, multi, clusters, at),
               "multi_vs_single": between}
    raw = [compute[name](level).p_value for name in COMPARISONS]
    adjusted = holm(raw)
    levels = holm_levels(raw, level)
    return Portability(tuple(Comparison(name, compute[name](at), p, at)
                             for name, p, at in zip(COMPARISONS, adjusted, levels)))
