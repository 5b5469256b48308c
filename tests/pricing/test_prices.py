"""Prices: the dated table, globs, pyproject overrides, local models, and cost arithmetic."""

from __future__ import annotations

import re

import pytest

from pytest_skilltransfer.pricing import prices
from pytest_skilltransfer.models.aliases import builtin_aliases, sdk_model_ids
from pytest_skilltransfer.models.base import ModelError, Usage
from pytest_skilltransfer.models.providers import build_model, known_aliases


@pytest.fixture(autouse=True)
def _reset():
    yield
    prices.configure_prices({})


def test_table_is_dated_and_sourced() -> None:
    table = prices.shipped_table()
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", table.effective)
    assert "Anthropic" in table.source and "OpenAI" in table.source


@pytest.mark.parametrize(
    ("model_id", "price"),
    [
        ("claude-haiku-5-5", (0.10, 0.50)),
        ("claude-sonnet-5-5", (2.0, 10.0)),
        ("claude-opus-5-5", (4.0, 20.0)),
        ("claude-fable-5-2", (10.0, 50.0)),
        ("gpt-6-luna", (0.10, 0.50)),
        ("gpt-6-sol", (2.0, 10.0)),
        ("gpt-6-astra", (10.0, 50.0)),
        ("sim-small", (0.0, 0.0)),
        ("smollm2-135m", (0.0, 0.0)),
    ],
)
def test_known_prices(model_id: str, price: tuple[float, float]) -> None:
    assert prices.price_of(model_id) == price


def test_every_builtin_alias_has_a_price() -> None:
    for spec in builtin_aliases().values():  # not the user's table (a conftest may add aliases)
        assert prices.price_of(spec.split(":", 1)[1].split("@")[0]) is not None, spec


def test_priced_ids_exist_in_the_sdk_lists() -> None:
    listed = set(sdk_model_ids()["anthropic"]) | set(sdk_model_ids()["openai"])
    exact = [k for k in prices.shipped_table().models if not any(c in k for c in "*?[")]
    unknown = [k for k in exact if k not in listed and not k.startswith("smollm2")]
    assert unknown == []


def test_unknown_models_have_no_price() -> None:
    assert prices.price_of("mystery-model") is None
    assert prices.cost_usd("mystery-model", Usage(10, 10)) is None


def test_cost_arithmetic() -> None:
    cost = prices.cost_usd("claude-sonnet-5-5", Usage(input_tokens=1_000_000, output_tokens=500_000))
    assert cost == pytest.approx(2.0 + 5.0)
    assert prices.cost_usd("claude-haiku-5-5", Usage(2_000, 1_000)) == pytest.approx(0.0002 + 0.0005)


def test_pyproject_overrides_win_and_accept_both_forms() -> None:
    prices.configure_prices({"claude-haiku-5-5": {"input": 1, "output": 2}, "my-*": [0.5, 0.25]})
    assert prices.price_of("claude-haiku-5-5") == (1.0, 2.0)
    assert prices.price_of("my-model") == (0.5, 0.25)
    prices.configure_prices({})
    assert prices.price_of("claude-haiku-5-5") == (0.10, 0.50)


@pytest.mark.parametrize("bad", [{"m": {"input": 1}}, {"m": [1, -2]}, {"m": "cheap"}, {"m": [True, 1]}])
def test_bad_overrides_are_rejected(bad: dict) -> None:
    with pytest.raises(ModelError, match="m"):
        prices.configure_prices(bad)


def test_a_loopback_url_is_not_a_price_but_a_declared_free_model_or_the_local_family_is() -> None:
    from pytest_skilltransfer.models.local import LOCAL_MODEL_ALIAS
    from pytest_skilltransfer.models.providers import configure_aliases

    build_model("openai:my-gateway@http://127.0.0.1:8080/v1")  # a proxy in front of a paid API looks like this
    assert prices.price_of("my-gateway") is None
    try:
        configure_aliases({"mine": {"provider": "openai", "model": "my-local-llm",
                                    "base_url": "http://127.0.0.1:8080/v1", "free": True}})
        build_model("mine")
        assert prices.price_of("my-local-llm") == (0.0, 0.0)
        prices.configure_prices({"my-local-llm": [0.01, 0.02]})
        assert prices.price_of("my-local-llm") == (0.01, 0.02)  # a price given wins
        build_model(LOCAL_MODEL_ALIAS)
        assert prices.price_of(LOCAL_MODEL_ALIAS) == (0.0, 0.0)
        with pytest.raises(ModelError, match="free = 'yes'"):
            configure_aliases({"bad": {"provider": "openai", "model": "x", "free": "yes"}})
    finally:
        configure_aliases({})
        prices.configure_prices({})
