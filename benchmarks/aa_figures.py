"""The A/A check's false-positive rate where it can fail: the simulator, whose answers vary with the sample id.

    .venv/bin/python benchmarks/aa_figures.py           # every project seed, sim-small and sim-large, 4 repeats

On SmolLM2 the recorded A/A checks cannot fail: decoding is greedy, so the two scorings give the same answers by
construction. On the simulator every sample id draws its own answer (its noise is keyed by the request, sample id
included), so the same skill scored twice differs task by task and the check can report an effect that is not
there. For each project seed and simulated model, the seed's skill is scored with sample ids 0 and k (k = 1 ... R)
through `engine.aa.aa_check` (the A/A fixture's code) and the share of checks whose exact 95% interval excludes 0
is printed (goal: at most 0.05).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_skilltransfer.engine.aa import aa_check  # noqa: E402
from pytest_skilltransfer.engine.protocol import SeedSession  # noqa: E402
from pytest_skilltransfer.engine.results import ProtocolConfig  # noqa: E402
from pytest_skilltransfer.engine.seeds import load_seed  # noqa: E402
from pytest_skilltransfer.models.registry import resolve_model  # noqa: E402

SEEDS = Path(__file__).resolve().parents[1] / "seeds"
MODELS = ("sim-small", "sim-large")


def main(argv: list[str]) -> None:
    repeats = int(argv[0]) if argv else 4
    checks = false = differ = 0
    for folder in sorted(p for p in SEEDS.iterdir() if (p / "SKILL.md").is_file()):
        seed = load_seed(folder)
        if any(c.op == "rubric" for t in seed.test for c in t.judge.checks):
            continue  # rubric checks need a judge model: left out
        for name in MODELS:
            model = resolve_model(name)
            for k in range(1, repeats + 1):
                check = aa_check(SeedSession(seed, ProtocolConfig(samples=k)), model, seed.skill)
                checks += 1
                false += not check.no_effect
                differ += check.identical < len(check.first.tasks)
    print(f"A/A checks on the simulator: {checks} (seeds without rubric checks x {', '.join(MODELS)} x "
          f"{repeats} sample-id offsets)")
    print(f"  checks whose answers differ between the two scorings: {differ}/{checks}")
    print(f"  false positives (the 95% interval excludes 0): {false}/{checks} = {false / max(checks, 1):.3f}")


if __name__ == "__main__":
    main(sys.argv[1:])
