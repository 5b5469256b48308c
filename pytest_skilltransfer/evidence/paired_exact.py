"""The exact unconditional test of a paired difference, Tango-ordered, and the interval that inverts it.

n units (tasks) each move up (+1), down (-1) or stay (0) with probabilities p+, p-, p0; the gain is
D = p+ - p-. For a hypothesised gain d0 the tables (b up, c down) are ordered by Tango's score
statistic

    T(b, c; d0) = (b - c - n d0) / sqrt(n (2 q + d0 (1 - d0))),

q the maximum-likelihood p- under D = d0 (Tango 1998, Stat Med 17:891). The one-sided p-value
against D > d0 is the largest probability, over the nuisance p-, of a table at least as extreme:
`upper_p(n, b, c, d0) = max_q P_{q, d0}(T >= T_obs)` (Berger-Boos style maximisation over a grid of
q refined around its best point); `lower_p` is its mirror image. These p-values are not monotone in d0 (a
table leaving the region {T >= T_obs} as d0 moves can lower them), so the 95% interval is the hull of every d0
that neither side rejects at 2.5%: it inverts the hull p-values (`hull_upper_p`: the largest `upper_p` at any
gain up to d0, found by branch and bound), and no gain outside it is accepted. The two-sided p-value of
"no effect" is twice the smaller one-sided hull p-value at d0 = 0, so p <= 0.05 exactly when the interval
excludes 0. Ties (tasks that stay) keep their information: that is what makes it narrower than
Clopper-Pearson on (d + 1) / 2.

Fractional counts (tasks scored as means of several samples, or clusters as units) enter as
b = sum of positive differences and c = sum of negative ones; a [0, 1]-bounded difference is
dominated in the convex order by the three-point variable with the same positive and negative
parts, and the test suite checks the coverage of this use by seeded simulation.

Only `math`. The interval and the p-value are cached per (n, b, c, level), each one-sided p-value per
(n, b, c, d0); a tail probability sums each row of b by Horner's rule (one `exp` per row). Every table of up to
30 tasks is checked against an independent inversion (tests/evidence/test_exact_inversion.py).
"""

from __future__ import annotations

import math
from functools import lru_cache
from itertools import groupby

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


@lru_cache(maxsize=64)
def _coefficients(n: int) -> tuple[float, ...]:
    """Every table's multinomial coefficient, in the order of `_tables`."""
    return tuple(math.exp(log) for log in _tables(n)[2])


def _rows(n: int, members: list[int]) -> list[tuple[int, int, list[float]]]:
    """`members` (ascending) grouped by b: (b, lowest c, the multinomial coefficients of c = lowest c ... highest
    c), a coefficient 0 where (b, c) is not a member (tables are numbered by b, then c)."""
    bs, cs, _ = _tables(n)
    coefficients = _coefficients(n)
    rows: list[tuple[int, int, list[float]]] = []
    for b, group in groupby(sorted(members), key=bs.__getitem__):
        indexes = list(group)
        first, last = indexes[0], indexes[-1]
        if last - first + 1 == len(indexes):  # a run of c (a region's row): no gaps to fill
            rows.append((b, cs[first], list(coefficients[first:last + 1])))
        else:
            row = [0.0] * (last - first + 1)
            for i in indexes:
                row[i - first] = coefficients[i]
            rows.append((b, cs[first], row))
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


def _extreme(n: int, members: list[int], d0: float, largest: bool, above: float = math.inf) -> float:
    """max (or min) over the nuisance p- of P(members): a grid, then golden-section refinement; with `above`, the
    first grid value beyond it (signed as the search: a maximum above it, or a minimum below -`above`)."""
    rows = _rows(n, members)
    low, high = _nuisance_range(d0)
    sign = 1.0 if largest else -1.0
    step = (high - low) / GRID
    points = [low + step * k for k in range(GRID + 1)]
    values = []
    for q in points:
        values.append(sign * _tail(n, rows, d0, q))
        if values[-1] > above:
            return sign * values[-1]
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


@lru_cache(maxsize=512)
def _statistics_at(n: int, d0: float) -> list[float]:
    """`_statistics`, kept for the gains a search comes back to."""
    return _statistics(n, d0)


@lru_cache(maxsize=16384)
def upper_p(n: int, b: float, c: float, d0: float) -> float:
    """Exact one-sided p-value of D <= d0 against D > d0 (large T is evidence of a larger gain)."""
    if d0 >= 1.0:
        return 1.0
    if d0 <= -1.0:
        return 0.0 if b + c < n or b > 0 else 1.0
    observed = statistic(n, b, c, d0)
    cut = observed - TOLERANCE * max(1.0, abs(observed))
    values = _statistics_at(n, d0)
    members = [i for i, t in enumerate(values) if t >= cut]
    if len(members) * 2 > len(values):  # sum over the smaller set
        rest = [i for i, t in enumerate(values) if t < cut]
        return min(1.0, max(0.0, 1.0 - _extreme(n, rest, d0, largest=False)))
    return min(1.0, _extreme(n, members, d0, largest=True))


def lower_p(n: int, b: float, c: float, d0: float) -> float:
    """Exact one-sided p-value of D >= d0 against D < d0: the mirror image of `upper_p`."""
    return upper_p(n, c, b, -d0)


# -- the hull of the gains the test does not reject ------------------------------------------------
#
# The one-sided p-value is not monotone in d0: as d0 moves, tables leave and enter the region {T >= T_obs},
# and when one leaves the p-value can drop. The interval is the hull of every gain not rejected, so it inverts
# the hull p-value sup_{d <= d0} upper_p(d) (`hull_upper_p`), which rises with d0. It is found by branch and
# bound over gains: on a stretch [lo, hi] every region lies within {T(lo) >= T_obs(hi)}, because every table's
# statistic falls as d0 rises; that set is an upper set (T rises with b and falls with c), and for an upper set
# the largest probability over the nuisance rises with d0 (every point of a lower d0 is dominated by one of hi).
# So that set's largest probability at hi bounds upper_p on the whole stretch; a stretch whose bound is small
# enough is done, any other is split at its middle, where the p-value itself is tried.

SMALLEST_STRETCH = 1e-5  # a stretch this narrow is not split further: the hull is exact to this width in the gain
LEFT_STRETCHES = 6  # the stretches below d0 start at -1 + (d0 + 1) / 8**k, k = 6 ... 1
SLACK = 1e-7  # the hull p-value's own relative precision (a decision against a level is exact)
_CLEARED: dict[tuple[int, float, float, float], float] = {}  # (n, b, c, alpha): every gain up to here is rejected


def _cut(n: int, b: float, c: float, d0: float) -> float:
    """The least statistic of a table in the region {T >= T_obs} at d0 (as `upper_p` draws it)."""
    observed = statistic(n, b, c, d0)
    return observed - TOLERANCE * max(1.0, abs(observed))


@lru_cache(maxsize=65536)
def _stretch_bound(n: int, b: float, c: float, low: float, high: float, enough: float = math.inf) -> float:
    """A bound on upper_p(d) for every d in [low, high]: the largest probability at `high` of every table whose
    statistic at `low` reaches the region's cut at `high` (or any value above `enough` once one shows)."""
    cut = _cut(n, b, c, high)
    cut -= TOLERANCE * max(1.0, abs(cut))
    values = _statistics_at(n, low)
    members = [i for i, t in enumerate(values) if t >= cut]
    if len(members) * 2 > len(values):
        rest = [i for i, t in enumerate(values) if t < cut]
        return min(1.0, max(0.0, 1.0 - _extreme(n, rest, high, largest=False, above=enough - 1.0)))
    return min(1.0, _extreme(n, members, high, largest=True, above=enough))


def _hull(n: int, b: float, c: float, d0: float, alpha: float | None = None) -> float:
    """sup_{d <= d0} upper_p(d) (`hull_upper_p`); with `alpha`, any value above it as soon as one is found, or
    a value at most alpha when every p-value up to d0 is."""
    best = upper_p(n, b, c, d0)
    if alpha is not None and best > alpha:
        return best
    key = (n, b, c, -1.0 if alpha is None else alpha)
    start = -1.0 + EDGE if alpha is None else max(-1.0 + EDGE, _CLEARED.get(key, -1.0))
    # stretches shrinking geometrically towards -1, where the statistics grow without bound and only a narrow
    # stretch has a small bound
    cuts = [start, *sorted(p for p in (-1.0 + (d0 + 1.0) * 8.0 ** -k for k in range(1, LEFT_STRETCHES + 1))
                           if start < p < d0), d0]
    stretches = list(zip(cuts, cuts[1:])) if start < d0 else []
    while stretches:
        low, high = stretches.pop()  # the highest first: a gain not rejected lies most likely near d0
        enough = best * (1.0 + SLACK) if alpha is None else alpha
        if _stretch_bound(n, b, c, low, high, enough) <= enough:
            continue
        middle = (low + high) / 2
        best = max(best, upper_p(n, b, c, middle))
        if alpha is not None and best > alpha:
            return best
        if high - low > SMALLEST_STRETCH:
            stretches += [(low, middle), (middle, high)]
    if alpha is not None:
        if len(_CLEARED) > 100_000:
            _CLEARED.clear()
        _CLEARED[key] = max(_CLEARED.get(key, -1.0), d0)
    return best


def hull_upper_p(n: int, b: float, c: float, d0: float) -> float:
    """The one-sided p-value of D <= d0 that the interval inverts: the largest `upper_p` at any gain up to d0.

    A gain the test does not reject lies inside the interval, so rejecting D <= d0 takes rejecting every gain
    below d0 too; this p-value rises with d0, and its inversion is the hull of every gain not rejected."""
    if n <= 0 or d0 >= 1.0:
        return 1.0
    if d0 <= -1.0:
        return upper_p(n, b, c, d0)
    return _hull(n, b, c, d0)


def hull_lower_p(n: int, b: float, c: float, d0: float) -> float:
    """The mirror image of `hull_upper_p`: the largest `lower_p` at any gain from d0 up."""
    return hull_upper_p(n, c, b, -d0)


def rejects_below(n: int, b: float, c: float, d0: float, alpha: float) -> bool:
    """True when the test rejects every gain up to d0 at one-sided `alpha` (`hull_upper_p` <= alpha)."""
    if d0 >= 1.0:
        return False
    if d0 <= -1.0:
        return upper_p(n, b, c, d0) <= alpha
    return _hull(n, b, c, d0, alpha) <= alpha


def rejects_above(n: int, b: float, c: float, d0: float, alpha: float) -> bool:
    """True when the test rejects every gain from d0 up at one-sided `alpha` (`hull_lower_p` <= alpha)."""
    return rejects_below(n, c, b, -d0, alpha)


def _low_bound(n: int, b: float, c: float, alpha: float) -> float:
    """The least gain the test does not reject at one-sided `alpha` from below (`hull_upper_p` > alpha).

    Bisection between a gain every gain below which is rejected and one that is not, starting from the test
    at 0, so the bound's side of 0 always agrees with the p-value: first on `upper_p` (cheap; it keeps the
    accepted end accepted), then, when some gain below the crossing it found is accepted after all, on the hull
    p-value, which rises with the gain. The rejected end is returned (errs wide by < 2**-BISECT)."""
    estimate = (b - c) / n
    if rejects_below(n, b, c, 0.0, alpha):
        start, accepted = 0.0, max(estimate, 0.0)
        while rejects_below(n, b, c, accepted, alpha):  # never past 1, where nothing is rejected
            accepted = (accepted + 1.0) / 2
    else:
        start, accepted = -(1.0 - EDGE), min(0.0, estimate)
        if not rejects_below(n, b, c, start, alpha):
            return -1.0
    rejected = start
    for _ in range(BISECT):
        middle = (rejected + accepted) / 2
        if upper_p(n, b, c, middle) > alpha:
            accepted = middle
        else:
            rejected = middle
    if rejects_below(n, b, c, rejected, alpha):
        return rejected
    rejected, accepted = start, rejected  # a gain below the crossing is accepted: the hull's crossing lies lower
    for _ in range(BISECT):
        middle = (rejected + accepted) / 2
        if rejects_below(n, b, c, middle, alpha):
            rejected = middle
        else:
            accepted = middle
    return rejected


@lru_cache(maxsize=8192)
def interval(n: int, b: float, c: float, level: float) -> tuple[float, float]:
    """The exact interval for p+ - p-: the hull of every gain neither one-sided test rejects at (1 - level) / 2
    (the test's full inversion: no gain outside it is accepted)."""
    if n <= 0:
        return -1.0, 1.0
    alpha = (1.0 - level) / 2.0
    return _low_bound(n, b, c, alpha), -_low_bound(n, c, b, alpha)


@lru_cache(maxsize=8192)
def p_value(n: int, b: float, c: float) -> float:
    """Two-sided exact p-value of "no effect" (p+ = p-): twice the smaller one-sided hull p-value at 0
    (`hull_upper_p`), so p <= 1 - level exactly when the interval at that level excludes 0."""
    if n <= 0:
        return 1.0
    return min(1.0, 2.0 * min(hull_upper_p(n, b, c, 0.0), hull_lower_p(n, b, c, 0.0)))
