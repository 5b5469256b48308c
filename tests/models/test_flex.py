"""OpenAI flex: the service tier per model and per run, sent and recorded, priced in the flex lane; flex's 429
"resource unavailable" is retried with backoff and leaves the adaptive limiter alone."""

from __future__ import annotations

import json

import pytest
from fake_provider import FakeProvider
from plugin_support import make_seed, project

from pytest_skilltransfer.pricing import prices
from pytest_skilltransfer.models.base import Usage


def _project(pytester: pytest.Pytester, fake: FakeProvider, entry: str) -> None:
    project(pytester, ini="skilltransfer_pair = cheap:cheap\nskilltransfer_nights = 1\n", seeds=())
    make_seed(pytester.path / "seeds", "alpha", tasks=3)
    pytester.makepyprojecttoml(f'''
        [tool.skilltransfer.models]
        cheap = {entry}
        [tool.skilltransfer.prices]
        "fake-cheap" = {{ input = 2.0, output = 8.0, flex = {{ input = 1.0, output = 4.0 }} }}
    ''')


def test_a_flex_model_records_with_its_tier_replays_and_is_priced_at_flex(pytester: pytest.Pytester) -> None:
    with FakeProvider() as fake:
        fake.require_service_tier = "flex"
        fake.flex_unavailable = 3  # the first three flex requests find no capacity
        _project(pytester, fake, f'{{ provider = "openai", model = "fake-cheap", base_url = "{fake.openai_url}", '
                                 'service_tier = "flex" }')
        recorded = pytester.runpytest_subprocess("--record-mode=once", "--snapshot-update", "-v",
                                                 "--skilltransfer-json=r.json", "--provider-backoff=0.01")
        recorded.assert_outcomes(passed=1)
        sent = len(fake.received)
        assert sent > 3 and all(r["body"].get("service_tier") == "flex" for r in fake.received)
        recorded.stdout.fnmatch_lines(["*fake-cheap: HTTP 429 flex resource unavailable; retried after backoff, "
                                       "concurrency unchanged*"])
        assert "concurrency 8 ->" not in recorded.stdout.str()
        cassettes = "".join(p.read_text() for p in (pytester.path / "cassettes").rglob("*.yaml"))
        assert '"service_tier": "flex"' in cassettes or "service_tier" in cassettes
        report = json.loads((pytester.path / "r.json").read_text())["results"][0]["cost"]
        rows = [row for phase in report["phases"].values() for row in phase]
        usage = Usage(sum(r["input_tokens"] for r in rows), sum(r["output_tokens"] for r in rows))
        flex_usd = (usage.input_tokens * 1.0 + usage.output_tokens * 4.0) / 1e6  # the model's own flex rates
        assert report["total_usd"] == pytest.approx(flex_usd, abs=1e-5)
        assert {row["lane"] for row in rows} == {"flex"}

        replayed = pytester.runpytest_subprocess("--record-mode=none")
        replayed.assert_outcomes(passed=1)
        assert len(fake.received) == sent  # the flex recording replays offline


def test_the_run_option_asks_every_openai_model_for_flex(pytester: pytest.Pytester) -> None:
    with FakeProvider() as fake:
        fake.require_service_tier = "flex"
        _project(pytester, fake, f'"openai:fake-cheap@{fake.openai_url}"')
        result = pytester.runpytest_subprocess("--record-mode=once", "--snapshot-update",
                                               "--transfer-service-tier=flex", "--plan")
        result.stdout.fnmatch_lines(["flex *"])
        run = pytester.runpytest_subprocess("--record-mode=once", "--snapshot-update", "--transfer-service-tier=flex")
        run.assert_outcomes(passed=1)
        sent = len(fake.received)
        assert sent and all(r["body"].get("service_tier") == "flex" for r in fake.received)
        pytester.runpytest_subprocess("--record-mode=none", "--transfer-service-tier=flex").assert_outcomes(passed=1)

        standard = pytester.runpytest_subprocess("--record-mode=none")
        assert standard.ret != 0  # a standard request is another request: a replay miss, never a call
        standard.stdout.fnmatch_lines(["*cassette miss*", "*service_tier: flex*"])
        assert len(fake.received) == sent


def test_a_service_tier_for_an_anthropic_model_is_a_clear_error(pytester: pytest.Pytester) -> None:
    project(pytester, ini="skilltransfer_pair = c:c\n", seeds=("alpha",))
    pytester.makepyprojecttoml('''
        [tool.skilltransfer.models]
        c = { provider = "anthropic", model = "claude-haiku-5-5", service_tier = "flex" }
    ''')
    result = pytester.runpytest_subprocess()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*[[]tool.skilltransfer.models[]] c: service_tier = 'flex' is not offered*"])


def test_flex_prices_are_dated_and_half_of_standard() -> None:
    lane = prices.lane_table("flex")
    assert lane is not None and lane.effective and lane.factor == 0.5
    assert prices.rates_of("gpt-6-sol", "flex").pair == (1.0, 5.0)
    assert prices.rates_of("claude-sonnet-5-5", "flex") is None  # not offered by Anthropic
    assert prices.rates_of("claude-sonnet-5-5", "batch").pair == (1.0, 5.0)
