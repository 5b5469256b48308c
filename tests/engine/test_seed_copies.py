"""A seed's results depend on its content, not its folder name: a copy under another name reproduces them."""

from __future__ import annotations

import shutil
from pathlib import Path

from pytest_skilltransfer.engine.protocol import SeedSession
from pytest_skilltransfer.engine.results import ProtocolConfig
from pytest_skilltransfer.engine.seeds import load_seed
from pytest_skilltransfer.models.registry import resolve_model

SEEDS = Path(__file__).resolve().parents[2] / "seeds"


def _run(folder: Path) -> tuple:
    seed = load_seed(folder)
    result = SeedSession(seed, ProtocolConfig(direct=False)).transfer(resolve_model("sim-small"),
                                                                     resolve_model("sim-large"))
    return ([t.id for t in seed.train], [t.id for t in seed.val], result.baseline.hard.mean,
            result.transferred.hard.mean, result.learned.learned_skill,
            [(t.task_id, [s.answer for s in t.samples]) for t in result.transferred.tasks])


def test_a_copied_or_renamed_seed_reproduces_its_simulator_results(tmp_path: Path) -> None:
    original = _run(SEEDS / "status-report")
    for name in ("status-report-copy", "a-renamed-seed"):
        shutil.copytree(SEEDS / "status-report", tmp_path / name, ignore=shutil.ignore_patterns("__snapshots__"))
        assert _run(tmp_path / name) == original, name
