"""Real providers through the plugin: record both pairs of a seed once, then replay them offline."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from fake_provider import FakeProvider
from plugin_support import project


def _one_seed_project(pytester: pytest.Pytester, pairs: str) -> FakeProvider:
    """Seed `alpha` with the given pairs of `small`/`large`, both served by a started loopback fake
    (Anthropic wire format); one night, no direct run."""
    fake = FakeProvider().start()
    project(pytester, ini=f"skilltransfer_pair = {pairs}\nskilltransfer_nights = 1\nskilltransfer_no_direct = true\n",
            seeds=("alpha",))
    pytester.makepyprojecttoml(f'''
        [tool.skilltransfer.models]
        small = "anthropic:fake-small@{fake.anthropic_url}"
        large = "anthropic:fake-large@{fake.anthropic_url}"
    ''')
    return fake


def test_both_pairs_of_a_seed_record_into_one_cassette_and_replay(pytester: pytest.Pytester) -> None:
    fake = _one_seed_project(pytester, "small:large large:small")
    limits = ("--limit-replay=2", "--limit-holdout=2")
    recorded = pytester.runpytest_subprocess(*limits, "--record-mode=once", "--snapshot-update", "--skilltransfer-json=a.json")
    recorded.assert_outcomes(passed=2)
    fake.stop()
    served = len(fake.received)
    folder = pytester.path / "cassettes" / "alpha"
    assert sorted(p.name for p in folder.glob("*.yaml")) == ["fake-large.yaml", "fake-small.yaml"]

    replayed = pytester.runpytest_subprocess(*limits, "--record-mode=none", "--skilltransfer-json=b.json")
    replayed.assert_outcomes(passed=2)
    assert len(fake.received) == served
    first, second = (json.loads((pytester.path / name).read_text()) for name in ("a.json", "b.json"))
    assert [r.pop("gate")["verdict"] for r in second["results"]] == ["pass", "pass"]  # the regression gate ran
    for result in first["results"]:
        result.pop("gate")
    assert second == first
    assert [(r["source"], r["target"]) for r in first["results"]] == [("fake-large", "fake-small"),
                                                                       ("fake-small", "fake-large")]


def test_a_miss_prints_a_command_that_re_records_exactly_that_item(pytester: pytest.Pytester) -> None:
    fake = FakeProvider().start()
    project(pytester, ini="skilltransfer_pair = toy-a:toy-b\nskilltransfer_no_direct = true\n", seeds=("alpha",))
    pytester.makepyprojecttoml(f'''
        [tool.skilltransfer.models]
        large = "anthropic:fake-large@{fake.anthropic_url}"
    ''')
    pair = ("--source", "toy-a", "--target", "large", "--nights", "1")
    recorded = pytester.runpytest_subprocess(*pair, "--record-mode=once", "--snapshot-update")
    recorded.assert_outcomes(passed=1)
    skill = pytester.path / "seeds" / "alpha" / "SKILL.md"
    skill.write_text(skill.read_text() + "Answer in one line.\n")
    (pytester.path / "summary.md").write_text("# An earlier step\n")
    missed = pytester.runpytest_subprocess(*pair, "--record-mode=none", "--skilltransfer-json=r.json",
                                           "--skilltransfer-md=summary.md", "--skilltransfer-html=page.html",
                                           "--junitxml=junit.xml")
    missed.assert_outcomes(errors=1)
    item = "seeds/alpha/SKILL.md::transfer[toy-a->large]"
    assert f"ERROR {item}: alpha (toy-a -> large): cassette miss: seed 'alpha'" in missed.stdout.str()
    assert "items: 0 passed, 0 failed, 0 inconclusive, 1 errored" in missed.stdout.str()
    report = json.loads((pytester.path / "r.json").read_text())
    assert report["counts"]["errored"] == 1 and report["errors"][0]["item"] == item
    markdown = (pytester.path / "summary.md").read_text()
    assert markdown.startswith("# An earlier step\n") and "## Errored items (1)" in markdown and item in markdown
    assert 'errors="1"' in (pytester.path / "junit.xml").read_text()
    command = ("pytest 'seeds/alpha/SKILL.md::transfer[toy-a->large]' --pair 'toy-a->large' --nights 1 "
               "--record-mode=new_episodes --snapshot-update")
    assert f"To record the missing calls, start the server at {fake.anthropic_url}, then run:\n      {command}\n" \
        in missed.stdout.str()
    assert report["errors"][0]["command"] == command  # the page and the Markdown print the fix, before any item
    assert f"fix: `{command}`" in markdown
    page = (pytester.path / "page.html").read_text()
    from pytest_skilltransfer.reports.html_parts import esc

    assert esc(command) in page and page.index("Errored items (1)") < page.index("No transfer item produced a result")
    assert "python -m pytest_skilltransfer rerecord alpha" in page and "rerecord alpha" in markdown
    rerun = pytester.runpytest_subprocess(*shlex.split(command)[1:])  # the printed command, as printed
    rerun.assert_outcomes(passed=1)
    fake.stop()
    replayed = pytester.runpytest_subprocess(*pair, "--record-mode=none")
    replayed.assert_outcomes(passed=1)


def test_a_local_model_miss_names_the_server_build_and_auto_start() -> None:
    from pathlib import Path

    from pytest_skilltransfer.cassettes.miss import MissDetails, render

    details = MissDetails("alpha", "smollm2-135m", "baseline", "none", "POST", "/v1/chat/completions",
                          "model_not_recorded", Path("cassettes/alpha"), None, "", 0,
                          "pytest 'seeds/alpha/SKILL.md::transfer[sim-small->smollm2-135m]' --pair "
                          "'sim-small->smollm2-135m' --record-mode=new_episodes", "http://127.0.0.1:8080")
    text = render(details)
    assert "python -m pytest_skilltransfer.local build" in text
    assert "--local-server=auto" in text and "python -m pytest_skilltransfer.local serve" in text
    assert "API key" not in text


def test_restarts_share_the_cassette_and_replay_offline(pytester: pytest.Pytester) -> None:
    fake = _one_seed_project(pytester, "small:large")
    limits = ("--limit-replay=2", "--limit-holdout=2", "--restarts=3")
    recorded = pytester.runpytest_subprocess(*limits, "--record-mode=once", "--snapshot-update", "--skilltransfer-json=a.json")
    recorded.assert_outcomes(passed=1)
    fake.stop()
    served = len(fake.received)
    keys = [json.dumps(r["body"], sort_keys=True) for r in fake.received]
    assert len(keys) == len(set(keys)), "no request is sent twice across restarts"
    assert sorted(p.name for p in (pytester.path / "cassettes" / "alpha").glob("*.yaml")) == ["fake-large.yaml",
                                                                                              "fake-small.yaml"]
    replayed = pytester.runpytest_subprocess(*limits, "--record-mode=none", "--skilltransfer-json=b.json")
    replayed.assert_outcomes(passed=1)
    assert len(fake.received) == served
    first, second = (json.loads((pytester.path / name).read_text())["results"][0] for name in ("a.json", "b.json"))
    assert [r["split_seed"] for r in second["restarts"]] == [42, 43, 44]
    for result in (first, second):
        result.pop("gate")
    assert second == first


def test_an_edited_cassette_answer_shows_up_in_the_snapshot(pytester: pytest.Pytester) -> None:
    fake = _one_seed_project(pytester, "small:large")
    limits = ("--limit-replay=2", "--limit-holdout=2")
    pytester.runpytest_subprocess(*limits, "--record-mode=once", "--snapshot-update").assert_outcomes(passed=1)
    fake.stop()
    path = pytester.path / "cassettes" / "alpha" / "fake-large.yaml"
    path.write_text(path.read_text().replace("fake answer", "edited answer", 1))
    replayed = pytester.runpytest_subprocess(*limits, "--record-mode=none")
    replayed.assert_outcomes(failed=1)
    replayed.stdout.fnmatch_lines(["*snapshot mismatch*", "*-- scored from * distinct call(s), evidence digest *",
                                   "*+- scored from * distinct call(s), evidence digest *"])


def _cassette_keys(folder: Path) -> dict[str, set[tuple[str, str, str]]]:
    from pytest_skilltransfer.cassettes.store import _raw_entries, model_files, plain_key

    return {path.name: {plain_key(entry) for entry in _raw_entries(path, False)} for path in model_files(folder)}


def test_a_re_record_after_a_skill_edit_keeps_only_what_the_run_used(pytester: pytest.Pytester) -> None:
    fake = _one_seed_project(pytester, "small:large large:small")
    limits = ("--limit-replay=2", "--limit-holdout=2")
    pytester.runpytest_subprocess(*limits, "--record-mode=once", "--snapshot-update").assert_outcomes(passed=2)
    folder = pytester.path / "cassettes" / "alpha"
    before = _cassette_keys(folder)
    skill = pytester.path / "seeds" / "alpha" / "SKILL.md"
    skill.write_text(skill.read_text() + "Answer in one line.\n")

    partial = pytester.runpytest_subprocess(*limits, "--record-mode=new_episodes", "--snapshot-update",
                                            "-k", "small_to_large")
    partial.assert_outcomes(passed=1)
    after_partial = _cassette_keys(folder)
    assert all(before[name] <= after_partial[name] for name in before)  # an item not run keeps every recording

    full = pytester.runpytest_subprocess(*limits, "--record-mode=new_episodes", "--snapshot-update")
    full.assert_outcomes(passed=2)
    fresh = pytester.runpytest_subprocess(*limits, "--record-mode=once", "--cassette-dir=fresh")
    fresh.assert_outcomes(passed=2)
    pruned, recorded = _cassette_keys(folder), _cassette_keys(pytester.path / "fresh" / "alpha")
    assert pruned == recorded  # exactly what a recording from scratch holds: nothing stale
    assert any(before[name] - pruned[name] for name in before)  # the stale interactions went
    fake.stop()
    pytester.runpytest_subprocess(*limits, "--record-mode=none").assert_outcomes(passed=2)
