"""Real providers through the plugin: record both pairs of a seed once, then replay them offline."""

from __future__ import annotations

import json

import pytest

from fake_provider import FakeProvider
from plugin_support import project


@pytest.fixture(autouse=True)
def _no_real_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)


def test_both_pairs_of_a_seed_record_into_one_cassette_and_replay(pytester: pytest.Pytester) -> None:
    fake = FakeProvider().start()
    project(pytester, ini="skilltransfer_pair = small:large large:small\nskilltransfer_nights = 1\nskilltransfer_no_direct = true\n", seeds=("alpha",))
    pytester.makepyprojecttoml(f'''
        [tool.skilltransfer.models]
        small = "anthropic:fake-small@{fake.anthropic_url}"
        large = "anthropic:fake-large@{fake.anthropic_url}"
    ''')
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


def test_restarts_share_the_cassette_and_replay_offline(pytester: pytest.Pytester) -> None:
    fake = FakeProvider().start()
    project(pytester, ini="skilltransfer_pair = small:large\nskilltransfer_nights = 1\nskilltransfer_no_direct = true\n",
            seeds=("alpha",))
    pytester.makepyprojecttoml(f'''
        [tool.skilltransfer.models]
        small = "anthropic:fake-small@{fake.anthropic_url}"
        large = "anthropic:fake-large@{fake.anthropic_url}"
    ''')
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
    fake = FakeProvider().start()
    project(pytester, ini="skilltransfer_pair = small:large\nskilltransfer_nights = 1\nskilltransfer_no_direct = true\n",
            seeds=("alpha",))
    pytester.makepyprojecttoml(f'''
        [tool.skilltransfer.models]
        small = "anthropic:fake-small@{fake.anthropic_url}"
        large = "anthropic:fake-large@{fake.anthropic_url}"
    ''')
    limits = ("--limit-replay=2", "--limit-holdout=2")
    pytester.runpytest_subprocess(*limits, "--record-mode=once", "--snapshot-update").assert_outcomes(passed=1)
    fake.stop()
    path = pytester.path / "cassettes" / "alpha" / "fake-large.yaml"
    path.write_text(path.read_text().replace("fake answer", "edited answer", 1))
    replayed = pytester.runpytest_subprocess(*limits, "--record-mode=none")
    replayed.assert_outcomes(failed=1)
    replayed.stdout.fnmatch_lines(["*snapshot mismatch*", "*-- scored from * distinct call(s), evidence digest *",
                                   "*+- scored from * distinct call(s), evidence digest *"])
