"""Model prices (dollars per million input/output tokens) from the dated `prices.toml`.

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


@dataclass(frozen=True)
class PriceTable:
    """The shipped table: when it was true, where it came from, and the prices."""

    effective: str
    source: str
    models: dict[str, Price]


def _price(key: str, value: Any, where: str) -> Price:
    if isinstance(value, dict) and {"input", "output"} <= value.keys():
        pair = (value["input"], value["output"])
    elif isinstance(value, (list, tuple)) and len(value) == 2:
        pair = (value[0], value[1])
    else:
        raise ModelError(f"{where} {key!r}: give {{ input = <$/Mtok>, output = <$/Mtok> }} or [input, output]")
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 for v in pair):
        raise ModelError(f"{where} {key!r}: prices must be non-negative numbers, got {pair!r}")
    return float(pair[0]), float(pair[1])


@lru_cache(maxsize=1)
def shipped_table() -> PriceTable:
    """The table in `prices.toml`."""
    data = tomllib.loads(resources.files("pytest_skilltransfer").joinpath("prices.toml").read_text("utf-8"))
    effective = data.get("effective")
    effective = effective.isoformat() if isinstance(effective, dt.date) else str(effective)
    models = {key: _price(key, value, "prices.toml") for key, value in data.get("models", {}).items()}
    return PriceTable(effective=effective, source=" ".join(str(data.get("source", "")).split()), models=models)


_lock = threading.Lock()
_overrides: dict[str, Price] = {}
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


def _lookup(table: dict[str, Price], model_id: str) -> Price | None:
    if model_id in table:
        return table[model_id]
    globs = sorted((k for k in table if any(c in k for c in "*?[") and fnmatchcase(model_id, k)), key=len)
    return table[globs[-1]] if globs else None


def price_of(model_id: str) -> Price | None:
    """(input, output) dollars per million tokens, or None if unknown."""
    with _lock:
        overrides, local = dict(_overrides), model_id in _local
    found = _lookup(overrides, model_id) or _lookup(shipped_table().models, model_id)
    if found is None and local:
        return (0.0, 0.0)
    return found


def cost_usd(model_id: str, usage: Usage) -> float | None:
    """Dollars for `usage` on `model_id`, or None when the model has no price."""
    price = price_of(model_id)
    if price is None:
        return None
    return (usage.input_tokens * price[0] + usage.output_tokens * price[1]) / 1_000_000
