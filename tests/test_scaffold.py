"""`python -m pytest_skilltransfer init`: a seed that loads, runs green after --snapshot-update, and a
`skill = "<path>"` key for a skill kept elsewhere in the repository."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pytest_skilltransfer.commands.scaffold import InitError, init_seed
from pytest_skilltransfer.engine.seeds import load_seed
from pytest_skilltransfer.engine.seed_data import SeedError

PAIR = ("--source", "sim-small", "--target", "sim-large")


def repository(root: Path) -> Path:
    (root / ".git").mkdir(parents=True)
    return root


def test_init_writes_a_seed_that_runs_green_after_snapshot_update(pytester: pytest.Pytester) -> None:
    repository(pytester.path)
    proc = subprocess.run([sys.executable, "-m", "pytest_skilltransfer", "init", "seeds/status-update"],
                          cwd=pytester.path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "next: pytest seeds/status-update --source sim-small --target sim-large --snapshot-update" in proc.stdout
    seed = load_seed(pytester.path / "seeds" / "status-update")
    assert seed.train and seed.val and len(seed.test) == 3
    first = pytester.runpytest("seeds/status-update", *PAIR, "--snapshot-update")
    first.assert_outcomes(passed=1)
    again = pytester.runpytest("seeds/status-update", *PAIR, "-v")
    again.assert_outcomes(passed=1)
    again.stdout.fnmatch_lines(["seeds/status-update/SKILL.md::transfer?sim-small->sim-large? PASSED*"])


def test_init_never_overwrites(tmp_path: Path) -> None:
    init_seed(tmp_path / "seed")
    with pytest.raises(InitError, match="would overwrite"):
        init_seed(tmp_path / "seed")


def test_init_with_a_skill_elsewhere_in_the_repository(pytester: pytest.Pytester) -> None:
    repository(pytester.path)
    skill = pytester.path / "skills" / "status" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("# Status\n\nWrite a friendly paragraph.\n")
    init_seed(pytester.path / "seeds" / "status", skill)
    config = (pytester.path / "seeds" / "status" / "seed.toml").read_text()
    assert 'skill = "../../skills/status/SKILL.md"' in config
    assert not (pytester.path / "seeds" / "status" / "SKILL.md").exists()
    assert load_seed(pytester.path / "seeds" / "status").skill.startswith("# Status")
    ran = pytester.runpytest("seeds/status", *PAIR, "--snapshot-update", "-v")
    ran.assert_outcomes(passed=1)
    ran.stdout.fnmatch_lines(["seeds/status/seed.toml::transfer?sim-small->sim-large? PASSED*"])
    rerun = pytester.runpytest("seeds/status/seed.toml::transfer[sim-small->sim-large]", *PAIR)
    rerun.assert_outcomes(passed=1)


def test_skill_key_must_stay_inside_the_repository(tmp_path: Path) -> None:
    repo = repository(tmp_path / "repo")
    (tmp_path / "outside.md").write_text("# Outside\n")
    with pytest.raises(InitError, match="outside the repository"):
        init_seed(repo / "seeds" / "s", tmp_path / "outside.md")
    seed = repo / "seeds" / "s"
    init_seed(seed)
    (seed / "seed.toml").write_text('skill = "../other/SKILL.md"\n')
    with pytest.raises(SeedError, match="holds a SKILL.md too"):
        load_seed(seed)
    (seed / "SKILL.md").unlink()
    (seed / "seed.toml").write_text('skill = "../../../outside.md"\n')
    with pytest.raises(SeedError, match="outside the repository"):
        load_seed(seed)
    (seed / "seed.toml").write_text('skill = "../other/SKILL.md"\n')
    with pytest.raises(SeedError, match="other/SKILL.md: missing"):
        load_seed(seed)
