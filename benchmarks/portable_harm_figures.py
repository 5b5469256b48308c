"""Where status-report's harm shows (docs/protocol.md, "Portable skills"): sim-large's pass rate per kind of
check and its gate score, for the seed's skill, the single-model skill and each night's candidate of the
multi-model optimization (sim-small the source, sim-large listed), on the 3 validation tasks, on the whole
training pool (train + val: the tasks the optimization may see) and on the held-out tasks.

    .venv/bin/python benchmarks/portable_harm_figures.py

A kind's rate is the validation rule's (`engine.validation.check_pass_rates`). The held-out tasks check the
sections only; the training pool also checks a 1300-character budget. The pool and held-out figures are
measurements for the page only: the protocol never shows held-out tasks to a listed model.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_skilltransfer.engine.protocol import SeedSession  # noqa: E402
from pytest_skilltransfer.engine.results import ProtocolConfig  # noqa: E402
from pytest_skilltransfer.engine.seeds import load_seed  # noqa: E402
from pytest_skilltransfer.engine.validation import check_pass_rates  # noqa: E402
from pytest_skilltransfer.guards.edits import apply_edits  # noqa: E402
from pytest_skilltransfer.models.registry import resolve_model  # noqa: E402

SEED = Path(__file__).resolve().parents[1] / "seeds" / "status-report"


def main() -> None:
    seed = load_seed(SEED)
    config = ProtocolConfig()
    session = SeedSession(seed, config, concurrent_phases=False)
    small, large = resolve_model("sim-small"), resolve_model("sim-large")
    result = session.transfer(small, large, None, (large,))
    skills = {"seed skill": seed.skill, "single-model": result.learned.learned_skill}
    for night in result.portable[0].learned.nights:
        if night.applied:
            skills[f"multi night {night.number}"] = apply_edits(seed.skill, list(night.applied), config.edit_budget).skill
    session.splits["pool"] = seed.train + seed.val
    print(f"{'skill on sim-large':<18} {'split':<9} {'tasks':>5}  {'sections':>8}  {'max_chars':>9}  {'gate':>5}  {'hard':>5}")
    for name, skill in skills.items():
        for split, label in (("val", "val"), ("pool", "pool"), ("test", "held-out")):
            tasks = session.splits[split]
            evaluation = session.evaluate(large, skill, split)
            rates = check_pass_rates([[(c.op, c.label()) for c in t.judge.checks] for t in tasks],
                                     [[s.failed for s in r.samples] for r in evaluation.tasks])
            chars = f"{rates['max_chars']:.2f}" if "max_chars" in rates else "-"
            print(f"{name:<18} {label:<9} {len(tasks):>5}  {rates['section_present']:>8.2f}  {chars:>9}  "
                  f"{evaluation.gate_score:>5.2f}  {evaluation.hard.mean:>5.2f}")


if __name__ == "__main__":
    main()
