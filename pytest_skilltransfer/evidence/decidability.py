"""Which items of a run can ever be a finding after Holm, known before any model is called.

An item's exact test has a smallest attainable p-value, fixed by its number of held-out units (tasks, or
clusters) and restarts: every unit moving fully one way (`smallest_p`). Holm's step-down rejects the
k-th smallest p-value of m only when it and every smaller one pass their own bars, p_(j) <= alpha /
(m - j + 1). So an item can be a finding in its run's family only if, with its p at that smallest value
and some of the other items ahead of it at theirs, every bar up to its own is met (`reachable`): the most
favourable case there is. When not even that case makes it, the item can print `transfers` or `hurts`
on its own test and still never count after Holm; the run says so up front, with the number of held-out
units that would make it reachable (`units_to_reach`), and the summary counts such items apart.
"""

from __future__ import annotations

import bisect
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
    """Whether item `index` can be a Holm finding in a family whose items have these smallest p-values:
    some of the others (those that can come first, the smallest of them) at their smallest p, then this one
    at its own, each passing its step-down bar."""
    return _reachable_all(smallest, alpha)[index]


def _reachable_all(smallest: list[float], alpha: float) -> list[bool]:
    """`reachable` for every item at once, in O(m log m).

    The others ahead of an item are those with a smallest p at or below its own: in the sorted list, the
    values up to its own less one copy of it. Putting `count` of them first passes their bars only while
    every one of them passes its own, a prefix condition on the sorted list that holds up to some length
    L; the item's own bar alpha / (m - count) grows with `count`, so the most favourable case puts
    min(L, those ahead) first."""
    m = len(smallest)
    ordered = sorted(smallest)
    valid = 0  # the longest prefix of `ordered` whose every value passes its bar
    while valid < m and ordered[valid] <= alpha / (m - valid) + EPSILON:
        valid += 1
    out = []
    for mine in smallest:
        ahead = bisect.bisect_right(ordered, mine) - 1
        count = min(valid, ahead)
        out.append(mine <= alpha / (m - count) + EPSILON)
    return out


def units_to_reach(index: int, units: list[int], restarts: list[int], alpha: float = ALPHA) -> int | None:
    """The fewest held-out units (>= its own) at which item `index` becomes reachable, the others unchanged;
    None beyond `MAX_UNITS`."""
    smallest = [smallest_p(n, r) for n, r in zip(units, restarts)]
    for n in range(units[index], MAX_UNITS + 1):
        smallest[index] = smallest_p(n, restarts[index])
        if reachable(index, smallest, alpha):
            return n
    return None


def unreachable(units: list[int], restarts: list[int], alpha: float = ALPHA) -> dict[int, int | None]:
    """{index: units that would make it reachable (None: more than `MAX_UNITS`)} for every item of the family
    (given by its held-out units and restarts) that can never be a Holm finding in it."""
    smallest = [smallest_p(n, r) for n, r in zip(units, restarts)]
    able = _reachable_all(smallest, alpha)
    return {i: units_to_reach(i, units, restarts, alpha) for i in range(len(units)) if not able[i]}
