"""Dollars of planned units: at most, expected, per lane, and where the money goes."""

from __future__ import annotations

from ..pricing.prices import LANES
from .plan import Share, Unit, priced_lane


def _sum(values: list[float | None]) -> float | None:
    return None if any(v is None for v in values) else sum(values)  # type: ignore[arg-type]


def counted(unit: Unit, kind: str) -> bool:
    """Whether a unit counts in figures of `kind`: every unit in the bound and the expected figures (an
    on-demand unit weighted by its chance to run); `on-demand` counts only the on-demand units."""
    return unit.on_demand if kind == "on-demand" else True


def chance(unit: Unit, kind: str) -> float:
    """The weight of a unit's dollars in figures of `kind`: whole in the bound and in `on-demand` (should every
    on-demand unit run), its chance to run in the expected figures."""
    return 1.0 if kind in ("bound", "on-demand") else unit.chance


def unit_share_usd(unit: Unit, share: Share, kind: str, lane: str | None = None) -> float | None:
    """One share of `unit` in figures of `kind` (see `units_usd`), weighted by the unit's chance to run."""
    if kind == "expected-no-cache":
        usd = share.expected_usd(lane, cache_reads=False)
    else:
        usd = share_usd(share, "expected" if kind == "on-demand" else kind, lane)
    return None if usd is None else usd * chance(unit, kind)


def units_usd(units: list[Unit], kind: str = "bound", lane: str | None = None) -> float | None:
    """Dollars of several units: `bound`, `expected` (with cache reads), `expected-no-cache`, or `on-demand`
    (the expected dollars of the on-demand units, should every one of them run); the expected figures weight
    an on-demand unit by its chance to run."""
    return _sum([unit_share_usd(unit, share, kind, lane)
                 for unit in units if counted(unit, kind) for share in unit.shares])


def lane_prices(units: list[Unit]) -> dict[str, dict[str, float | None]]:
    """Per lane (standard, flex, batch): dollars at most, expected, and expected without cache reads.
    Flex prices the models it is offered for at flex rates and the others at standard; batch is None
    when some model of the units is not offered there, and expects no cache reads: the requests of one
    batch do not read each other's prompt-cache writes."""
    def kind_in(lane: str, kind: str) -> str:
        return "expected-no-cache" if lane == "batch" and kind == "expected" else kind

    return {lane: {kind: units_usd(units, kind_in(lane, kind), lane) for kind in ("bound", "expected", "expected-no-cache")}
            for lane in LANES}


def share_usd(share: Share, kind: str, lane: str | None = None) -> float | None:
    """One share's dollars in `lane` (None: the lane its model runs in): `bound` or `expected`; the batch
    lane expects no prompt-cache reads (the requests of one batch do not read each other's writes)."""
    if kind == "bound":
        return share.bound_usd(lane)
    return share.expected_usd(lane, cache_reads=priced_lane(share.model_id, lane) != "batch")


def breakdown(items: list[tuple[str, list[Unit]]], lane: str | None = None) -> dict[str, dict[str, dict[str, float | None]]]:
    """Where the money goes: dollars at most and expected by pair, phase, role and model, each unit once
    (a unit several items share is put on the first item's pair, as the run's bill charges it).
    `items`: (pair label, its units) in run order; `lane` None prices each model in its own lane."""
    seen: set[tuple[str, ...]] = set()
    tables: dict[str, dict[str, dict[str, float | None]]] = {"by_pair": {}, "by_phase": {}, "by_role": {},
                                                             "by_model": {}}
    for pair, units in items:
        for unit in units:
            if unit.key in seen:
                continue
            seen.add(unit.key)
            for share in unit.shares:
                model = f"{share.model_id} ({priced_lane(share.model_id, lane)})"
                for table, name in (("by_pair", pair), ("by_phase", unit.phase), ("by_role", share.role),
                                    ("by_model", model)):
                    row = tables[table].setdefault(name, {"bound_usd": 0.0, "expected_usd": 0.0, "calls": 0})
                    row["calls"] = (row["calls"] or 0) + share.calls
                    for kind in ("bound", "expected"):
                        usd, key = unit_share_usd(unit, share, kind, lane), f"{kind}_usd"
                        row[key] = None if usd is None or row[key] is None else row[key] + usd
    return {name: {k: {f: (round(v, 6) if isinstance(v, float) else v) for f, v in row.items()}
                   for k, row in (sorted(table.items()) if name != "by_phase" else table.items())}
            for name, table in tables.items()}


def configured_prices(units: list[Unit]) -> dict[str, float | None]:
    """Dollars at most and expected with each model in the lane it runs in (its own `lane`, `--transfer-batch`,
    a flex service tier), as the run will pay them."""
    return {kind: units_usd(units, kind) for kind in ("bound", "expected")}


VERDICT_PHASES = ("baseline", "transferred")


def verdict_floor(units: list[Unit], lane: str | None = None) -> float | None:
    """The expected dollars of the verdict itself under the fixed design: the baseline and the transferred skill
    on every held-out task (the expected figures without the design's expected share of the tasks, `Unit.scored`)."""
    values: list[float | None] = []
    for unit in units:
        if unit.phase in VERDICT_PHASES:
            usd = units_usd([unit], "expected", lane)
            values.append(None if usd is None else usd / unit.scored)
    return _sum(values)


def held_out_scored(units: list[Unit]) -> float | None:
    """The expected share of the held-out tasks the design scores, weighted by the evaluations' expected dollars
    under the fixed design (None without a held-out evaluation or a price)."""
    held = [u for u in units if u.phase in (*VERDICT_PHASES, "direct")]
    full = _sum([None if (usd := units_usd([u], "expected")) is None else usd / u.scored for u in held])
    scored = units_usd(held, "expected")
    return None if not full or scored is None else scored / full
