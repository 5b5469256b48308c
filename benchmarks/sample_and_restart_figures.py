"""The figures behind "Samples" and "Restarts" in docs/protocol.md (seeded, about two minutes on 2 cores).

    .venv/bin/python benchmarks/sample_and_restart_figures.py

1. The gain's interval at 24 tasks with 1, 3 and 10 samples per task: mean width and coverage over
   150 seeded runs, for noisy tasks (pass rates 0.1-0.7 before, +0.3 after) and for deterministic ones.
2. The minimal detectable gain (80% power) with R restarts, at 24 and 50 tasks.
3. The two-level interval's coverage and share of runs claiming a gain, per restart population, at
   R = 3, 5 and 10 over 24 tasks (100 seeded runs each), with the spread-based interval the
   distribution-free bound replaced (t over the restarts' sd) beside it.
"""

from __future__ import annotations

import math
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_skilltransfer.evidence import stats  # noqa: E402
from pytest_skilltransfer.evidence.bounded_mean import one_sided_ks_critical  # noqa: E402

POPULATIONS = ((0.2, 0.6, 0.6, 1.0), (0.2, 0.7, 0.6, 0.5), (0.3, 0.8, 0.3, 0.8), (0.1, 0.9, 0.1, 0.5),
               (0.1, 0.9, 0.0, 0.5), (0.1, 0.9, 0.0, 0.8), (0.5, 1.0, 0.0, 0.9))


def samples() -> None:
    rng, n = random.Random(3), 24
    kinds = {"noisy tasks": [(b, b + 0.3) for b in [0.1 + 0.6 * i / (n - 1) for i in range(n)]],
             "deterministic tasks": [(0.0, 1.0 if i < 7 else 0.0) for i in range(n)]}
    for label, tasks in kinds.items():
        truth = sum(a - b for b, a in tasks) / n
        for k in (1, 3, 10):
            widths, covered = [], 0
            for _ in range(150):
                before = [sum(rng.random() < b for _ in range(k)) / k for b, _ in tasks]
                after = [sum(rng.random() < a for _ in range(k)) / k for _, a in tasks]
                gain = stats.paired_gain(before, after)
                widths.append(gain.high - gain.low)
                covered += gain.low <= truth <= gain.high
            print(f"samples  {label:20s} k={k:<3d} mean width {sum(widths) / len(widths):.3f}  coverage {covered / 150:.3f}")


def restart_mdg() -> None:
    for n in (24, 50):
        row = []
        for restarts in (1, 3, 5, 10, 20):
            mdg = stats.minimal_detectable_gain(n, restarts=restarts)
            row.append(f"R={restarts}: {'none' if mdg is None else f'{mdg:.2f}'}")
        print(f"mdg      {n} tasks  " + ", ".join(row))
    print("d        share moved to the far end when all restarts agree (1.25% a side): "
          + ", ".join(f"R={r}: {one_sided_ks_critical(r, 0.0125):.2f}" for r in (3, 5, 10, 20)))


def _spread_interval(n: int, up: float, down: float, gains: list[float]) -> tuple[float, float]:
    """For comparison only: the task-level interval widened by t(R - 1) * sd / sqrt(R) of the restart gains."""
    low, high = stats.gain_interval(n, up, down, 0.975)
    center = stats.mean(gains)
    sd = math.sqrt(sum((g - center) ** 2 for g in gains) / (len(gains) - 1))
    quantiles = {3: 6.205, 5: 3.495, 10: 2.685}  # t(R - 1, 0.9875)
    margin = quantiles[len(gains)] * sd / math.sqrt(len(gains))
    return low - margin, high + margin


def restart_coverage() -> None:
    n = 24
    for restarts in (3, 5, 10):
        rng = random.Random(11 + restarts)
        for p0, good, bad, share in POPULATIONS:
            truth = share * good + (1 - share) * bad - p0
            hits = spread_hits = claims = 0
            for _ in range(100):
                skills = [good if rng.random() < share else bad for _ in range(restarts)]
                before = [float(rng.random() < p0) for _ in range(n)]
                afters = [[float(rng.random() < q) for _ in range(n)] for q in skills]
                averaged = [stats.mean(a[i] for a in afters) - before[i] for i in range(n)]
                up, down = sum(d for d in averaged if d > 0), -sum(d for d in averaged if d < 0)
                gains = [stats.mean(a[i] - before[i] for i in range(n)) for a in afters]
                low, high = stats.restart_interval(n, up, down, gains, stats.restart_span(before))
                hits += low <= truth + 1e-9 and truth - 1e-9 <= high
                claims += low > 0 or high < 0
                s_low, s_high = _spread_interval(n, up, down, gains)
                spread_hits += s_low <= truth + 1e-9 and truth - 1e-9 <= s_high
            print(f"restarts R={restarts:<2d} population {(p0, good, bad, share)} truth {truth:+.2f}: coverage "
                  f"{hits / 100:.2f} (spread-based {spread_hits / 100:.2f}), claims {claims / 100:.2f}")


if __name__ == "__main__":
    samples()
    restart_mdg()
    restart_coverage()
