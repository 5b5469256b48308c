"""What a run cost, per protocol phase, per role and per price lane, and optimization on the source
against direct optimization on the target (the saving this product exists to show).

A pure function of the per-item records of a JSON report (each result's `cost.phases` rows carry the
model, role, lane and dollars), so merged shards give the same figures as one run. Each result's
rows are its bill (every answer paid once, by the first result that used it: `ledger.bill`), so the
run's figures are their sums; what reused answers would have cost again is summed apart.
A figure is None when a model in it has no price.
"""

from __future__ import annotations

from typing import Any

PHASE_ORDER = ("judge-calibration", "baseline", "optimize-source", "transferred", "optimize-direct", "direct")


def _add(totals: dict[str, float | None], key: str, usd: float | None) -> None:
    current = totals.get(key, 0.0)
    totals[key] = None if current is None or usd is None else current + usd


def _rounded(totals: dict[str, float | None]) -> dict[str, float | None]:
    return {k: None if v is None else round(v, 6) for k, v in totals.items()}


def breakdown(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Dollars paid in all (`total_usd`) and by phase, role and lane, what reused answers would have
    cost again (`reused_usd`, with their `reused_calls`), and the optimization comparison."""
    phases: dict[str, float | None] = {}
    roles: dict[str, float | None] = {}
    lanes: dict[str, float | None] = {}
    totals: dict[str, float | None] = {}
    reused_calls = unreported = 0
    for result in results:
        for phase, rows in (result.get("cost") or {}).get("phases", {}).items():
            for row in rows:
                unreported += row.get("usage_unreported", 0)
                _add(totals, "total", row["usd"])
                _add(totals, "reused", row.get("reused_usd", 0.0))
                reused_calls += row.get("cached", 0)
                _add(phases, phase, row["usd"])
                _add(roles, row["role"], row["usd"])
                for lane, usd in (row.get("lanes") or {row.get("lane", "standard"): row["usd"]}).items():
                    _add(lanes, lane, usd)
    ordered = {p: phases[p] for p in PHASE_ORDER if p in phases} | phases
    source, direct = ordered.get("optimize-source"), ordered.get("optimize-direct")
    ratio = (round(direct / source, 4) if source and direct is not None and "optimize-direct" in ordered
             else None)
    rounded = _rounded({"total": totals.get("total", 0.0), "reused": totals.get("reused", 0.0)})
    return {"total_usd": rounded["total"], "reused_usd": rounded["reused"], "reused_calls": reused_calls,
            **({"usage_unreported_calls": unreported} if unreported else {}),
            "by_phase": _rounded(ordered), "by_role": _rounded(dict(sorted(roles.items()))),
            "by_lane": _rounded(dict(sorted(lanes.items()))),
            "optimization": {"source_usd": None if source is None else round(source, 6),
                             "direct_usd": None if direct is None else round(direct, 6),
                             "direct_over_source": ratio}}


def _money(value: float | None) -> str:
    return "unpriced" if value is None else f"${value:.4f}"


def errored_spend(error: dict[str, Any]) -> str:
    """`, spent $x` for an errored item whose calls were paid (its dollars stay in the run's cost)."""
    usd = (error.get("cost") or {}).get("total_usd")
    calls = (error.get("cost") or {}).get("calls", 0)
    if not calls:
        return ""
    return f", spent {'unpriced' if usd is None else f'${usd:.4f}'} on {calls} call(s)"


def breakdown_lines(costs: dict[str, Any]) -> list[str]:
    """The bill's lines for the terminal, Markdown and `merge` (none when the run cost nothing: free models)."""
    if all(usd == 0.0 for usd in costs["by_phase"].values()):
        return []
    reused = costs.get("reused_calls", 0)
    head = [f"cost: {_money(costs.get('total_usd'))} paid, each answer once"
            + (f"; {reused} use(s) of answers already paid reused at no cost (worth {_money(costs.get('reused_usd'))})"
               if reused else "")
            + (f"; {costs['usage_unreported_calls']} answer(s) came without usage: their tokens are unknown and "
               "counted as 0 here (--max-cost charges each its whole reservation, labelled in its summary)"
               if costs.get("usage_unreported_calls") else "")]
    return head + [f"cost by {what}: " + ", ".join(f"{name} {_money(usd)}" for name, usd in costs[key].items())
                   for what, key in (("phase", "by_phase"), ("role", "by_role"), ("lane", "by_lane"))]
