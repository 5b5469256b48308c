"""The figures behind "Clustered tasks" in "Reading the verdicts": coverage and width with clusters as units.

    .venv/bin/python benchmarks/cluster_figures.py          # about two minutes on 2 cores
    .venv/bin/python benchmarks/cluster_figures.py 1000     # more runs per design

Seeded simulation of held-out sets of C clusters of 5 binary tasks, scored before and after, for two
designs with a true mean gain of 0.30:

* correlated: each cluster is, with equal chance, one the skill helps strongly (P(pass) 0.1 -> 0.9)
  or one it hurts a little (0.5 -> 0.3); tasks are independent given their cluster's kind, so tasks
  of one cluster are correlated (intra-cluster correlation of the differences about 0.45, design effect 2.8);
* independent: every task 0.3 -> 0.6, clusters are mere labels (no correlation).

For each: the share of runs whose 95% interval holds the true gain (the same exact family, once
with the tasks as units as if they were independent, once with the cluster means as units, as
`stats.clustered_gain` does), the mean interval width, and the mean design effect. Coverage is read
from the test at the true value (the interval holds it exactly when neither side rejects it).
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_skilltransfer.evidence import stats  # noqa: E402

SIZE = 5
TRUE_GAIN = 0.3
DESIGNS = {
    "correlated": ((0.1, 0.9), (0.5, 0.3)),  # (P(pass) before, after) of the two cluster kinds
    "independent": ((0.3, 0.6), (0.3, 0.6)),
}
CLUSTER_COUNTS = (6, 12, 24)
WIDTH_RUNS = 100  # widths need the whole interval (slower than the test at one value)


def held_out(rng: random.Random, clusters: int, kinds: tuple[tuple[float, float], ...]) -> tuple[list[float], list[str]]:
    """One held-out set: per-task differences after - before and each task's cluster."""
    differences, labels = [], []
    for c in range(clusters):
        before, after = kinds[rng.random() < 0.5]
        for _ in range(SIZE):
            differences.append(float(rng.random() < after) - float(rng.random() < before))
            labels.append(f"c{c}")
    return differences, labels


def moves(values: list[float]) -> tuple[int, float, float]:
    return len(values), sum(v for v in values if v > 0), -sum(v for v in values if v < 0)


def figures(clusters: int, kinds: tuple[tuple[float, float], ...], runs: int) -> dict[str, float]:
    rng = random.Random(20261203 + clusters)
    hits = {"task": 0, "cluster": 0}
    widths = {"task": 0.0, "cluster": 0.0}
    effects: list[float] = []
    for run in range(runs):
        differences, labels = held_out(rng, clusters, kinds)
        units = {"task": moves(differences), "cluster": moves(stats.cluster_means(differences, labels))}
        for name, (n, up, down) in units.items():
            hits[name] += stats.gain_decision(n, up, down, TRUE_GAIN) == stats.INCONCLUSIVE
            if run < WIDTH_RUNS:
                low, high = stats.gain_interval(n, up, down)
                widths[name] += high - low
        effect = stats.design_effect(differences, labels)
        if effect is not None:
            effects.append(effect)
    shown = min(runs, WIDTH_RUNS)
    return {"task_coverage": hits["task"] / runs, "cluster_coverage": hits["cluster"] / runs,
            "task_width": widths["task"] / shown, "cluster_width": widths["cluster"] / shown,
            "design_effect": stats.mean(effects)}


def main(runs: int) -> None:
    print(f"{runs} seeded runs per row; clusters of {SIZE} binary tasks; true gain {TRUE_GAIN}; "
          f"widths over the first {min(runs, WIDTH_RUNS)}")
    print(f"{'design':<12} {'C':>3} {'tasks':>5}  {'coverage task/cluster':>22}  {'width task/cluster':>19}  deff")
    for name, kinds in DESIGNS.items():
        for clusters in CLUSTER_COUNTS:
            f = figures(clusters, kinds, runs)
            print(f"{name:<12} {clusters:>3} {clusters * SIZE:>5}  {f['task_coverage']:>10.3f} / {f['cluster_coverage']:<9.3f}"
                  f"  {f['task_width']:>8.3f} / {f['cluster_width']:<8.3f}  {f['design_effect']:.2f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 400)
