"""Runs made once per test run and shared by every test that reads them, whichever xdist worker runs it: the
main job's shards (the merge tests, the reviewer's view and the docs' samples) and each module's own run of
project seeds. Each worker of `-n` asks; the first makes the files, the others wait for it and read them (a
module's tests spread over workers would otherwise each run its module-scoped fixture)."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Callable, TypeVar

import pytest
from filelock import FileLock

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs"))
import samples  # noqa: E402  (docs/samples.py: the main job's shards as the docs' samples run them)

T = TypeVar("T")


def shared_folder(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    """A folder of this test run that every xdist worker sees: under the run's base temp (its workers' parent)."""
    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    folder = root / name
    folder.mkdir(exist_ok=True)
    return folder


def once_per_run(tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[Path], object]) -> Path:
    """The folder `make` filled, called once in this test run (by whichever worker asks first)."""
    folder = shared_folder(tmp_path_factory, name)
    with FileLock(str(folder / ".lock")):
        if not (folder / ".done").exists():
            make(folder)
            (folder / ".done").touch()
    return folder


def computed_once(tmp_path_factory: pytest.TempPathFactory, name: str, compute: Callable[[], T]) -> T:
    """`compute()`'s value, computed once in this test run; every worker reads it back (pickled)."""
    value = once_per_run(tmp_path_factory, name, lambda folder: (folder / "value.pickle").write_bytes(
        pickle.dumps(compute())))
    return pickle.loads((value / "value.pickle").read_bytes())


def main_job_shards(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The main job run as docs/samples.py's shards (`CI=true pytest -n 0 --transfer-shard-id=i
    --transfer-num-shards=3`, replayed offline): each shard's JSON report, its terminal output beside it
    (`shard-i.out`)."""
    folder = once_per_run(tmp_path_factory, "main-job-shards", samples.shards)
    return [folder / f"shard-{i}.json" for i in range(samples.SHARDS)]


def main_job_unsharded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The main job run whole (`CI=true pytest -p no:cacheprovider -q`, replayed offline, in a process of its own)
    with its reports: `whole.json`, `whole.md`, `whole.html` and its terminal output `whole.out`. The merge tests
    compare the merged shards with it; the HTML page's tests open its page."""

    def make(folder: Path) -> None:
        paths = {kind: folder / f"whole.{kind}" for kind in ("json", "md", "html")}
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", f"--skilltransfer-json={paths['json']}",
             f"--skilltransfer-md={paths['md']}", f"--skilltransfer-html={paths['html']}"],
            cwd=ROOT, capture_output=True, text=True, timeout=600, env={**os.environ, "CI": "true"})
        assert done.returncode == 0, done.stdout + done.stderr
        (folder / "whole.out").write_text(done.stdout)

    return once_per_run(tmp_path_factory, "main-job-whole", make)
