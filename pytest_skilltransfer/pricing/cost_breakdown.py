"""What a run cost, per protocol phase, per role and per price lane, and optimization on the source
against direct optimization on the target (the saving this product exists to show).

A pure function of the per-item records of a JSON report (each result's `cost.phases` rows carry the
model, role, lane and dollars), so merged shards give the same figures as one run. Phases that items
share (a target's baseline, a source's optimization, a seed's judge calibration) are counted once.
A figure is None when a model in it has no price.
"""

from __future__ import annotations

from typing import Any

PHASE_ORDER = ("judge-calibration", "baseline", "optimize-source", "transferred", "optimize-direct", "direct")


def _phase_key(result: dict[str, Any], phase: str) -> tuple[str, ...]:
    seed, source, target, optimizer = result["seed"], result["source"], result["target"], result.get("optimizer") or ""
    own_optimizer = optimizer if optimizer != source else ""  # an explicit --optimizer also optimizes direct runs
    return {
        "judge-calibration": (seed, phase),
        "baseline": (seed, phase, target),
        "optimize-source": (seed, phase, source, optimizer),
        "transferred": (seed, phase, source, optimizer, target),
        "optimize-direct": (seed, phase, target, own_optimizer),
        "direct": (seed, phase, target, own_optimizer),
    }.get(phase, (seed, phase, source, target))


def _add(totals: dict[str, float | None], key: str, usd: float | None) -> None:
    current = totals.get(key, 0.0)
    totals[key] = None if current is None or usd is None else current + usd


def _rounded(totals: dict[str, float | None]) -> dict[str, float | None]:
    return {k: None if v is None else round(v, 6) for k, v in totals.items()}


def breakdown(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Dollars by phase, role and lane (shared phases once), and the optimization comparison."""
    seen: set[tuple[str, ...]] = set()
    phases: dict[str, float | None] = {}
    roles: dict[str, float | None] = {}
    lanes: dict[str, float | None] = {}
    for result in results:
        for phase, rows in (result.get("cost") or {}).get("phases", {}).items():
            key = _phase_key(result, phase)
            if key in seen:
                continue
            seen.add(key)
            for row in rows:
                _add(phases, phase, row["usd"])
                _add(roles, row["role"], row["usd"])
                _add(lanes, row.get("lane", "standard"), row["usd"])
    ordered = {p: phases[p] for p in PHASE_ORDER if p in phases} | phases
    source, direct = ordered.get("optimize-source"), ordered.get("optimize-direct")
    ratio = (round(direct / source, 4) if source and direct is not None and "optimize-direct" in ordered
             else None)
    return {"by_phase": _rounded(ordered), "by_role": _rounded(dict(sorted(roles.items()))),
            "by_lane": _rounded(dict(sorted(lanes.items()))),
            "optimization": {"source_usd": None if source is None else round(source, 6),
                             "direct_usd": None if direct is None else round(direct, 6),
                             "direct_over_source": ratio}}


def _money(value: float | None) -> str:
    return "unpriced" if value is None else f"${value:.4f}"


def breakdown_lines(costs: dict[str, Any]) -> list[str]:
    """Three lines for the terminal, Markdown and `merge` (none when the run cost nothing: free models)."""
    if all(usd == 0.0 for usd in costs["by_phase"].values()):
        return []
    return [f"cost by {what} (shared phases once): "
            + ", ".join(f"{name} {_money(usd)}" for name, usd in costs[key].items())
            for what, key in (("phase", "by_phase"), ("role", "by_role"), ("lane", "by_lane"))]
