"""Model prices (dollars per million input/output tokens) from the dated `prices.toml`.

Prompt-cache tokens have their own rates (`cache_write`, `cache_read`, dated by `cache_effective`);
a model without them pays its input rate for cache tokens, so no saving is ever assumed.

Lanes: the same tokens cost less through the cheaper lanes. `standard` is the ordinary synchronous
API; `batch` (Anthropic Message Batches, OpenAI Batch API) and `flex` (OpenAI's `service_tier =
"flex"` on the synchronous API) are priced by the dated `[lanes.*]` tables of `prices.toml`: every
rate times the lane's `factor`, for the models its `models` globs name. A model entry may give a
lane's rates itself (`flex = { input = .., output = .. }`), which wins. A lane a model is not
offered in has no price (None). `mark_lane` records the lane a model's calls go through in this
run, so its spending and reports are priced there.

Lookup order: pyproject overrides (`configure_prices`), exact ids in the table, globs in the table
(`sim-*`), then models declared free (`mark_free`: `free = true` in the models table, or the built-in
local llama-server models). Unknown models have no price (None), which reports show as such rather
than as zero, and which `--max-cost` refuses: a loopback base URL is not a price (a local gateway or
proxy in front of a paid API looks exactly like a local model).
"""

from __future__ import annotations

import datetime as dt
import threading
import tomllib
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from functools import lru_cache
from importlib import resources
from typing import Any

from ..guards.errors import ModelError
from ..guards.run_scope import Scoped
from .usage import ANOTHER_RUN, Usage

Price = tuple[float, float]
CACHE_FIELDS = ("cache_write", "cache_read")
LANES = ("standard", "flex", "batch")


@dataclass(frozen=True)
class Rates:
    """Dollars per million tokens: input, output, and prompt-cache writes and reads (None: input rate)."""

    input: float
    output: float
    cache_write: float | None = None
    cache_read: float | None = None

    flex: "Rates | None" = None  # this model's own flex rates, when the table gives them
    batch: "Rates | None" = None

    @property
    def pair(self) -> Price:
        return self.input, self.output

    def scaled(self, factor: float) -> "Rates":
        """Every rate times `factor` (a lane's discount)."""
        scale = lambda v: None if v is None else v * factor  # noqa: E731
        return Rates(self.input * factor, self.output * factor, scale(self.cache_write), scale(self.cache_read))

    @property
    def worst_input(self) -> float:
        """The highest rate a prompt token can be charged (a cache write may cost more than input)."""
        return max(self.input, self.cache_write or 0.0)


@dataclass(frozen=True)
class Lane:
    """A cheaper way to send the same calls: a dated factor on every rate, for the models it covers."""

    name: str
    factor: float
    models: tuple[str, ...]
    effective: str
    source: str = ""

    def covers(self, model_id: str) -> bool:
        return any(fnmatchcase(model_id, glob) for glob in self.models)


@dataclass(frozen=True)
class PriceTable:
    """The shipped table: when it was true, where it came from, and the rates."""

    effective: str
    source: str
    models: dict[str, Rates]
    cache_effective: str = ""
    lanes: dict[str, Lane] | None = None


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0


def _price(key: str, value: Any, where: str, nested: bool = True) -> Rates:
    lanes: dict[str, Rates] = {}
    if isinstance(value, dict) and {"input", "output"} <= value.keys():
        pair = (value["input"], value["output"])
        extra = {name: value[name] for name in CACHE_FIELDS if name in value}
        allowed = {"input", "output", *CACHE_FIELDS, *(("flex", "batch") if nested else ())}
        unknown = set(value) - allowed
        if unknown:
            raise ModelError(f"{where} {key!r}: unknown field(s) {', '.join(sorted(unknown))}; "
                             f"use {', '.join(sorted(allowed))}")
        lanes = {lane: _price(f"{key}.{lane}", value[lane], where, nested=False)
                 for lane in ("flex", "batch") if lane in value}
    elif isinstance(value, (list, tuple)) and len(value) == 2:
        pair, extra = (value[0], value[1]), {}
    else:
        raise ModelError(f"{where} {key!r}: give {{ input = <$/Mtok>, output = <$/Mtok> }} or [input, output]")
    if not all(_number(v) for v in (*pair, *extra.values())):
        raise ModelError(f"{where} {key!r}: prices must be non-negative numbers, got {value!r}")
    return Rates(float(pair[0]), float(pair[1]), **{k: float(v) for k, v in extra.items()}, **lanes)


def _date(value: Any) -> str:
    return value.isoformat() if isinstance(value, dt.date) else str(value or "")


@lru_cache(maxsize=1)
def shipped_table() -> PriceTable:
    """The table in `prices.toml`."""
    data = tomllib.loads(resources.files("pytest_skilltransfer").joinpath("prices.toml").read_text("utf-8"))
    models = {key: _price(key, value, "prices.toml") for key, value in data.get("models", {}).items()}
    lanes = {name: Lane(name, float(table["factor"]), tuple(table.get("models", ())), _date(table.get("effective")),
                        " ".join(str(table.get("source", "")).split()))
             for name, table in data.get("lanes", {}).items()}
    return PriceTable(effective=_date(data.get("effective")), source=" ".join(str(data.get("source", "")).split()),
                      models=models, cache_effective=_date(data.get("cache_effective")), lanes=lanes)


_lock = threading.Lock()


@dataclass
class RunPrices:
    """What a run sets about prices: the project's overrides, the models declared free, each model's lane."""

    overrides: dict[str, Rates] = field(default_factory=dict)
    free: set[str] = field(default_factory=set)
    lanes: dict[str, str] = field(default_factory=dict)  # model id -> its calls' lane in this run (default standard)


_run: Scoped[RunPrices] = Scoped("prices", RunPrices)  # the run's (`guards.run_scope`)


def configure_prices(table: dict[str, Any]) -> None:
    """Apply `[tool.skilltransfer.prices]` (model id or glob -> price); replaces earlier overrides."""
    parsed = {key: _price(key, value, "[tool.skilltransfer.prices]") for key, value in (table or {}).items()}
    with _lock:
        _run().overrides = parsed


def mark_free(model_id: str) -> None:
    """Record that `model_id` costs nothing (declared `free = true`, or a built-in local model) unless
    priced explicitly."""
    with _lock:
        _run().free.add(model_id)


def mark_lane(model_id: str, lane: str) -> None:
    """Record that `model_id`'s calls go through `lane` in this run (its spending is priced there)."""
    if lane not in LANES:
        raise ModelError(f"unknown lane {lane!r}; use one of {', '.join(LANES)}")
    with _lock:
        if lane == "standard":
            _run().lanes.pop(model_id, None)
        else:
            _run().lanes[model_id] = lane


def lane_of(model_id: str) -> str:
    """The lane `model_id`'s calls go through in this run."""
    with _lock:
        return _run().lanes.get(model_id, "standard")


def price_fix(model_id: str, lane: str) -> str:
    """What to write in pyproject.toml so `model_id` has a price in `lane`."""
    standard = rates_of(model_id, "standard")
    if lane == "standard" or standard is None:
        rates = "input = <$/Mtok>, output = <$/Mtok>"
        extra = "" if lane == "standard" else f", {lane} = {{ input = <$/Mtok>, output = <$/Mtok> }}"
        return f'[tool.skilltransfer.prices] "{model_id}" = {{ {rates}{extra} }}'
    return (f"give its entry {lane} rates (the [lanes.{lane}] table of prices.toml does not name it): "
            f'[tool.skilltransfer.prices] "{model_id}" = {{ input = {standard.input:g}, output = {standard.output:g}, '
            f"{lane} = {{ input = <$/Mtok>, output = <$/Mtok> }} }}")


def _lookup(table: dict[str, Rates], model_id: str) -> Rates | None:
    if model_id in table:
        return table[model_id]
    globs = sorted((k for k in table if any(c in k for c in "*?[") and fnmatchcase(model_id, k)), key=len)
    return table[globs[-1]] if globs else None


def rates_of(model_id: str, lane: str = "standard") -> Rates | None:
    """Every rate of a model in a lane, or None if unknown (or the lane is not offered for it)."""
    with _lock:
        run = _run()
        overrides, free = dict(run.overrides), model_id in run.free
    found = _lookup(overrides, model_id) or _lookup(shipped_table().models, model_id)
    if found is None and free:
        found = Rates(0.0, 0.0)
    if found is None or lane == "standard":
        return found
    own = getattr(found, lane, None) if lane in ("flex", "batch") else None
    if own is not None:
        return own
    table = (shipped_table().lanes or {}).get(lane)
    if table is None or not (table.covers(model_id) or (found.input == found.output == 0.0)):
        return None
    return found.scaled(table.factor)


def lane_table(lane: str) -> Lane | None:
    """The dated table of a lane (None for `standard`)."""
    return (shipped_table().lanes or {}).get(lane)


def price_of(model_id: str) -> Price | None:
    """(input, output) dollars per million tokens, or None if unknown."""
    rates = rates_of(model_id)
    return None if rates is None else rates.pair


def worst_case_usd(model_id: str, input_tokens: int, output_tokens: int, lane: str | None = None) -> float | None:
    """The most a call can cost: every prompt token at the highest prompt rate (a cache write may cost
    more than input) and `output_tokens` at the output rate; None when the model has no price."""
    rates = rates_of(model_id, lane or lane_of(model_id))
    if rates is None:
        return None
    return (input_tokens * rates.worst_input + output_tokens * rates.output) / 1_000_000


def cost_usd(model_id: str, usage: Usage, lane: str | None = None) -> float | None:
    """Dollars for `usage` on `model_id` (cache tokens at their rates) in `lane` (default: the lane the
    model runs in, see `mark_lane`), or None when the model has no price there. The parts of `usage`
    paid in another lane (`Usage.lanes`) are priced in theirs."""
    default = lane or lane_of(model_id)
    if usage.lanes:
        prices = [_lane_cost_usd(model_id, part, part_lane) for part_lane, part in usage.parts(default)]
        return None if any(p is None for p in prices) else sum(prices)  # type: ignore[arg-type]
    return _lane_cost_usd(model_id, usage, default)


def _lane_cost_usd(model_id: str, usage: Usage, lane: str) -> float | None:
    if lane == ANOTHER_RUN:
        return 0.0  # another process paid for it (and its own bill says so)
    rates = rates_of(model_id, lane)
    if rates is None:
        return None
    write = rates.input if rates.cache_write is None else rates.cache_write
    read = rates.input if rates.cache_read is None else rates.cache_read
    uncached = max(0, usage.input_tokens - usage.cache_write_tokens - usage.cache_read_tokens)
    return (uncached * rates.input + usage.cache_write_tokens * write + usage.cache_read_tokens * read
            + usage.output_tokens * rates.output) / 1_000_000


def cache_saving_usd(model_id: str, usage: Usage, lane: str | None = None) -> float | None:
    """What prompt caching saved against paying the input rate for every prompt token (negative when
    writes cost more than the reads saved), or None when the model has no price."""
    actual = cost_usd(model_id, usage, lane)
    if actual is None:
        return None
    uncached = Usage(usage.input_tokens, usage.output_tokens, lanes=tuple(
        (name, Usage(part.input_tokens, part.output_tokens)) for name, part in usage.lanes))
    return cost_usd(model_id, uncached, lane) - actual  # type: ignore[operator]
