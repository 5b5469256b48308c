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
    assert second == first
    assert [(r["source"], r["target"]) for r in first["results"]] == [("fake-large", "fake-small"),
                                                                       ("fake-small", "fake-large")]
