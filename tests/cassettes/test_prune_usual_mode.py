"""A re-record prunes in the usual mode: per model file, whenever every item that could use the file ran,
including `--source/--target` and `--pair` runs; a partial run spares what it did not cover."""

from __future__ import annotations

from pathlib import Path

import pytest

from batch_provider import BatchProvider
from plugin_support import project

LIMITS = ("--limit-replay=2", "--limit-holdout=2")


@pytest.fixture
def fake() -> BatchProvider:
    with BatchProvider() as server:
        yield server


def _project(pytester: pytest.Pytester, fake: BatchProvider, pairs: str) -> None:
    project(pytester, ini=f"skilltransfer_pair = {pairs}\nskilltransfer_nights = 1\nskilltransfer_no_direct = true\n",
            seeds=("alpha",))
    models = "\n".join(f'{name} = "anthropic:fake-{name}@{fake.anthropic_url}"' for name in ("small", "large", "mid", "top"))
    pytester.makepyprojecttoml(f"[tool.skilltransfer.models]\n{models}\n")


def _keys(folder: Path) -> dict[str, list[tuple[str, str, str]]]:
    from pytest_skilltransfer.cassettes.store import _raw_entries, model_files, plain_key

    return {path.name: sorted(plain_key(entry) for entry in _raw_entries(path, False)) for path in model_files(folder)}


def _edit_one_line(pytester: pytest.Pytester) -> None:
    skill = pytester.path / "seeds" / "alpha" / "SKILL.md"
    skill.write_text(skill.read_text().replace("Route the ticket to a team.", "Route the ticket to one team."))


@pytest.mark.parametrize("matrix", [("--pair", "small:large"), ("--source=small", "--target=large")])
def test_a_re_record_after_a_one_line_edit_equals_a_fresh_recording(pytester: pytest.Pytester, fake: BatchProvider,
                                                                     matrix: tuple[str, ...]) -> None:
    _project(pytester, fake, "small:large")
    pytester.runpytest_subprocess(*LIMITS, "--record-mode=once", "--snapshot-update").assert_outcomes(passed=1)
    folder = pytester.path / "cassettes" / "alpha"
    before = _keys(folder)
    _edit_one_line(pytester)
    rerecord = pytester.runpytest_subprocess(*LIMITS, *matrix, "--record-mode=new_episodes", "--snapshot-update")
    rerecord.assert_outcomes(passed=1)
    fresh = pytester.runpytest_subprocess(*LIMITS, *matrix, "--record-mode=once", "--cassette-dir=fresh")
    fresh.assert_outcomes(passed=1)
    after, recorded = _keys(folder), _keys(pytester.path / "fresh" / "alpha")
    sizes = {name: (len(before[name]), len(after[name]), len(recorded[name])) for name in recorded}
    print("interactions per model file (before the edit, re-recorded, fresh):", sizes)
    assert after == recorded, sizes  # the same interactions as a fresh recording: nothing stale kept
    assert sum(map(len, after.values())) < sum(map(len, before.values())) + sum(map(len, recorded.values()))
    fake.stop()
    pytester.runpytest_subprocess(*LIMITS, *matrix, "--record-mode=none").assert_outcomes(passed=1)


def test_a_command_line_matrix_prunes_only_the_files_no_other_configured_item_uses(pytester: pytest.Pytester,
                                                                                   fake: BatchProvider) -> None:
    _project(pytester, fake, "small:large mid:top")
    pytester.runpytest_subprocess(*LIMITS, "--record-mode=once", "--snapshot-update").assert_outcomes(passed=2)
    folder = pytester.path / "cassettes" / "alpha"
    before = _keys(folder)
    _edit_one_line(pytester)
    pytester.runpytest_subprocess(*LIMITS, "--pair", "small:large", "--record-mode=new_episodes",
                                  "--snapshot-update").assert_outcomes(passed=1)
    pytester.runpytest_subprocess(*LIMITS, "--pair", "small:large", "--record-mode=once",
                                  "--cassette-dir=fresh").assert_outcomes(passed=1)
    after, recorded = _keys(folder), _keys(pytester.path / "fresh" / "alpha")
    for name in ("fake-small.yaml", "fake-large.yaml"):
        assert after[name] == recorded[name]  # only the run's pair uses them: pruned
    for name in ("fake-mid.yaml", "fake-top.yaml"):
        assert after[name] == before[name]  # the configured item mid:top did not run: untouched


@pytest.mark.parametrize("partial", [("-k", "small_to_large"), ("--pair", "small:large")])
def test_a_partial_run_spares_the_files_of_the_items_it_did_not_run(pytester: pytest.Pytester, fake: BatchProvider,
                                                                    partial: tuple[str, ...]) -> None:
    _project(pytester, fake, "small:large large:small")
    pytester.runpytest_subprocess(*LIMITS, "--record-mode=once", "--snapshot-update").assert_outcomes(passed=2)
    folder = pytester.path / "cassettes" / "alpha"
    before = _keys(folder)
    _edit_one_line(pytester)
    pytester.runpytest_subprocess(*LIMITS, *partial, "--record-mode=new_episodes",
                                  "--snapshot-update").assert_outcomes(passed=1)
    after = _keys(folder)
    assert all(set(before[name]) <= set(after[name]) for name in before)  # large:small can still replay
