"""The GitHub Actions workflow a team copies: it lints clean and names only options that exist."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / "examples" / "github-actions" / "skilltransfer.yml"
OPTION = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]+)")


def actionlint() -> str:
    """The checker shipped by the dev extra, next to this interpreter (or on PATH)."""
    found = shutil.which("actionlint", path=str(Path(sys.executable).parent)) or shutil.which("actionlint")
    if found is None:
        pytest.fail("actionlint is missing: install the dev extra (pip install -e '.[dev]')")
    return found


def lint(path: Path) -> subprocess.CompletedProcess[str]:
    # shellcheck and pyflakes are left out so the result does not depend on what else the machine has.
    return subprocess.run([actionlint(), "-shellcheck=", "-pyflakes=", "-no-color", str(path)],
                          capture_output=True, text=True, timeout=120)


def commands(prefix: str) -> list[str]:
    """The folded `run:` commands of the workflow that start with `prefix`, one string each."""
    text = WORKFLOW.read_text(encoding="utf-8")
    blocks = re.findall(r"run: >-\n((?:          .*\n)+)", text)
    joined = [" ".join(line.strip() for line in block.splitlines()) for block in blocks]
    return [c for c in joined if c.startswith(prefix)]


def test_workflow_is_an_example_that_our_own_ci_does_not_run() -> None:
    assert WORKFLOW.is_file()
    assert not (ROOT / ".github" / "workflows" / WORKFLOW.name).exists()


def test_workflow_passes_actionlint() -> None:
    result = lint(WORKFLOW)
    assert result.returncode == 0, result.stdout + result.stderr


def test_actionlint_catches_a_broken_workflow(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yml"
    broken.write_text(WORKFLOW.read_text(encoding="utf-8").replace("needs: replay", "needs: no-such-job"))
    result = lint(broken)
    assert result.returncode != 0 and "no-such-job" in result.stdout


def test_workflow_jobs_replay_on_pull_requests_and_record_on_a_schedule() -> None:
    text = WORKFLOW.read_text(encoding="utf-8")
    replay, report, rerecord = (text.split(f"\n  {job}:", 1)[1] for job in ("replay", "report", "rerecord"))
    assert 'CI: "true"' in replay.split("\n  report:")[0] and "shard: [0, 1, 2]" in replay
    assert "GITHUB_STEP_SUMMARY" in report.split("\n  rerecord:")[0]
    assert "secrets.ANTHROPIC_API_KEY" in rerecord and "--record-mode=new_episodes" in rerecord
    assert "secrets." not in text.split("\n  rerecord:")[0], "keys must never reach the pull-request jobs"


@pytest.mark.parametrize("prefix, help_command", [
    ("pytest ", [sys.executable, "-m", "pytest", "--help"]),
    ("python -m pytest_skilltransfer merge", [sys.executable, "-m", "pytest_skilltransfer", "merge", "--help"]),
    ("python -m pytest_skilltransfer index", [sys.executable, "-m", "pytest_skilltransfer", "index", "--help"]),
])
def test_every_option_the_workflow_passes_exists(prefix: str, help_command: list[str]) -> None:
    used = {option for command in commands(prefix) for option in OPTION.findall(command)}
    assert used, f"no {prefix!r} command found in {WORKFLOW.name}"
    shown = subprocess.run(help_command, capture_output=True, text=True, cwd=ROOT, timeout=120).stdout
    assert sorted(option for option in used if option not in shown) == []
