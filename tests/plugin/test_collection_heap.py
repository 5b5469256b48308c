"""A seed run freezes what its collection left alive, so pytest's full collections at exit skip it;
a run inside another run's process (pytester inline) leaves that process's heap alone."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]
ROOT = Path(__file__).resolve().parents[2]


def _project(pytester: pytest.Pytester) -> None:
    shutil.copytree(ROOT / "seeds" / "support-triage", pytester.path / "seeds" / "support-triage",
                    ignore=shutil.ignore_patterns("__snapshots__"))
    pytester.makeini("[pytest]\ntestpaths = seeds\nskilltransfer_pair = sim-small:sim-large\n")


def test_a_seed_run_freezes_its_collection(pytester: pytest.Pytester) -> None:
    _project(pytester)
    code = ("import gc, sys, pytest; code = pytest.main(['--collect-only', '-q', '-p', 'no:cacheprovider']); "
            "print('FROZEN', gc.get_freeze_count()); sys.exit(code)")
    done = subprocess.run([sys.executable, "-c", code], cwd=pytester.path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 test collected" in done.stdout
    assert int(done.stdout.split("FROZEN ")[1].split()[0]) > 0


def test_an_inline_run_leaves_the_heap_unfrozen(pytester: pytest.Pytester) -> None:
    import gc

    _project(pytester)
    before = gc.get_freeze_count()
    result = pytester.runpytest_inprocess("--collect-only", "-q")
    result.stdout.fnmatch_lines(["*1 test collected*"])
    assert gc.get_freeze_count() <= before  # (frozen objects freed by reference counting leave it)
