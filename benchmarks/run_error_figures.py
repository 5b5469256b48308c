"""The false red-build rate of a run of null items, and the power left for one real harm, through the gate code.

    .venv/bin/python benchmarks/run_error_figures.py            # 1,000 runs per cell (about 15 minutes on 2 busy cores)
    .venv/bin/python benchmarks/run_error_figures.py 200        # fewer runs

A run of m items with no true effect: each item's 24 held-out tasks are drawn at random (baseline and transferred
pass with the same probability, tasks moving either way with the same chance), its paired gain computed by the
project's own exact test (`stats.paired_gain`) and its gates applied by `plugin.gating.evaluate` with the default
harm gate (tolerance 0) and a regression gate against an independent null snapshot of the same item (tolerance
0.05), exactly as an item's test applies them. A run is red when any item fails. Rows: each item alone at 95%
(`--transfer-correction=none`, the gates before the run family) and the run family (Bonferroni over the m items,
the default). Power: one item whose learned skill truly costs 0.3 (a task passing at 0.8 before passes at 0.5
after) among the same m - 1 null items, the chance that it fails its harm gate.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_skilltransfer.engine.seed_data import Thresholds  # noqa: E402
from pytest_skilltransfer.evidence import stats  # noqa: E402
from pytest_skilltransfer.plugin import gating  # noqa: E402

TASKS = 24
SIZES = (10, 40, 90)
THRESHOLDS = Thresholds(harm_tolerance=0.0, regression_tolerance=0.05)
NULL_DESIGNS = ((0.5, 0.0), (0.5, 0.6), (0.2, 0.0), (0.8, 0.0))  # (pass rate, correlation of before and after)


def _draw(rng: random.Random, rate: float, rho: float) -> tuple[list[float], list[float]]:
    """Before and after of one null item: the same pass rate, after equal to before with chance rho, else fresh."""
    before = [float(rng.random() < rate) for _ in range(TASKS)]
    after = [b if rng.random() < rho else float(rng.random() < rate) for b in before]
    return before, after


def _harmed(rng: random.Random) -> tuple[list[float], list[float]]:
    """An item whose learned skill costs 0.3: a task passes at 0.8 before, and 3 of 8 passing tasks fail after."""
    before = [float(rng.random() < 0.8) for _ in range(TASKS)]
    return before, [b * float(rng.random() >= 0.375) for b in before]


def _record(before: list[float], after: list[float]) -> dict:
    tasks = [{"task_id": f"t{i:02d}", "hard": a} for i, a in enumerate(after)]
    return {"source": "a", "target": "b", "gain": stats.paired_gain(before, after).as_dict(),
            "scores": {"transferred": {"tasks": tasks}}}


def _fails(before: list[float], after: list[float], snapshot: dict[str, float], correction: str, m: int) -> bool:
    outcome = gating.evaluate(_record(before, after), THRESHOLDS, committed=snapshot, correction=correction, family=m)
    return outcome.verdict == stats.FAIL


def _snapshot(rng: random.Random, rate: float, rho: float) -> dict[str, float]:
    """An independent null recording of the same item's transferred scores, as the committed snapshot."""
    _, after = _draw(rng, rate, rho)
    return {f"t{i:02d}": a for i, a in enumerate(after)}


def red_rate(m: int, correction: str, runs: int, design: tuple[float, float], seed: int) -> float:
    rng = random.Random(seed)
    red = 0
    for _ in range(runs):
        red += any(_fails(*_draw(rng, *design), _snapshot(rng, *design), correction, m) for _ in range(m))
    return red / runs


def harm_power(m: int, runs: int, seed: int) -> float:
    rng = random.Random(seed)
    hits = 0
    for _ in range(runs):
        before, after = _harmed(rng)
        outcome = gating.evaluate(_record(before, after), Thresholds(harm_tolerance=0.0), correction="bonferroni",
                                  family=m)
        hits += any(g.name == "harm_tolerance" and g.verdict == stats.FAIL for g in outcome.gates)
    return hits / runs


def main(argv: list[str]) -> None:
    runs = int(argv[0]) if argv else 1000
    print(f"false red-build rate of a run of null items ({TASKS} held-out tasks each, harm + regression gates, "
          f"{runs} runs per cell; goal <= 0.05)")
    print(f"{'items':>5}  {'design (rate, rho)':<18}  {'each alone at 95%':>17}  {'run family (Bonferroni)':>23}")
    for m in SIZES:
        worst = 0.0
        for k, design in enumerate(NULL_DESIGNS):
            alone = red_rate(m, "none", runs, design, seed=1000 * m + k)
            family = red_rate(m, "bonferroni", runs, design, seed=1000 * m + k)
            worst = max(worst, family)
            print(f"{m:>5}  {str(design):<18}  {alone:>17.3f}  {family:>23.3f}")
        print(f"{m:>5}  {'worst':<18}  {'':>17}  {worst:>23.3f}")
    print()
    print(f"power to fail one item whose learned skill costs 0.3 ({TASKS} tasks, 0.8 -> 0.5), {runs} runs")
    for m in (1, *SIZES):
        print(f"  in a run of {m:>2} item(s) (level {1 - 0.05 / m:.5f}): {harm_power(m, runs, seed=7 + m):.3f}")


if __name__ == "__main__":
    main(sys.argv[1:])
