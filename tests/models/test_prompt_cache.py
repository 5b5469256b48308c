"""Prompt caching: the Anthropic prefix is marked only when long enough for the model's known minimum and
never with `--prompt-cache=off`; cache-write and cache-read tokens from both providers are recorded,
replayed, metered and priced."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fake_provider import FakeProvider
from plugin_support import project

from pytest_skilltransfer import cassettes
from pytest_skilltransfer.pricing import prices
from pytest_skilltransfer.engine.ledger import Tally
from pytest_skilltransfer.models import anthropic_wire
from pytest_skilltransfer.models.base import Message, Request, ToolSpec, Usage
from pytest_skilltransfer.models.providers import build_model
from pytest_skilltransfer.models.sdk_common import CallPolicy, configure_calls
from pytest_skilltransfer.reports.report import cache_text
from pytest_skilltransfer.reports.result_json import cache_saved, cost_rows

LONG_SKILL = "# Pricing brief\n\n" + "Quote every price with its currency and date. " * 120  # ~1,400 tokens
SEARCH = ToolSpec("search", "Search the notes.", {"type": "object", "properties": {"query": {"type": "string"}}})


def ask(text: str, system: str = LONG_SKILL, sample_id: int = 0) -> Request:
    return Request(system=system, messages=(Message("user", text),), tools=(SEARCH,), max_tokens=64,
                   sample_id=sample_id)


def body_of(fake: FakeProvider, index: int = -1) -> dict:
    return fake.received[index]["body"]


def test_the_prefix_is_marked_only_when_long_enough_for_a_known_minimum(fake_provider: FakeProvider) -> None:
    sonnet = build_model(f"anthropic:claude-sonnet-5-5@{fake_provider.anthropic_url}")
    sonnet.complete(ask("Quote the plan."))
    assert body_of(fake_provider)["system"] == [
        {"type": "text", "text": LONG_SKILL, "cache_control": {"type": "ephemeral"}}]
    sonnet.complete(ask("Quote the plan.", system="Be brief."))  # far below Sonnet's 1,024 tokens
    assert body_of(fake_provider)["system"] == "Be brief."
    haiku45 = build_model(f"anthropic:claude-haiku-4-5@{fake_provider.anthropic_url}")
    haiku45.complete(ask("Quote the plan."))  # ~1,400 tokens is below Haiku 4.5's 4,096
    assert body_of(fake_provider)["system"] == LONG_SKILL


@pytest.mark.parametrize("model_id", ["smollm2-135m-anthropic", "claude-haiku-5-5", "fake-claude"])
def test_models_with_an_unknown_minimum_are_never_marked(fake_provider: FakeProvider, model_id: str) -> None:
    assert anthropic_wire.cache_min_tokens(model_id) is None
    build_model(f"anthropic:{model_id}@{fake_provider.anthropic_url}").complete(ask("Quote the plan."))
    assert body_of(fake_provider)["system"] == LONG_SKILL


def test_cache_tokens_are_recorded_replayed_and_priced(tmp_path: Path) -> None:
    fake = FakeProvider().start()
    fake.prompt_cache = True
    sonnet = build_model(f"anthropic:claude-sonnet-5-5@{fake.anthropic_url}")
    sol = build_model(f"openai:gpt-6-sol@{fake.openai_url}")
    with cassettes.recording(tmp_path, "seed-c", "once"):
        recorded = [m.complete(ask("Quote the plan.", sample_id=i)) for m in (sonnet, sol) for i in (0, 1)]
    fake.stop()
    first, second = recorded[0].usage, recorded[1].usage
    assert first.cache_write_tokens > 0 and first.cache_read_tokens == 0
    assert second.cache_read_tokens == first.cache_write_tokens and second.cache_write_tokens == 0
    assert second.input_tokens > second.cache_read_tokens  # input_tokens counts the whole prompt
    assert recorded[2].usage.cache_read_tokens == 0 and recorded[3].usage.cache_read_tokens > 0
    with cassettes.recording(tmp_path, "seed-c", "none"):
        replayed = [m.complete(ask("Quote the plan.", sample_id=i)) for m in (sonnet, sol) for i in (0, 1)]
    assert [r.usage for r in replayed] == [r.usage for r in recorded]

    read = second.cache_read_tokens
    expected = ((second.input_tokens - read) * 2.0 + read * 0.10 + second.output_tokens * 10.0) / 1e6
    assert prices.cost_usd("claude-sonnet-5-5", second) == pytest.approx(expected)
    assert prices.cache_saving_usd("claude-sonnet-5-5", second) == pytest.approx(read * (2.0 - 0.10) / 1e6)
    written = first.cache_write_tokens
    assert prices.cache_saving_usd("claude-sonnet-5-5", first) == pytest.approx(-written * 0.5 / 1e6)  # writes cost 1.25x

    costs = {("claude-sonnet-5-5", "agent"): Tally(2, 0, first + second),
             ("gpt-6-sol", "agent"): Tally(2, 0, recorded[2].usage + recorded[3].usage)}
    rows = cost_rows(costs)
    assert rows[0]["cache_write_tokens"] == written and rows[0]["cache_read_tokens"] == read
    assert rows[1]["cache_read_tokens"] == recorded[3].usage.cache_read_tokens
    assert cache_saved(costs) == pytest.approx(sum(r["cache_saved_usd"] for r in rows), abs=1e-6)
    assert cache_saved(costs) > 0


def test_reports_say_what_caching_saved() -> None:
    from plugin_support import item_record

    results = [item_record(cost={"cache_read_tokens": 1200, "cache_write_tokens": 1000, "cache_saved_usd": 0.0018})]
    assert cache_text(results) == ", prompt cache saved $0.0018 (1200 tokens read, 1000 written)"
    assert cache_text([item_record(cost={"cache_read_tokens": 0, "cache_write_tokens": 0, "cache_saved_usd": 0.0})]) == ""


def test_cache_rates_are_dated_and_missing_rates_mean_no_saving() -> None:
    table = prices.shipped_table()
    assert table.cache_effective == table.effective
    assert prices.rates_of("claude-haiku-5-5").cache_read == 0.01
    assert prices.rates_of("gpt-6-astra").cache_read is None
    usage = Usage(input_tokens=1000, output_tokens=0, cache_read_tokens=800)
    assert prices.cache_saving_usd("gpt-6-astra", usage) == 0.0
    prices.configure_prices({"my-model": {"input": 1, "output": 2, "cache_read": 0.5}})
    try:
        assert prices.cost_usd("my-model", usage) == pytest.approx((200 * 1 + 800 * 0.5) / 1e6)
    finally:
        prices.configure_prices({})


def test_prompt_cache_off_sends_no_cache_control(fake_provider: FakeProvider) -> None:
    sonnet = build_model(f"anthropic:claude-sonnet-5-5@{fake_provider.anthropic_url}")
    configure_calls(CallPolicy(prompt_cache=False))
    try:
        sonnet.complete(ask("Quote the plan."))
    finally:
        configure_calls(CallPolicy())
    assert body_of(fake_provider)["system"] == LONG_SKILL
    assert "cache_control" not in json.dumps(body_of(fake_provider))


def _bodies_with_cache_control(fake: FakeProvider) -> set[bool]:
    return {"cache_control" in json.dumps(r["body"]) for r in fake.received}


def test_the_option_reaches_the_requests_the_plan_and_the_rerecord_command(pytester: pytest.Pytester) -> None:
    fake = FakeProvider().start()
    root = project(pytester, ini="skilltransfer_no_direct = true\n", seeds=("alpha",))
    (root / "alpha" / "SKILL.md").write_text(LONG_SKILL[:2400])  # ~600 tokens: above Opus 5's 512
    pytester.makepyprojecttoml(f'''
        [tool.skilltransfer.models]
        opus = "anthropic:claude-opus-5@{fake.anthropic_url}"

        [tool.skilltransfer.prices]
        toy-a = {{ input = 0, output = 0 }}
    ''')
    run = ("--source", "toy-a", "--target", "opus", "--nights", "1", "--limit-replay=2", "--limit-holdout=2")
    cached = pytester.runpytest_subprocess(*run, "--record-mode=once", "--snapshot-update")
    cached.assert_outcomes(passed=1)
    assert fake.received and _bodies_with_cache_control(fake) == {True}

    plans = {mode: pytester.runpytest_subprocess(*run, "--plan", f"--prompt-cache={mode}", "--cassette-dir=empty")
             for mode in ("auto", "off")}
    totals = {mode: next(line for line in p.stdout.lines if line.startswith("total")).split()
              for mode, p in plans.items()}
    assert totals["auto"][:7] == totals["off"][:7]  # the same calls and tokens: only the dollars differ
    assert float(totals["auto"][7]) >= float(totals["off"][7])  # the bound prices prompts at the highest rate
    assert float(totals["auto"][8]) < float(totals["off"][8])  # expected: later calls read the cached prefix

    missed = pytester.runpytest_subprocess(*run, "--prompt-cache=off", "--record-mode=none")
    missed.assert_outcomes(errors=1)
    assert "cassette miss: seed 'alpha'" in missed.stdout.str()
    assert "--limit-holdout 2 --prompt-cache off --record-mode=new_episodes --snapshot-update" in missed.stdout.str()

    fake.received.clear()
    uncached = pytester.runpytest_subprocess(*run, "--prompt-cache=off", "--record-mode=once", "--cassette-dir=off",
                                             "--snapshot-update")
    uncached.assert_outcomes(passed=1)
    fake.stop()
    assert fake.received and _bodies_with_cache_control(fake) == {False}


def test_a_bad_prompt_cache_value_names_the_option(pytester: pytest.Pytester) -> None:
    project(pytester, seeds=("alpha",))
    result = pytester.runpytest("--prompt-cache=sometimes")
    assert "--prompt-cache: expected one of auto, off, got 'sometimes'" in result.stderr.str()
