"""The exact unconditional test of a paired difference, Tango-ordered, and the interval that inverts it.

n units (tasks) each move up (+1), down (-1) or stay (0) with probabilities p+, p-, p0; the gain is
D = p+ - p-. For a hypothesised gain d0 the tables (b up, c down) are ordered by Tango's score
statistic

    T(b, c; d0) = (b - c - n d0) / sqrt(n (2 q + d0 (1 - d0))),

q the maximum-likelihood p- under D = d0 (Tango 1998, Stat Med 17:891). The one-sided p-value
against D > d0 is the largest probability, over the nuisance p-, of a table at least as extreme:
`upper_p(n, b, c, d0) = max_q P_{q, d0}(T >= T_obs)` (Berger-Boos style maximisation over a grid of
q refined around its best point); `lower_p` is its mirror image. The 95% interval is every d0 that
neither side rejects at 2.5% (found by bisection from the outside in), and the two-sided p-value of
"no effect" is twice the smaller one-sided p-value at d0 = 0, so p <= 0.05 exactly when the interval
excludes 0. Ties (tasks that stay) keep their information: that is what makes it narrower than
Clopper-Pearson on (d + 1) / 2.

Fractional counts (tasks scored as means of several samples, or clusters as units) enter as
b = sum of positive differences and c = sum of negative ones; a [0, 1]-bounded difference is
dominated in the convex order by the three-point variable with the same positive and negative
parts, and the test suite checks the coverage of this use by seeded simulation.

Only `math`. The interval and the p-value are cached per (n, b, c, level), each one-sided p-value per
(n, b, c, d0); a tail probability sums each row of b by Horner's rule (one `exp` per row).
"""

from __future__ import annotations

import math
from functools import lru_cache

GRID = 12  # nuisance points scanned before refining around the best one
REFINE = 10  # golden-section steps around the best grid point
BISECT = 17  # bisection steps per interval bound (to about 1e-5)
TOLERANCE = 1e-9
EDGE = 1e-6  # the interval's ends are searched within [-1 + EDGE, 1 - EDGE]


@lru_cache(maxsize=64)
def _tables(n: int) -> tuple[tuple[int, ...], tuple[int, ...], tuple[float, ...]]:
    """Every table (b, c) with b + c <= n, and its log multinomial coefficient."""
    bs, cs, logs = [], [], []
    log_n = math.lgamma(n + 1)
    for b in range(n + 1):
        for c in range(n - b + 1):
            bs.append(b)
            cs.append(c)
            logs.append(log_n - math.lgamma(b + 1) - math.lgamma(c + 1) - math.lgamma(n - b - c + 1))
    return tuple(bs), tuple(cs), tuple(logs)


def nuisance_mle(n: int, b: float, c: float, d0: float) -> float:
    """The maximum-likelihood p- given b up, c down out of n when p+ - p- = d0."""
    a = 2.0 * n
    bb = -b - c + (2.0 * n - b + c) * d0
    cc = -c * d0 * (1.0 - d0)
    root = (-bb + math.sqrt(max(bb * bb - 4.0 * a * cc, 0.0))) / (2.0 * a)
    return min(max(root, max(0.0, -d0)), (1.0 - d0) / 2.0)


def statistic(n: int, b: float, c: float, d0: float) -> float:
    """Tango's score statistic for D = d0 (0 for a table with no evidence either way)."""
    numerator = b - c - n * d0
    q = nuisance_mle(n, b, c, d0)
    variance = n * (2.0 * q + d0 * (1.0 - d0))
    if variance <= 1e-300:
        return 0.0 if abs(numerator) < TOLERANCE else math.copysign(math.inf, numerator)
    return numerator / math.sqrt(variance)


def _rows(n: int, members: list[int]) -> list[tuple[int, int, list[float]]]:
    """`members` grouped by b: (b, lowest c, the multinomial coefficients of c = lowest c ... highest c), a
    coefficient 0 where (b, c) is not a member."""
    bs, cs, logs = _tables(n)
    by_b: dict[int, dict[int, float]] = {}
    for i in members:
        by_b.setdefault(bs[i], {})[cs[i]] = math.exp(logs[i])
    rows = []
    for b, coefficients in sorted(by_b.items()):
        low, high = min(coefficients), max(coefficients)
        rows.append((b, low, [coefficients.get(c, 0.0) for c in range(low, high + 1)]))
    return rows


def _tail(n: int, rows: list[tuple[int, int, list[float]]], d0: float, q: float) -> float:
    """P(table in `rows`) when p- = q and p+ = q + d0 (q strictly inside its range).

    Each row of b is a polynomial in r = p- / p0 (Horner's rule; in 1 / r when r > 1, so no power
    overflows), scaled by the probability of its first (or last) table: one `exp` per row, not per table."""
    tiny = 1e-300
    log_up, log_down = math.log(max(q + d0, tiny)), math.log(max(q, tiny))
    log_stay = math.log(max(1.0 - 2.0 * q - d0, tiny))
    ratio = math.exp(log_down - log_stay)
    from_last = ratio > 1.0  # Horner from the row's last table, in powers of 1 / r
    step = 1.0 / ratio if from_last else ratio
    exp = math.exp
    total = 0.0
    for b, low, coefficients in rows:
        acc = 0.0
        for k in (coefficients if from_last else reversed(coefficients)):
            acc = acc * step + k
        c = low + len(coefficients) - 1 if from_last else low  # the table the row is scaled by
        total += exp(b * log_up + c * log_down + (n - b - c) * log_stay) * acc
    return total


def _nuisance_range(d0: float) -> tuple[float, float]:
    """The open range of p- given p+ - p- = d0, kept a hair inside its ends (where a log would be -inf)."""
    low, high = max(0.0, -d0), (1.0 - d0) / 2.0
    margin = 1e-9 * max(high - low, 1e-12)
    return low + margin, high - margin


def _extreme(n: int, members: list[int], d0: float, largest: bool) -> float:
    """max (or min) over the nuisance p- of P(members): a grid, then golden-section refinement."""
    rows = _rows(n, members)
    low, high = _nuisance_range(d0)
    sign = 1.0 if largest else -1.0
    step = (high - low) / GRID
    points = [low + step * k for k in range(GRID + 1)]
    values = [sign * _tail(n, rows, d0, q) for q in points]
    best = max(range(len(points)), key=values.__getitem__)
    a, z = points[max(best - 1, 0)], points[min(best + 1, GRID)]
    top = values[best]
    ratio = (math.sqrt(5.0) - 1.0) / 2.0
    x1, x2 = z - ratio * (z - a), a + ratio * (z - a)
    f1, f2 = sign * _tail(n, rows, d0, x1), sign * _tail(n, rows, d0, x2)
    for _ in range(REFINE):
        if f1 > f2:
            z, x2, f2 = x2, x1, f1
            x1 = z - ratio * (z - a)
            f1 = sign * _tail(n, rows, d0, x1)
        else:
            a, x1, f1 = x1, x2, f2
            x2 = a + ratio * (z - a)
            f2 = sign * _tail(n, rows, d0, x2)
    return sign * max(top, f1, f2)


@lru_cache(maxsize=64)
def _statistic_terms(n: int) -> tuple[tuple[int, float, float, int], ...]:
    """Per table, the parts of Tango's statistic that do not depend on d0: -b - c, 2n - b + c, 4 (2n) c, b - c."""
    bs, cs, _ = _tables(n)
    a = 2.0 * n
    return tuple((-b - c, 2.0 * n - b + c, 4.0 * a * c, b - c) for b, c in zip(bs, cs))


def _statistics(n: int, d0: float) -> list[float]:
    """Tango's statistic of every table for D = d0 (`statistic`, inlined for speed)."""
    a, spread, floor, ceiling = 2.0 * n, d0 * (1.0 - d0), max(0.0, -d0), (1.0 - d0) / 2.0
    twice_a, shift = 2.0 * a, n * d0
    out = []
    append = out.append
    sqrt = math.sqrt
    for minus_b_c, slope, four_a_c, difference in _statistic_terms(n):
        bb = minus_b_c + slope * d0
        discriminant = bb * bb + four_a_c * spread
        q = (-bb + sqrt(discriminant if discriminant > 0.0 else 0.0)) / twice_a
        q = ceiling if q > ceiling else floor if q < floor else q
        variance = n * (2.0 * q + spread)
        numerator = difference - shift
        if variance <= 1e-300:
            append(0.0 if abs(numerator) < TOLERANCE else math.copysign(math.inf, numerator))
        else:
            append(numerator / sqrt(variance))
    return out


@lru_cache(maxsize=16384)
def upper_p(n: int, b: float, c: float, d0: float) -> float:
    """Exact one-sided p-value of D <= d0 against D > d0 (large T is evidence of a larger gain)."""
    if d0 >= 1.0:
        return 1.0
    if d0 <= -1.0:
        return 0.0 if b + c < n or b > 0 else 1.0
    observed = statistic(n, b, c, d0)
    cut = observed - TOLERANCE * max(1.0, abs(observed))
    values = _statistics(n, d0)
    members = [i for i, t in enumerate(values) if t >= cut]
    if len(members) * 2 > len(values):  # sum over the smaller set
        rest = [i for i, t in enumerate(values) if t < cut]
        return min(1.0, max(0.0, 1.0 - _extreme(n, rest, d0, largest=False)))
    return min(1.0, _extreme(n, members, d0, largest=True))


def lower_p(n: int, b: float, c: float, d0: float) -> float:
    """Exact one-sided p-value of D >= d0 against D < d0: the mirror image of `upper_p`."""
    return upper_p(n, c, b, -d0)


def _bound(n: int, b: float, c: float, alpha: float, side: str) -> float:
    """The lower (side="low") or upper bound of the gains not rejected at one-sided `alpha`.

    Bisection between a rejected and an accepted gain, starting from the test at 0, so the bound's
    side of 0 always agrees with the p-value. The rejected end is returned (errs wide by < 2**-BISECT).
    """
    estimate = (b - c) / n
    sign = 1.0 if side == "low" else -1.0
    accepts = (lambda d: upper_p(n, b, c, d) > alpha) if side == "low" else (lambda d: lower_p(n, b, c, d) > alpha)
    if not accepts(0.0):
        rejected, accepted = 0.0, estimate
    else:
        end = -sign * (1.0 - EDGE)
        if accepts(end):
            return -sign * 1.0
        rejected, accepted = end, (min if side == "low" else max)(0.0, estimate)
    for _ in range(BISECT):
        middle = (rejected + accepted) / 2
        if accepts(middle):
            accepted = middle
        else:
            rejected = middle
    return rejected


@lru_cache(maxsize=8192)
def interval(n: int, b: float, c: float, level: float) -> tuple[float, float]:
    """The exact interval for p+ - p-: every gain neither one-sided test rejects at (1 - level) / 2."""
    if n <= 0:
        return -1.0, 1.0
    alpha = (1.0 - level) / 2.0
    return _bound(n, b, c, alpha, "low"), _bound(n, b, c, alpha, "high")


@lru_cache(maxsize=8192)
def p_value(n: int, b: float, c: float) -> float:
    """Two-sided exact p-value of "no effect" (p+ = p-): twice the smaller one-sided p-value at 0."""
    if n <= 0:
        return 1.0
    return min(1.0, 2.0 * min(upper_p(n, b, c, 0.0), lower_p(n, b, c, 0.0)))
