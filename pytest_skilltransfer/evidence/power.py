"""Power of the exact paired test: the chance to detect a gain, the minimal detectable gain (best case, and with
some tasks also getting worse), and how many held-out tasks a decision or a detection needs."""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from . import paired_exact
from .gain_tests import (
    GAIN_SPAN,
    SCORE_SPAN,
    _span_of,
    gain_bounds,
    gain_decision,
    gain_interval,
    part_level,
    restart_margins,
    score_bounds,
)
from .score_intervals import (
    EPSILON,
    INCONCLUSIVE,
    LEVEL,
    MAX_TASKS,
    N_EXACT,
    PASS,
    POWER,
    _above,
    _below,
    beta_cdf,
    decide,
)


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


@lru_cache(maxsize=65536)
def _clears(n: int, level: float, threshold: float, restarts: int, improved: int) -> bool:
    """Does a gain interval of `improved` improved tasks out of n (the rest tied, none worse) lie at or above
    `threshold` (above 0 for threshold 0)? It does exactly when the one-sided hull p-value there is at most
    (1 - level) / 2 (`paired_exact.rejects_below`), so the answer is monotone in the count. With R > 1 restarts,
    the two-level interval of R restarts that all moved the same tasks from 0 (its bar moves with the count, so
    there the answer need not be monotone: 18 of 23 tasks clear at level 0.95 with 5 restarts, 19 do not)."""
    bar = threshold
    if restarts > 1:  # the task-level bound must clear the threshold plus the margin below
        bar += restart_margins([improved / n] * restarts, SCORE_SPAN, level)[0]
        if bar >= 1.0:
            return False
    inner = level if restarts == 1 else part_level(level)  # the task-level part's level
    if n > N_EXACT:
        low = gain_interval(n, improved, 0, inner)[0]
        return low >= bar - EPSILON and (bar > 0 or low > EPSILON)
    return paired_exact.rejects_below(n, improved, 0, bar, (1 - inner) / 2)


@lru_cache(maxsize=4096)
def _improvements_needed(n: int, level: float, threshold: float = 0.0, restarts: int = 1) -> int | None:
    """Fewest improved tasks (the rest tied, none worse) whose gain interval lies at or above `threshold`
    (`_clears`); None when none does."""

    def clears(improved: int) -> bool:
        return _clears(n, level, threshold, restarts, improved)

    found = _NEEDED.setdefault((level, threshold, restarts), {})
    bracket = _bracket(clears, n, found)
    if bracket is None:
        return None
    low, high = bracket  # clears(high) holds, clears(low) does not (or low is -1)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if clears(middle) else (middle, high)
    found[n] = high
    return high


_NEEDED: dict[tuple[float, float, int], dict[int, int]] = {}  # (level, threshold, restarts) -> {n: improvements}


def _bracket(clears: Callable[[int], bool], n: int, found: dict[int, int]) -> tuple[int, int] | None:
    """(low, high) with clears(high) and not clears(low) (low -1: no count clears below high), or None when no
    count up to n clears. With every other task tied, the count that clears barely moves with n (8 or 9 from 16 to
    64 tasks at level 0.99375), so the search starts at the nearest n's count and gallops out from there: a test
    that clears (a whole hull searched) costs 10-30 times one that does not, and that start needs one of each.
    `clears` is monotone in the count, so the bisection that follows finds the same count as one over [-1, n]."""
    if not found:
        return (-1, n) if clears(n) else None
    guess = min(found[min(found, key=lambda m: (abs(m - n), m))], n)
    step = 1
    if clears(guess):
        high = guess
        while high > 0:
            low = max(high - step, -1)
            if low < 0 or not clears(low):
                return low, high
            high, step = low, step * 2
        return -1, high
    low = guess
    while low < n:
        high = min(low + step, n)
        if clears(high):
            return low, high
        low, step = high, step * 2
    return None


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


def _shows(gain: float, n: int, level: float, threshold: float, restarts: int, power: float) -> bool:
    """detection_power(gain, n, ...) >= power, from one clearing test: the power is P(Binomial(n, gain) >= the
    count that clears), and the count that clears is at most k exactly when k clears (monotone in the count), so
    the power reaches `power` exactly when the largest k with P(Binomial(n, gain) >= k) >= power clears. A count
    that does not clear is found cheaply (one p-value above the level ends the search); one that clears takes the
    whole hull, so this asks for at most one of those where the count's search asks for one or two. With restarts
    the threshold moves with the count (the restart margin), the count that clears is not monotone, and the
    power is read from the count's search (`detection_power`)."""
    if restarts > 1:
        return detection_power(gain, n, level, threshold, restarts) >= power
    gain = min(max(gain, 0.0), 1.0)
    if _binomial_upper_tail(n, gain, n) >= power:  # every count reaches the power: the largest is n
        return _clears(n, level, threshold, restarts, n)
    low, high = 0, n  # the tail at low reaches the power (it is 1 at 0), the tail at high does not
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if _binomial_upper_tail(n, gain, middle) >= power else (low, middle)
    return _clears(n, level, threshold, restarts, low)


@lru_cache(maxsize=1024)
def tasks_for_gain(gain: float, level: float = LEVEL, power: float = POWER, limit: int = 2000,
                   threshold: float = 0.0, restarts: int = 1) -> int | None:
    """The fewest held-out tasks that show a true `gain` above `threshold` with probability `power`
    (None beyond `limit`). With threshold 0 it is the tasks needed to detect a gain, or a harm, of
    that size; with threshold = min_gain, the tasks needed to *pass* a min_gain gate."""
    if gain <= max(threshold, 0.0):
        return None

    return _fewest_tasks(lambda m: _shows(gain, m, level, threshold, restarts, power), limit)


def _fewest_tasks(shows: Callable[[int], bool], limit: int) -> int | None:
    """The fewest task count at which `shows` holds (the power reaches its goal), None beyond `limit`: doubled,
    then bisected (the power grows with n), then stepped down while the count below shows too (it is not monotone
    in n)."""
    n = 1
    while not shows(n):
        if n > limit:
            return None
        n *= 2
    low, high = n // 2, n
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if shows(middle) else (middle, high)
    while high > 1 and shows(high - 1):
        high -= 1
    return high if high <= limit else None


def tasks_to_pass(min_gain: float, margin: float = 0.1, level: float = LEVEL, power: float = POWER,
                  restarts: int = 1) -> int | None:
    """Held-out tasks needed to pass a `min_gain` gate with probability `power` at a true gain of min_gain + margin
    (with R restarts, by the two-level interval); None when no number up to 2000 does."""
    return tasks_for_gain(round(min_gain + margin, 6), level, power, threshold=min_gain, restarts=restarts)
