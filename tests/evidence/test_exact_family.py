"""The paired gain's exact family: one test gives the p-value and the interval; coverage by enumeration.

Reference values are computed here independently of `paired_exact`: the test's p-value by brute
force over every table with a fine nuisance grid, and the coverage of the interval over a grid of
paired designs (marginals 0.1-0.9, correlation 0-0.9) by exact enumeration of every table.
"""

from __future__ import annotations

import math
from functools import lru_cache
from itertools import accumulate

import pytest

from pytest_skilltransfer.evidence import paired_exact, stats

ALPHA = 0.025  # each side of a 95% interval
MARGINALS = [round(0.1 * k, 1) for k in range(1, 10)]
CORRELATIONS = [round(0.1 * k, 1) for k in range(10)]
REFERENCE_GRID = 200


@lru_cache(maxsize=None)
def _tables(n: int) -> tuple[tuple[int, int, float], ...]:
    return tuple((b, c, math.lgamma(n + 1) - math.lgamma(b + 1) - math.lgamma(c + 1) - math.lgamma(n - b - c + 1))
                 for b in range(n + 1) for c in range(n - b + 1))


@lru_cache(maxsize=None)
def _index(n: int) -> dict[tuple[int, int], int]:
    return {(b, c): i for i, (b, c, _) in enumerate(_tables(n))}


def _pmf(n: int, up: float, down: float) -> list[float]:
    stay = 1.0 - up - down
    log_up, log_down, log_stay = (math.log(x) if x > 0 else math.nan for x in (up, down, stay))
    if up > 0 and down > 0 and stay > 0:  # no table is impossible: the same sums, in one comprehension
        exp = math.exp
        return [exp(log_coefficient + (b * log_up if b else 0) + (c * log_down if c else 0)
                    + ((n - b - c) * log_stay if n - b - c else 0)) for b, c, log_coefficient in _tables(n)]
    out = []
    for b, c, log_coefficient in _tables(n):
        s = n - b - c
        if (b and up <= 0) or (c and down <= 0) or (s and stay <= 0):
            out.append(0.0)
            continue
        out.append(math.exp(log_coefficient + (b * log_up if b else 0) + (c * log_down if c else 0)
                            + (s * log_stay if s else 0)))
    return out


def _tango(n: int, b: float, c: float, d0: float) -> float:
    """Tango's statistic, written out again from the paper (not `paired_exact.statistic`)."""
    a_, b_, c_ = 2 * n, -b - c + (2 * n - b + c) * d0, -c * d0 * (1 - d0)
    q = (-b_ + math.sqrt(b_ * b_ - 4 * a_ * c_)) / (2 * a_)
    variance = n * (2 * q + d0 * (1 - d0))
    numerator = b - c - n * d0
    return 0.0 if variance <= 1e-300 and abs(numerator) < 1e-9 else (
        math.copysign(math.inf, numerator) if variance <= 1e-300 else numerator / math.sqrt(variance))


@lru_cache(maxsize=None)
def _reference_upper(n: int, d0: float) -> tuple[float, ...]:
    """One-sided p-values against D > d0 for every table: max over a fine nuisance grid (ends included)
    of P(T >= T_obs), tables tied in T sharing one tail."""
    tables = _tables(n)
    values = [_tango(n, b, c, d0) for b, c, _ in tables]
    order = sorted(range(len(tables)), key=lambda i: -values[i])
    groups: list[list[int]] = []
    for i in order:
        if groups and values[i] >= values[groups[-1][0]] - 1e-9 * max(1, abs(values[groups[-1][0]])):
            groups[-1].append(i)
        else:
            groups.append([i])
    low, high = max(0.0, -d0), (1 - d0) / 2
    highest = [0.0] * len(groups)  # per group of tied tables: the largest tail over the grid
    for k in range(REFERENCE_GRID + 1):
        q = min(max(low + (high - low) * k / REFERENCE_GRID, low + 1e-12), high - 1e-12)
        pmf = _pmf(n, q + d0, q)
        tails = accumulate(pmf[group[0]] if len(group) == 1 else sum(pmf[i] for i in group) for group in groups)
        highest = list(map(max, highest, tails))
    best = [0.0] * len(tables)
    for group, tail in zip(groups, highest):
        for i in group:
            best[i] = tail
    return tuple(min(1.0, p) for p in best)


def _accepted(n: int, d0: float) -> list[bool]:
    """Is d0 inside each table's reference interval (neither side rejects at 2.5%)?"""
    upper = _reference_upper(n, d0)
    mirrored = _reference_upper(n, -d0)  # lower_p(b, c, d0) = upper_p(c, b, -d0)
    index = _index(n)
    return [upper[i] > ALPHA and mirrored[index[(c, b)]] > ALPHA for i, (b, c, _) in enumerate(_tables(n))]


def _designs() -> list[tuple[float, float, float, float]]:
    """(p_before, p_after, correlation, D) over the grid, feasible ones only."""
    designs = []
    for before in MARGINALS:
        for after in MARGINALS:
            for rho in CORRELATIONS:
                both = before * after + rho * math.sqrt(before * (1 - before) * after * (1 - after))
                if both > min(before, after) + 1e-12 or both < max(0.0, before + after - 1) - 1e-12:
                    continue
                designs.append((before, after, rho, round(after - before, 10)))
    return designs


def _design_pmf(n: int, before: float, after: float, rho: float) -> list[float]:
    both = before * after + rho * math.sqrt(before * (1 - before) * after * (1 - after))
    return _pmf(n, max(after - both, 0.0), max(before - both, 0.0))


@pytest.mark.parametrize("n", [3, 6])
def test_the_runtime_interval_covers_every_design_by_enumeration(n: int) -> None:
    """Small n: every table's interval from `stats.paired_gain` itself, coverage summed exactly."""
    tables = _tables(n)
    intervals = [paired_exact.interval(n, b, c, stats.LEVEL) for b, c, _ in tables]
    worst = 1.0
    for before, after, rho, d in _designs():
        pmf = _design_pmf(n, before, after, rho)
        covered = sum(p for p, (low, high) in zip(pmf, intervals) if low - 1e-9 <= d <= high + 1e-9)
        worst = min(worst, covered)
    assert worst >= 0.95


@pytest.mark.parametrize("n", [3, 6, 24, 50])
def test_the_test_holds_its_level_over_the_design_grid(n: int) -> None:
    """Coverage = the chance the test at the true D accepts it, enumerated exactly over every table."""
    worst, where = 1.0, None
    for before, after, rho, d in _designs():
        accepted = _accepted(n, d)
        pmf = _design_pmf(n, before, after, rho)
        covered = sum(p for p, ok in zip(pmf, accepted) if ok)
        if covered < worst:
            worst, where = covered, (before, after, rho)
    assert worst >= 0.95, (n, worst, where)


@pytest.mark.parametrize("n, d0", [(6, 0.0), (6, 0.3), (6, -0.5), (24, 0.0), (24, 0.2), (24, -0.4), (50, 0.1)])
def test_the_p_value_matches_a_brute_force_reference(n: int, d0: float) -> None:
    """The runtime's nuisance search finds the reference maximum (within 1e-4, never far below it)."""
    reference = _reference_upper(n, d0)
    tables = _tables(n)
    step = max(1, len(tables) // 40)
    for i in range(0, len(tables), step):
        b, c, _ = tables[i]
        got = paired_exact.upper_p(n, b, c, d0)
        assert got >= reference[i] - 1e-4, (b, c, got, reference[i])
        assert got <= reference[i] + 2e-3, (b, c, got, reference[i])


@pytest.mark.parametrize("n", [6, 12])
def test_significant_exactly_when_the_interval_excludes_zero(n: int) -> None:
    for b in range(n + 1):
        for c in range(n - b + 1):
            if b < c:
                continue
            gain = stats.paired_gain([0] * b + [1] * c + [0] * (n - b - c), [1] * b + [0] * c + [0] * (n - b - c))
            assert (gain.p_value <= 0.05) == (gain.low > 0 or gain.high < 0), (b, c, gain)


def test_minimal_detectable_gain_at_24_tasks_is_at_most_0_30() -> None:
    assert stats.minimal_detectable_gain(24) <= 0.30


@pytest.mark.parametrize("drops, verdict", [(8, "fail"), (11, "fail"), (2, "pass")])
def test_the_regression_gate_uses_the_same_family(drops: int, verdict: str) -> None:
    before = {f"t{i}": 1.0 for i in range(24)}
    after = {task: (0.0 if i < drops else 1.0) for i, task in enumerate(before)}
    check = stats.regression(before, after, tolerance=0.05)
    assert check.verdict == verdict, check.message()


@pytest.mark.parametrize("n", [1, 7, 24, 60, 100])
def test_a_tail_summed_row_by_row_equals_the_sum_over_its_tables(n: int) -> None:
    """`_tail` sums each row of b by Horner's rule in p- / p0 (or its inverse): the same probability as the
    direct sum of every member table's, at nuisance values across the whole range (both branches)."""
    import random

    rng = random.Random(n)
    tables = _tables(n)
    for d0 in (-0.6, -0.1, 0.0, 0.2, 0.7):
        low, high = paired_exact._nuisance_range(d0)
        members = sorted(rng.sample(range(len(tables)), max(1, len(tables) // 3)))
        rows = paired_exact._rows(n, members)
        for share in (0.0, 1e-6, 0.1, 0.33, 0.5, 0.9, 1 - 1e-6, 1.0):
            q = low + share * (high - low)
            logs = (math.log(q + d0), math.log(q), math.log(1.0 - 2.0 * q - d0))  # p0 as `_tail` has it
            direct = math.fsum(math.exp(tables[i][2] + tables[i][0] * logs[0] + tables[i][1] * logs[1]
                                        + (n - tables[i][0] - tables[i][1]) * logs[2]) for i in members)
            assert paired_exact._tail(n, rows, d0, q) == pytest.approx(direct, rel=1e-11, abs=1e-300)
