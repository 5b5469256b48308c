"""`python -m pytest_skilltransfer history`: each seed x pair's gain across the commits that changed its
snapshot, read from git alone (a temp repository with a snapshot committed three times)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from pytest_skilltransfer.commands.cli import main

SNAPSHOT = "seeds/router/__snapshots__/transfer[a_to_b].md"


def snapshot_text(gain: str, outcome: str | None) -> str:
    lines = ["# router: a -> b", "", f"- gain: {gain} over 24 task(s), p = 0.5 (exact unconditional)"]
    return "\n".join(lines + ([f"- outcome: {outcome}"] if outcome else [])) + "\n"


def commit(repo: Path, text: str, message: str) -> None:
    path = repo / SNAPSHOT
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    for args in (("add", "-A"), ("commit", "-qm", message)):
        subprocess.run(["git", "-c", "user.name=R", "-c", "user.email=r@example.com", *args], cwd=repo, check=True)


def test_history_shows_when_a_transfer_appeared_and_broke(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=tmp_path, check=True)
    commit(tmp_path, snapshot_text("+0.04 [-0.11, +0.21]", None), "first skill")  # older: no outcome line
    commit(tmp_path, snapshot_text("+0.92 [+0.67, +0.99]", "transfers"), "teach the owner line")
    (tmp_path / "README.md").write_text("unrelated\n")
    commit(tmp_path, snapshot_text("+0.92 [+0.67, +0.99]", "transfers"), "touch nothing of the snapshot")
    commit(tmp_path, snapshot_text("-0.50 [-0.80, -0.20]", "hurts"), "shorten the skill")
    assert main(["history", "--root", str(tmp_path), "--html", str(tmp_path / "h.html")]) == 0
    out = capsys.readouterr().out
    assert "router\n  a -> b (3 commit(s), seeds/router/__snapshots__/transfer[a_to_b].md)" in out
    rows = [line.split() for line in out.splitlines() if line.startswith("    ")]
    assert [r[2] for r in rows] == ["+0.04", "+0.92", "-0.50"]  # oldest first; a commit without a change is none
    assert out.count("transfer appeared") == 1 and out.count("transfer broke") == 1
    assert "no effect shown" in " ".join(rows[0])  # derived from the interval when the snapshot has no outcome line
    page = (tmp_path / "h.html").read_text()
    assert page.count("<circle") == 3 and "shorten the skill" in page
    assert main(["history", "--root", str(tmp_path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [(r["gain"], r["ci_low"], r["ci_high"], r["outcome"]) for r in data] == [
        (0.04, -0.11, 0.21, "no effect shown"), (0.92, 0.67, 0.99, "transfers"), (-0.5, -0.8, -0.2, "hurts")]


def test_the_page_holds_the_history_section_when_asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=tmp_path, check=True)
    commit(tmp_path, snapshot_text("+0.92 [+0.67, +0.99]", "transfers"), "base")
    report = {"results": [], "errors": []}
    (tmp_path / "r.json").write_text(json.dumps(report))
    monkeypatch.chdir(tmp_path)
    assert main(["html", "r.json", "-o", "plain.html"]) == 0
    assert "History" not in (tmp_path / "plain.html").read_text()
    assert main(["html", "r.json", "-o", "with.html", "--history"]) == 0
    page = (tmp_path / "with.html").read_text()
    assert "<h2>History: gain over commits</h2>" in page and 'class="history"' in page and "<circle" in page


def test_history_on_this_repository_draws_each_seed_over_its_snapshot_commits(
        capsys: pytest.CaptureFixture[str]) -> None:
    root = Path(__file__).resolve().parents[2]
    shallow = subprocess.run(["git", "rev-parse", "--is-shallow-repository"], cwd=root, capture_output=True, text=True)
    if shallow.returncode != 0 or shallow.stdout.strip() != "false":
        pytest.skip("needs the repository's full history (not a shallow clone)")
    assert main(["history", "--root", str(root), "--seeds", "docs-style", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    pairs = {(r["source"], r["target"]) for r in rows}
    assert {("sim-large", "sim-small"), ("sim-small", "sim-large")} <= pairs
    assert all(sum(1 for r in rows if (r["source"], r["target"]) == pair) >= 2 for pair in pairs)
