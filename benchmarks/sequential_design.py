"""The group-sequential design's figures, side by side from one run (docs/protocol.md, "Sequential looks").

    .venv/bin/python benchmarks/sequential_design.py                 # runs the main job once for its items
    .venv/bin/python benchmarks/sequential_design.py report.json     # a JSON report of a fixed-design run

For the fixed design (one look at 24 tasks), the design the figures were first computed for (looks at 6/12/18/24
tasks, alpha .001/.004/.01/.035, stop when the interval excludes 0 or no task has moved) and the shipped design
(`sequential.GROUP_SEQUENTIAL`), through the runtime's own `sequential.operating` (every path enumerated, nothing
random):
- the minimum coverage of the stopping look's interval over the grid of paired designs of
  `verdict_figures.py` (marginals 0.1-0.9, correlation 0-0.9) at 24 tasks;
- the power to show a gain of 0.3 at 24 tasks (every task improves with probability 0.3 or stays), and of a net
  0.3 when 5% of tasks also get worse;
- the share of held-out target answers saved on the main job's own (seed, pair) items, alone (alpha 0.05) and in
  their run family (alpha 0.05 / m): as the design runs on each item's recorded tasks in order, and expected with
  the item's observed shares of tasks moving up and down taken as the truth;
- the expected share saved on a stated mixture that includes noisy nulls (tasks flipping both ways at random).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from pytest_skilltransfer.evidence import sequential  # noqa: E402
from verdict_figures import designs as grid  # noqa: E402

N = 24
ISSUE = sequential.Design("first design", (0.25, 0.5, 0.75, 1.0), (0.02, 0.08, 0.2, 0.7), rule=sequential.UNMOVED)
DESIGNS = (sequential.FIXED, ISSUE, sequential.GROUP_SEQUENTIAL)
# (weight, p up, p down): what a night's items might look like, noisy nulls included
MIXTURE = ((0.15, 0.0, 0.0, "nothing moves"), (0.15, 0.2, 0.2, "noisy null: 20% up, 20% down"),
           (0.20, 0.15, 0.05, "small: +0.10 net"), (0.20, 0.3, 0.0, "gain 0.3"), (0.20, 0.9, 0.0, "gain 0.9"),
           (0.10, 0.0, 0.3, "harm -0.3"))
FIRST_MIXTURE = ((0.3, 0.0, 0.0), (0.2, 0.15, 0.05), (0.2, 0.3, 0.0), (0.2, 0.9, 0.0), (0.1, 0.0, 0.3))


def project_items(path: Path | None) -> list[tuple[str, list[float]]]:
    """(item, per-task differences transferred - baseline in task order) of every distinct (seed, pair)."""
    if path is None:
        path = Path(tempfile.mkdtemp()) / "main.json"
        env = {**os.environ, "CI": "true"}
        command = [sys.executable, "-m", "pytest", "-n", "0", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
                   f"--skilltransfer-json={path}"]
        if "--transfer-design" in subprocess.run([sys.executable, "-m", "pytest", "--help"], cwd=ROOT, env=env,
                                                 capture_output=True, text=True).stdout:
            command.append("--transfer-design=fixed")
        subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    report = json.loads(path.read_text())
    items: dict[tuple[str, str, str], list[float]] = {}
    for result in report["results"]:
        before = {t["task_id"]: t["hard"] for t in result["scores"]["baseline"]["tasks"]}
        after = result["scores"]["transferred"]["tasks"]
        items[(result["seed"], result["source"], result["target"])] = [t["hard"] - before[t["task_id"]] for t in after]
    return [(f"{seed} {source}->{target}", diffs) for (seed, source, target), diffs in sorted(items.items())]


def saved_in_order(design: sequential.Design, items: list[tuple[str, list[float]]], alpha: float) -> float:
    paid = sum(sequential.run(design, diffs, (0.0,), alpha)[0].tasks for _, diffs in items)
    return 1.0 - paid / sum(len(diffs) for _, diffs in items)


def saved_expected(design: sequential.Design, items: list[tuple[str, list[float]]], alpha: float) -> float:
    paid = total = 0.0
    for _, diffs in items:
        n = len(diffs)
        up, down = sum(d for d in diffs if d > 0) / n, -sum(d for d in diffs if d < 0) / n
        paid += sequential.operating(design, n, up, down, (0.0,), alpha, coverage=False).expected_tasks
        total += n
    return 1.0 - paid / total


def main() -> None:
    start = time.time()
    items = project_items(Path(sys.argv[1]) if len(sys.argv) > 1 else None)
    family = len(items)
    rows: dict[str, list[str]] = {}

    def row(name: str, values: list[str]) -> None:
        rows[name] = values

    coverage = [min(sequential.operating(d, N, up, down).coverage for up, down in grid()) for d in DESIGNS]
    row("minimum coverage, 24 tasks (grid)", [f"{c:.3f}" for c in coverage])
    row("power, gain 0.3 at 24 tasks", [f"{sequential.operating(d, N, 0.3, 0.0, coverage=False).passes[0]:.3f}"
                                          for d in DESIGNS])
    row("power, net 0.3 with 5% worse", [f"{sequential.operating(d, N, 0.35, 0.05, coverage=False).passes[0]:.3f}"
                                          for d in DESIGNS])
    row(f"saved, project's {family} items in order, alone",
        [f"{saved_in_order(d, items, 0.05):.1%}" for d in DESIGNS])
    row(f"saved, project's {family} items expected, alone",
        [f"{saved_expected(d, items, 0.05):.1%}" for d in DESIGNS])
    row(f"saved, project's items in order, family of {family}",
        [f"{saved_in_order(d, items, 0.05 / family):.1%}" for d in DESIGNS])
    for weight, up, down, name in MIXTURE:
        row(f"saved, {name} ({weight:.0%} of the mixture)",
            [f"{round(sequential.operating(d, N, up, down, coverage=False).saved, 6) + 0.0:.1%}" for d in DESIGNS])
    row("saved, the mixture above", [
        f"{sum(w * sequential.operating(d, N, u, v, coverage=False).saved for w, u, v, _ in MIXTURE):.1%}"
        for d in DESIGNS])
    row("saved, first mixture (no noisy null)", [
        f"{sum(w * sequential.operating(d, N, u, v, coverage=False).saved for w, u, v in FIRST_MIXTURE):.1%}"
        for d in DESIGNS])
    width = max(len(name) for name in rows)
    print(f"{'':<{width}}  " + "  ".join(f"{d.name:>16}" for d in DESIGNS))
    for name, values in rows.items():
        print(f"{name:<{width}}  " + "  ".join(f"{v:>16}" for v in values))
    for d in DESIGNS:
        print(f"{d.name}: {d.describe(N)}")
    print(f"({time.time() - start:.0f} s)")


if __name__ == "__main__":
    main()
