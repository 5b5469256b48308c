"""A clean tree: the first recording writes `cassettes/.gitignore`, a run that ends by any path but kill -9
leaves no claim file, and the next run removes the stale ones a killed run left."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from batch_provider import BatchProvider
from pytest_skilltransfer.cassettes import recording
from pytest_skilltransfer.models.base import Message, ModelCallError, Request
from pytest_skilltransfer.models.batch import BatchSettings, configure_batch
from pytest_skilltransfer.models.providers import build_model


def _ask(model: object, i: int) -> object:
    try:
        return model.complete(Request(system="s", messages=(Message("user", f"q {i}"),), max_tokens=16))
    except ModelCallError as exc:
        return exc


def _debris(root: Path) -> list[str]:
    """What `git add` would take from the cassette folder besides model files, indexes and the manifest."""
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "add", "cassettes"], cwd=root, check=True)
    listed = subprocess.run(["git", "diff", "--cached", "--name-only"], cwd=root, capture_output=True, text=True,
                            check=True).stdout.split()
    return [name for name in listed if not name.endswith((".yaml", ".yaml.index", "batch-manifest.jsonl",
                                                          ".gitignore"))]


def test_the_first_recording_writes_the_gitignore_and_git_add_takes_no_lock(tmp_path: Path) -> None:
    cassettes = tmp_path / "cassettes"
    with BatchProvider() as fake:
        model = build_model(f"anthropic:clean@{fake.anthropic_url}")
        with recording(cassettes, "seed", "new_episodes"):
            _ask(model, 0)
        configure_batch(BatchSettings(gather_s=0.05, poll_s=0.02), cassettes)  # the batch manifest and its lock
        try:
            with recording(cassettes, "other", "new_episodes"):
                _ask(model, 1)
        finally:
            configure_batch(None)
    assert (cassettes / ".gitignore").is_file()
    assert (cassettes / "batch-manifest.jsonl").is_file()
    assert _debris(tmp_path) == []


def test_a_run_stopped_by_a_429_streak_leaves_no_claim_file(tmp_path: Path) -> None:
    with BatchProvider() as fake:
        fake.fail_next(*[429] * 18, retry_after_ms=1)  # every try of both calls
        model = build_model(f"anthropic:clean@{fake.anthropic_url}")
        with recording(tmp_path, "seed", "new_episodes"):
            outcomes = [_ask(model, i) for i in range(2)]
    assert all(isinstance(o, ModelCallError) for o in outcomes)
    assert sorted(p.name for p in (tmp_path / "seed").glob(".inflight-*")) == []


def test_the_next_run_removes_claims_a_killed_run_left(tmp_path: Path) -> None:
    folder = tmp_path / "seed"
    folder.mkdir()
    stale = folder / ".inflight-0123456789abcdef01234567.lock"
    stale.write_bytes(b"")
    with BatchProvider() as fake:
        with recording(tmp_path, "seed", "new_episodes"):
            _ask(build_model(f"anthropic:clean@{fake.anthropic_url}"), 0)
    assert not stale.exists() and not list(folder.glob(".inflight-*"))
