"""The figures behind the README's "Reading the verdicts": coverage, width and power of the paired gain.

    .venv/bin/python benchmarks/verdict_figures.py            # n = 3, 6, 24 (a few minutes on 2 cores)
    .venv/bin/python benchmarks/verdict_figures.py 3 6 24 50  # any task counts

For each n: every table's interval from the runtime (`stats.gain_interval`) and, for comparison, the
previous construction (Clopper-Pearson on (d + 1) / 2); then, over the grid of paired designs
(marginals 0.1-0.9 in steps of 0.1, correlation 0-0.9), the exact coverage (every table enumerated),
the mean width, and the minimal detectable gain at 80% power. Nothing is random.
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_skilltransfer.evidence import power, stats  # noqa: E402

MARGINALS = [round(0.1 * k, 1) for k in range(1, 10)]
CORRELATIONS = [round(0.1 * k, 1) for k in range(10)]


def designs() -> list[tuple[float, float]]:
    """(p+, p-) of every feasible design of the grid."""
    out = []
    for before in MARGINALS:
        for after in MARGINALS:
            for rho in CORRELATIONS:
                both = before * after + rho * math.sqrt(before * (1 - before) * after * (1 - after))
                if max(0.0, before + after - 1) - 1e-12 <= both <= min(before, after) + 1e-12:
                    out.append((max(after - both, 0.0), max(before - both, 0.0)))
    return out


def pmf(n: int, b: int, c: int, up: float, down: float) -> float:
    stay = 1 - up - down
    if (b and up <= 0) or (c and down <= 0) or (n - b - c and stay <= 0):
        return 0.0
    return math.exp(math.lgamma(n + 1) - math.lgamma(b + 1) - math.lgamma(c + 1) - math.lgamma(n - b - c + 1)
                    + (b * math.log(up) if b else 0) + (c * math.log(down) if c else 0)
                    + ((n - b - c) * math.log(stay) if n - b - c else 0))


def figures(n: int) -> dict[str, float]:
    tables = [(b, c) for b in range(n + 1) for c in range(n - b + 1)]
    new, old = {}, {}
    for b, c in tables:
        if b >= c:
            new[b, c] = stats.gain_interval(n, b, c)
            old[b, c] = stats.difference_interval([1.0] * b + [-1.0] * c + [0.0] * (n - b - c))
    for b, c in tables:  # the mirror image
        if b < c:
            new[b, c] = (-new[c, b][1], -new[c, b][0])
            old[b, c] = (-old[c, b][1], -old[c, b][0])
    worst_new = worst_old = 1.0
    width_new = width_old = 0.0
    grid = designs()
    for up, down in grid:
        d = up - down
        probabilities = [pmf(n, b, c, up, down) for b, c in tables]
        worst_new = min(worst_new, sum(p for p, t in zip(probabilities, tables) if new[t][0] - 1e-9 <= d <= new[t][1] + 1e-9))
        worst_old = min(worst_old, sum(p for p, t in zip(probabilities, tables) if old[t][0] - 1e-9 <= d <= old[t][1] + 1e-9))
        width_new += sum(p * (new[t][1] - new[t][0]) for p, t in zip(probabilities, tables)) / len(grid)
        width_old += sum(p * (old[t][1] - old[t][0]) for p, t in zip(probabilities, tables)) / len(grid)
    return {"designs": len(grid), "coverage": worst_new, "coverage_before": worst_old,
            "width": width_new, "width_before": width_old}


def old_mdg(n: int) -> float | None:
    """The previous minimal detectable gain: Clopper-Pearson on (d + 1) / 2, tasks improving or tied."""
    needed = next((k for k in range(n + 1) if stats.difference_interval([1.0] * k + [0.0] * (n - k))[0] > 0), None)
    if needed is None:
        return None
    low, high = 0.0, 1.0
    for _ in range(60):
        middle = (low + high) / 2
        power = sum(math.comb(n, k) * middle ** k * (1 - middle) ** (n - k) for k in range(needed, n + 1))
        low, high = (middle, high) if power < 0.8 else (low, middle)
    return high


def old_tasks_to_pass(min_gain: float, true_gain: float) -> int:
    """The previous interval: tasks improving with probability true_gain (the rest tied) until its lower
    bound clears min_gain with 80% power."""
    for n in range(1, 5000):
        needed = next((k for k in range(n + 1)
                       if 2 * stats.interval_of_sum((n + k) / 2, n)[0] - 1 >= min_gain), None)
        if needed is not None and power._binomial_upper_tail(n, true_gain, needed) >= 0.8:
            return n
    return -1


def main(counts: list[int]) -> None:
    print(f"{'n':>4}  {'designs':>7}  {'min coverage':>12}  {'(before)':>8}  {'mean width':>10}  {'(before)':>8}  "
          f"{'mdg':>5}  {'(before)':>8}  {'seconds':>7}")
    for n in counts:
        start = time.perf_counter()
        f = figures(n)
        mdg, before = stats.minimal_detectable_gain(n), old_mdg(n)
        show = lambda v: ">1" if v is None else f"{v:.3f}"
        print(f"{n:>4}  {f['designs']:>7}  {f['coverage']:>12.4f}  {f['coverage_before']:>8.4f}  {f['width']:>10.3f}  "
              f"{f['width_before']:>8.3f}  {show(mdg):>5}  {show(before):>8}  {time.perf_counter() - start:>7.1f}",
              flush=True)
    print(f"tasks to pass min_gain 0.2 at a true gain of 0.3 with 80% power: {stats.tasks_to_pass(0.2)} "
          f"(before: {old_tasks_to_pass(0.2, 0.3)}); to show a gain (or a harm) of 0.2: {stats.tasks_for_gain(0.2)}")


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [3, 6, 24])
