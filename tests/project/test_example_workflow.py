"""The GitHub Actions workflow a team copies: it lints clean and names only options that exist."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
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


def test_the_rerecord_job_keeps_what_it_paid_for_when_the_budget_or_a_gate_stops_it() -> None:
    """The pull request step runs whenever anything was recorded, not only when the recording step succeeded."""
    import yaml

    steps = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))["jobs"]["rerecord"]["steps"]
    record = next(s for s in steps if s.get("id") == "record")
    pull_request = next(s for s in steps if "create-pull-request" in s.get("uses", ""))
    assert record.get("continue-on-error") is True
    assert pull_request["if"] == "${{ !cancelled() }}" and "steps.outcome.outputs.body" in pull_request["with"]["body"]
    assert steps.index(pull_request) > steps.index(record)
    assert any(s.get("if") == "${{ steps.record.outcome == 'failure' }}" and "exit 1" in s.get("run", "")
               for s in steps[steps.index(pull_request):])


@pytest.mark.parametrize("outcome, report, expected", [
    ("failure", {"counts": {"failed": 0, "errored": 2}, "errors": [{"reason": "--max-cost 5: the budget is spent"}]},
     "The budget stopped this run"),
    ("failure", {"counts": {"failed": 3, "errored": 0}, "errors": []}, "3 item(s) failed a gate"),
    ("failure", {"counts": {"failed": 0, "errored": 1}, "errors": [{"reason": "cassette miss"}]},
     "The recording step failed"),
    ("success", {"counts": {"failed": 0}, "errors": []}, "New recordings from the scheduled re-record job."),
])
def test_the_pull_request_body_says_why_the_recording_stopped(tmp_path: Path, outcome: str, report: dict,
                                                               expected: str) -> None:
    import json
    import os

    import yaml

    steps = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))["jobs"]["rerecord"]["steps"]
    script = next(s for s in steps if s.get("id") == "outcome")["run"]
    code = script.split("<<'PY'\n", 1)[1].rsplit("PY\n", 1)[0]
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "rerecord.json").write_text(json.dumps(report))
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "RECORD_OUTCOME": outcome})
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("body<<PR_BODY_END\n") and done.stdout.endswith("PR_BODY_END\n")
    assert expected in done.stdout
