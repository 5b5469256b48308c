"""Model prices (dollars per million input/output tokens) from the dated `prices.toml`.

Prompt-cache tokens have their own rates (`cache_write`, `cache_read`, dated by `cache_effective`);
a model without them pays its input rate for cache tokens, so no saving is ever assumed.

Lookup order: pyproject overrides (`configure_prices`), exact ids in the table, globs in the table
(`sim-*`), then models served from a loopback base URL (free). Unknown models have no price (None),
which reports show as such rather than as zero.
"""

from __future__ import annotations

import datetime as dt
import threading
import tomllib
from dataclasses import dataclass
from fnmatch import fnmatchcase
from functools import lru_cache
from importlib import resources
from typing import Any

from .models.base import ModelError, Usage

Price = tuple[float, float]
CACHE_FIELDS = ("cache_write", "cache_read")


@dataclass(frozen=True)
class Rates:
    """Dollars per million tokens: input, output, and prompt-cache writes and reads (None: input rate)."""

    input: float
    output: float
    cache_write: float | None = None
    cache_read: float | None = None

    @property
    def pair(self) -> Price:
        return self.input, self.output


@dataclass(frozen=True)
class PriceTable:
    """The shipped table: when it was true, where it came from, and the rates."""

    effective: str
    source: str
    models: dict[str, Rates]
    cache_effective: str = ""


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0


def _price(key: str, value: Any, where: str) -> Rates:
    if isinstance(value, dict) and {"input", "output"} <= value.keys():
        pair = (value["input"], value["output"])
        extra = {name: value[name] for name in CACHE_FIELDS if name in value}
        unknown = set(value) - {"input", "output", *CACHE_FIELDS}
        if unknown:
            raise ModelError(f"{where} {key!r}: unknown field(s) {', '.join(sorted(unknown))}; "
                             f"use input, output, {', '.join(CACHE_FIELDS)}")
    elif isinstance(value, (list, tuple)) and len(value) == 2:
        pair, extra = (value[0], value[1]), {}
    else:
        raise ModelError(f"{where} {key!r}: give {{ input = <$/Mtok>, output = <$/Mtok> }} or [input, output]")
    if not all(_number(v) for v in (*pair, *extra.values())):
        raise ModelError(f"{where} {key!r}: prices must be non-negative numbers, got {value!r}")
    return Rates(float(pair[0]), float(pair[1]), **{k: float(v) for k, v in extra.items()})


def _date(value: Any) -> str:
    return value.isoformat() if isinstance(value, dt.date) else str(value or "")


@lru_cache(maxsize=1)
def shipped_table() -> PriceTable:
    """The table in `prices.toml`."""
    data = tomllib.loads(resources.files("pytest_skilltransfer").joinpath("prices.toml").read_text("utf-8"))
    models = {key: _price(key, value, "prices.toml") for key, value in data.get("models", {}).items()}
    return PriceTable(effective=_date(data.get("effective")), source=" ".join(str(data.get("source", "")).split()),
                      models=models, cache_effective=_date(data.get("cache_effective")))


_lock = threading.Lock()
_overrides: dict[str, Rates] = {}
_local: set[str] = set()


def configure_prices(table: dict[str, Any]) -> None:
    """Apply `[tool.skilltransfer.prices]` (model id or glob -> price); replaces earlier overrides."""
    parsed = {key: _price(key, value, "[tool.skilltransfer.prices]") for key, value in (table or {}).items()}
    with _lock:
        _overrides.clear()
        _overrides.update(parsed)


def mark_local(model_id: str) -> None:
    """Record that `model_id` is served on this machine (free unless priced explicitly)."""
    with _lock:
        _local.add(model_id)


def _lookup(table: dict[str, Rates], model_id: str) -> Rates | None:
    if model_id in table:
        return table[model_id]
    globs = sorted((k for k in table if any(c in k for c in "*?[") and fnmatchcase(model_id, k)), key=len)
    return table[globs[-1]] if globs else None


def rates_of(model_id: str) -> Rates | None:
    """Every rate of a model, or None if unknown."""
    with _lock:
        overrides, local = dict(_overrides), model_id in _local
    found = _lookup(overrides, model_id) or _lookup(shipped_table().models, model_id)
    if found is None and local:
        return Rates(0.0, 0.0)
    return found


def price_of(model_id: str) -> Price | None:
    """(input, output) dollars per million tokens, or None if unknown."""
    rates = rates_of(model_id)
    return None if rates is None else rates.pair


def cost_usd(model_id: str, usage: Usage) -> float | None:
    """Dollars for `usage` on `model_id` (cache tokens at their rates), or None when the model has no price."""
    rates = rates_of(model_id)
    if rates is None:
        return None
    write = rates.input if rates.cache_write is None else rates.cache_write
    read = rates.input if rates.cache_read is None else rates.cache_read
    uncached = max(0, usage.input_tokens - usage.cache_write_tokens - usage.cache_read_tokens)
    return (uncached * rates.input + usage.cache_write_tokens * write + usage.cache_read_tokens * read
            + usage.output_tokens * rates.output) / 1_000_000


def cache_saving_usd(model_id: str, usage: Usage) -> float | None:
    """What prompt caching saved against paying the input rate for every prompt token (negative when
    writes cost more than the reads saved), or None when the model has no price."""
    actual = cost_usd(model_id, usage)
    if actual is None:
        return None
    return cost_usd(model_id, Usage(usage.input_tokens, usage.output_tokens)) - actual  # type: ignore[operator]
