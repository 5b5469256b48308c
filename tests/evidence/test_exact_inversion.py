"""The exact interval is the full inversion of its test on every table of up to 30 tasks.

The one-sided p-value of the paired exact test is not monotone in the hypothesised gain, so a bisection can stop
at a crossing with accepted gains still beyond it. `paired_exact.interval` is the hull of every gain neither
one-sided test rejects; this module checks it on all 5,456 tables (b up, c down) with n <= 30, at 95%:

* a reference written here with numpy (every table's p-value at once: tables ranked by Tango's statistic, tails
  summed over a grid of the nuisance p-) finds the gains on a grid of step 0.001 that the test accepts, and every
  one lies inside the interval, whose ends lie within two grid steps of the outermost of them;
* the intervals are read from `exact_intervals.json`, written by `paired_exact.interval` itself
  (`python tests/evidence/test_exact_inversion.py` rewrites it: about three minutes), and the runtime reproduces
  them exactly on a random sample of tables and on every table where a bisection misses accepted gains.
"""

from __future__ import annotations

import json
import math
import random
import sys
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

from pytest_skilltransfer.evidence import paired_exact, stats

DATA = Path(__file__).with_name("exact_intervals.json")
MAX_N = 30
ALPHA = (1 - stats.LEVEL) / 2
STEP = 0.001  # the reference's grid of gains
NUISANCE = 30  # the reference's grid of the nuisance p- (its maximum is found at most this finely)
MARGIN = 1e-3  # a gain counts as accepted when the reference's p-value exceeds ALPHA by this much
# Tables at 24 tasks where the p-value's dips leave accepted gains beyond a bisection's crossing (a bisection on
# the p-value alone ends the upper bound at -0.1905 and 0.2680 for the first two; accepted gains reach -0.1819 and
# +0.2700).
DIPS = [(24, 2, 14), (24, 8, 10), (24, 10, 8), (24, 14, 2)]


def _tables(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    bs, cs = zip(*[(b, c) for b in range(n + 1) for c in range(n - b + 1)])
    b, c = np.array(bs, dtype=float), np.array(cs, dtype=float)
    lg = np.vectorize(math.lgamma)
    return b, c, lg(n + 1) - lg(b + 1) - lg(c + 1) - lg(n - b - c + 1)


def _tango(n: int, b: np.ndarray, c: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Tango's statistic of every table (columns) at every gain (rows), written out again from the paper."""
    d = d[:, None]
    a_, b_, c_ = 2 * n, -b - c + (2 * n - b + c) * d, -c * d * (1 - d)
    q = (-b_ + np.sqrt(np.maximum(b_ * b_ - 4 * a_ * c_, 0))) / (2 * a_)
    q = np.clip(q, np.maximum(0, -d), (1 - d) / 2)
    variance = n * (2 * q + d * (1 - d))
    numerator = b - c - n * d
    with np.errstate(divide="ignore", invalid="ignore"):
        t = numerator / np.sqrt(variance)
    flat = variance <= 1e-300
    return np.where(flat, np.where(np.abs(numerator) < 1e-9, 0.0, np.copysign(np.inf, numerator)), t)


@lru_cache(maxsize=None)
def _upper_p(n: int) -> tuple[np.ndarray, np.ndarray]:
    """The gains of the grid and every table's one-sided p-value against D > d at each (gains x tables):
    the largest over the nuisance grid of P(T >= T_obs), tables tied in T (within 1e-9) in one tail."""
    b, c, log_coefficient = _tables(n)
    gains = np.round(np.arange(-1 + STEP, 1 - STEP / 2, STEP), 10)
    out = np.zeros((len(gains), len(b)))
    for start in range(0, len(gains), 100):
        d = gains[start:start + 100]
        t = _tango(n, b, c, d)
        order = np.argsort(-t, axis=1, kind="stable")
        ranked = np.take_along_axis(t, order, axis=1)
        cut = t - 1e-9 * np.maximum(1, np.abs(t))
        # members of a table's tail: the ranked tables with T >= its cut (ranked descending)
        inside = np.array([np.searchsorted(-row, -cuts, side="right") for row, cuts in zip(ranked, cut)])
        low, high = np.maximum(0, -d), (1 - d) / 2
        share = (np.arange(NUISANCE + 1) / NUISANCE)[:, None]
        q = np.clip(low + share * (high - low), low + 1e-12, high - 1e-12)  # nuisance x gains
        up, down = np.log(q + d), np.log(q)
        stay = np.log(np.maximum(1 - 2 * q - d, 1e-300))
        log_p = (log_coefficient + b * up[..., None] + c * down[..., None] + (n - b - c) * stay[..., None])
        rows, width = len(d), len(b)
        ranked_p = np.exp(log_p).reshape(len(share), -1)[:, (order + width * np.arange(rows)[:, None]).ravel()]
        tails = np.cumsum(ranked_p.reshape(len(share), rows, width), axis=2)  # nuisance x gains x ranked tables
        at = (inside - 1 + width * np.arange(rows)[:, None]).ravel()  # each table's tail ends at its rank
        out[start:start + rows] = tails.reshape(len(share), -1)[:, at].max(axis=0).reshape(rows, width)
    return gains, np.minimum(out, 1.0)


def _accepted(n: int, margin: float) -> tuple[np.ndarray, np.ndarray, dict[tuple[int, int], int]]:
    """The gains of the grid and, per table, whether neither one-sided reference p-value is at most ALPHA +
    `margin` (gains x tables)."""
    gains, upper = _upper_p(n)
    b, c, _ = _tables(n)
    index = {(int(x), int(y)): i for i, (x, y) in enumerate(zip(b, c))}
    mirror = [index[(int(y), int(x))] for x, y in zip(b, c)]
    lower = upper[::-1][:, mirror]  # lower_p(b, c, d) = upper_p(c, b, -d); the grid is symmetric
    return gains, (upper > ALPHA + margin) & (lower > ALPHA + margin), index


def _stored() -> dict[tuple[int, int, int], tuple[float, float]]:
    rows = json.loads(DATA.read_text())["intervals"]
    return {(n, b, c): (low, high) for n, b, c, low, high in rows}


def _interval(stored: dict[tuple[int, int, int], tuple[float, float]], n: int, b: int, c: int) -> tuple[float, float]:
    """A table's stored interval (tables with b < c by symmetry)."""
    if b >= c:
        return stored[(n, b, c)]
    low, high = stored[(n, c, b)]
    return -high, -low


@pytest.mark.parametrize("n", range(1, MAX_N + 1))
def test_every_accepted_gain_lies_inside_the_interval(n: int) -> None:
    """Every gain the reference accepts (by MARGIN) lies inside the interval, and the interval reaches no further
    than two grid steps beyond the gains it accepts within MARGIN (its nuisance grid finds the maximum a little
    low)."""
    stored = _stored()
    gains, accepted, index = _accepted(n, MARGIN)
    _, near, _ = _accepted(n, -MARGIN)
    for (b, c), i in index.items():
        low, high = _interval(stored, n, b, c)
        inside, reach = gains[accepted[:, i]], gains[near[:, i]]
        assert inside.size, (n, b, c)
        assert low <= inside.min() and inside.max() <= high, (n, b, c, low, high, inside.min(), inside.max())
        assert low > reach.min() - 2 * STEP or low == -1.0, (n, b, c, low, reach.min())
        assert high < reach.max() + 2 * STEP or high == 1.0, (n, b, c, high, reach.max())


def test_the_runtime_reproduces_the_stored_intervals() -> None:
    stored = _stored()
    assert len(stored) == sum(1 for n in range(1, MAX_N + 1) for b in range(n + 1) for c in range(n - b + 1)
                              if b >= c)
    rng = random.Random(47)
    sample = rng.sample(sorted(stored), 12) + DIPS
    for n, b, c in sample:
        assert paired_exact.interval(n, b, c, stats.LEVEL) == pytest.approx(_interval(stored, n, b, c), abs=1e-12)


@pytest.mark.parametrize("n, b, c", DIPS)
def test_a_table_whose_p_value_dips_gets_its_accepted_gains(n: int, b: int, c: int) -> None:
    """The outermost gains the reference accepts are accepted by the runtime's own p-values too, and lie inside
    its interval; the p-value agrees with the interval."""
    gains, accepted, index = _accepted(n, MARGIN)
    inside = gains[accepted[:, index[(b, c)]]]
    low, high = paired_exact.interval(n, b, c, stats.LEVEL)
    for d in (inside.min(), inside.max()):
        assert paired_exact.upper_p(n, b, c, d) > ALPHA and paired_exact.lower_p(n, b, c, d) > ALPHA
        assert low <= d <= high, (d, low, high)
    assert (paired_exact.p_value(n, b, c) <= 1 - stats.LEVEL) == (low > 0 or high < 0)


def _write() -> None:
    """Rewrite `exact_intervals.json` from the runtime (every table with b >= c; the rest by symmetry)."""
    from concurrent.futures import ProcessPoolExecutor

    tables = [(n, b, c) for n in range(1, MAX_N + 1) for b in range(n + 1) for c in range(n - b + 1) if b >= c]
    with ProcessPoolExecutor(1) as pool:
        bounds = list(pool.map(_runtime, tables, chunksize=16))
    rows = [[n, b, c, low, high] for (n, b, c), (low, high) in zip(tables, bounds)]
    DATA.write_text(json.dumps({"level": stats.LEVEL, "intervals": rows}, separators=(",", ":")) + "\n")


def _runtime(table: tuple[int, int, int]) -> tuple[float, float]:
    return paired_exact.interval(*table, stats.LEVEL)


if __name__ == "__main__":  # python tests/evidence/test_exact_inversion.py: rewrite exact_intervals.json
    sys.exit(_write())
