"""Option spellings that never collide: every option has a prefixed spelling, and the short one only
where no other plugin owns it. With pytest-shard, pytest-split, pytest-randomly, pytest-recording,
pytest-rerunfailures, pytest-timeout and pytest-cov all loaded in one environment, a foreign
project's suite and this repository's main job both run."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from plugin_support import project

ROOT = Path(__file__).resolve().parents[2]
EVERY_PLUGIN = ["-p", "pytest-shard", "-p", "pytest-split", "-p", "randomly", "-p", "recording"]
MATRIX = "skilltransfer_pair = toy-a:toy-b toy-b:toy-a\n"
FOREIGN_TESTS = '''
import pytest

@pytest.fixture
def numbers():
    return [3, 1, 2]

@pytest.mark.parametrize("n", range(6))
def test_square(n):
    assert n * n >= n

def test_sorted(numbers):
    assert sorted(numbers) == [1, 2, 3]

class TestStrings:
    def test_upper(self):
        assert "a".upper() == "A"

    def test_split(self):
        assert "a b".split() == ["a", "b"]
'''


def _pytest(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD")}
    return subprocess.run([sys.executable, "-m", "pytest", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)


def _comparable(text: str) -> str:
    """A run's output without its timings and the header line that lists the loaded plugins."""
    lines = [line for line in text.splitlines() if not line.startswith("plugins: ")]
    return re.sub(r" in \d+\.\d+s", " in Ns", "\n".join(lines))


def test_foreign_suite_runs_identically_beside_pytest_shard_and_split(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'foreign'\n")
    for name in ("test_one.py", "test_two.py"):
        (tmp_path / name).write_text(FOREIGN_TESTS)
    args = [*EVERY_PLUGIN, "-p", "no:cacheprovider", "-v", "--shard-id=1", "--num-shards=2", "--splits=2",
            "--group=1", "-p", "randomly", "--randomly-seed=7", "--timeout=60"]
    with_plugin = _pytest(tmp_path, *args)
    without = _pytest(tmp_path, *args, "-p", "no:skilltransfer")
    assert with_plugin.returncode == without.returncode == 0, with_plugin.stdout + with_plugin.stderr
    assert "Running" in with_plugin.stdout and "items in this shard" in with_plugin.stdout  # pytest-shard selected
    assert _comparable(with_plugin.stdout) == _comparable(without.stdout)
    assert with_plugin.stderr == without.stderr == ""
    assert not (tmp_path / "cassettes").exists() and not (tmp_path / "__snapshots__").exists()


def test_help_names_the_prefixed_spelling_where_another_plugin_owns_the_short_one(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'foreign'\n")
    result = _pytest(tmp_path, *EVERY_PLUGIN, "--help")
    assert result.returncode == 0, result.stderr
    text = " ".join(result.stdout.split())
    assert "--shard-id=SHARD_ID Number of this shard." in text  # pytest-shard's own option
    assert "(--shard-id is another plugin's here; ini: skilltransfer_shard_id)" in text
    assert "(also --source; ini: skilltransfer_source)" in text


def test_seeds_beside_every_plugin_use_the_prefixed_spelling_and_say_so_once(pytester: pytest.Pytester) -> None:
    project(pytester, ini=MATRIX)
    pytester.makepyfile(test_plain="def test_plain():\n    assert True\n")
    os.environ.pop("PYTEST_ADDOPTS", None)  # (the fixture's; monkeypatch restores it)
    result = pytester.runpytest_subprocess(*EVERY_PLUGIN, "-n", "2", "--snapshot-update",
                                           "--transfer-shard-id=0", "--transfer-num-shards=1",
                                           "--record-mode=none", "--timeout=120")
    result.assert_outcomes(passed=5)
    notes = [line for line in result.outlines if line.startswith("note: ")]
    assert notes == ["note: --record-mode, --shard-id, --num-shards belong to another plugin in this environment; "
                     "this plugin's spelling: --transfer-record-mode, --transfer-shard-id, --transfer-num-shards"]
    result.stdout.fnmatch_lines(["*skilltransfer shard 0 of 1*"])


def test_main_job_beside_every_plugin() -> None:
    result = _pytest(ROOT, *EVERY_PLUGIN, "-n", "2", "-q", "-p", "no:cacheprovider", "--timeout=600",
                     "--transfer-shard-id=0", "--transfer-num-shards=1")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert re.search(r"^\d+ passed", result.stdout.splitlines()[-1]), result.stdout[-2000:]
    assert "note: --record-mode, --shard-id, --num-shards belong to another plugin" in result.stdout


def test_short_spellings_are_ours_where_no_plugin_owns_them(pytester: pytest.Pytester) -> None:
    project(pytester, seeds=("alpha",))
    short = pytester.runpytest("--co", "-q", "--source", "toy-a", "--target", "toy-b")
    prefixed = pytester.runpytest("--co", "-q", "--transfer-source", "toy-a", "--transfer-target=toy-b")
    assert short.outlines[0] == prefixed.outlines[0] == "seeds/alpha/SKILL.md::transfer[toy-a->toy-b]"
    error = pytester.runpytest("--co", "--transfer-nights=0")
    error.stderr.fnmatch_lines(["*--nights: must be at least 1, got 0*"])  # messages use the short spelling
