"""Which items of a run can ever be a finding of its family, known before any model is called.

An item's exact test has a smallest attainable p-value, fixed by its number of held-out units (tasks, or
clusters) and restarts: every unit moving fully one way (`smallest_p`). The run's family tests every item at
Bonferroni's bar alpha / m (`run_family`), so an item can be a finding only if its smallest p-value passes that
bar (`reachable`). When it cannot, the item says `undecidable at n tasks` instead of an outcome; the run says so
up front, with the number of held-out units that would make it reachable (`units_to_reach`), and the summary
counts such items apart.
"""

from __future__ import annotations

from functools import lru_cache

from .gain_tests import gain_p_value, restart_p_value
from .score_intervals import EPSILON, LEVEL

ALPHA = round(1 - LEVEL, 6)
MAX_UNITS = 400


@lru_cache(maxsize=4096)
def smallest_p(units: int, restarts: int = 1) -> float:
    """The smallest two-sided p-value the exact family gives with `units` held-out units and R restarts:
    every unit moving from 0 to 1 in every restart (2 / 2**n for one optimization)."""
    if units <= 0:
        return 1.0
    if restarts <= 1:
        return gain_p_value(units, float(units), 0.0)
    return restart_p_value(units, float(units), 0.0, [1.0] * restarts, (0.0, 1.0))


def reachable(index: int, smallest: list[float], alpha: float = ALPHA) -> bool:
    """Whether item `index` can be a finding in a family whose items have these smallest p-values: its own passes
    Bonferroni's bar alpha / m."""
    return _reachable_all(smallest, alpha)[index]


def _reachable_all(smallest: list[float], alpha: float) -> list[bool]:
    """`reachable` for every item at once."""
    bar = alpha / max(len(smallest), 1) + EPSILON
    return [mine <= bar for mine in smallest]


def units_to_reach(index: int, units: list[int], restarts: list[int], alpha: float = ALPHA) -> int | None:
    """The fewest held-out units (>= its own) at which item `index` becomes reachable, the others unchanged;
    None beyond `MAX_UNITS`. Found by bisection: the smallest p-value falls as units are added (each added unit
    moves fully one way too: more evidence), so the units that reach form one stretch up to `MAX_UNITS`."""
    smallest = [smallest_p(n, r) for n, r in zip(units, restarts)]

    def reaches(n: int) -> bool:
        smallest[index] = smallest_p(n, restarts[index])
        return reachable(index, smallest, alpha)

    low, high = units[index], MAX_UNITS
    if not reaches(high):
        return None
    if reaches(low):
        return low
    while high - low > 1:  # reaches(high), not reaches(low)
        middle = (low + high) // 2
        low, high = (low, middle) if reaches(middle) else (middle, high)
    return high


def unreachable(units: list[int], restarts: list[int], alpha: float = ALPHA,
                among: list[bool] | None = None) -> dict[int, int | None]:
    """{index: units that would make it reachable (None: more than `MAX_UNITS`)} for every item of the family
    (given by its held-out units and restarts) that can never be a finding in it; only items `among` marks, when
    given (the search for the units each needs costs a test per unit count)."""
    smallest = [smallest_p(n, r) for n, r in zip(units, restarts)]
    able = _reachable_all(smallest, alpha)
    return {i: units_to_reach(i, units, restarts, alpha) for i in range(len(units))
            if not able[i] and (among is None or among[i])}
