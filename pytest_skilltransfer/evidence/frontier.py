"""The source frontier: for each target, which source is worth its price.

A pure function of the per-item records of a JSON report (like `summary`), so merged shards give the
same frontier as one run. Per target, for each source that was tried on it:

* the mean gain over seeds (transferred - baseline on the target) with the exact interval over
  seeds that the per-pair aggregate uses (`stats.mean_gain_interval`; seeds are the units);
* the efficiency against direct optimization: mean gain / mean direct headroom over the same seeds
  (None without a direct run, or when the headroom is not above 0);
* the optimization dollars (the source's optimization of every seed) and the gain per dollar;
* whether the source is on the frontier: no other source of the target is both at most as costly and
  at least as good, and strictly one of the two (a source without a price is never compared);
* a verdict on the target: `hurts` when the whole interval is below 0, `helps` when above, else
  `inconclusive`.

Direct optimization on the target is listed beside the sources as the reference (its mean headroom
and its optimization dollars); it is not a source and is never on the frontier.
"""

from __future__ import annotations

from typing import Any

from .stats import mean, mean_gain_interval


def _usd_sum(values: list[float | None]) -> float | None:
    return None if any(v is None for v in values) else round(sum(values), 6)  # type: ignore[arg-type]


def _per_dollar(gain: float, usd: float | None, seeds: int) -> float | None:
    if usd is None or usd <= 0 or seeds == 0:
        return None
    return round(gain / (usd / seeds), 4)


def _verdict(low: float, high: float) -> str:
    return "hurts" if high < 0 else "helps" if low > 0 else "inconclusive"


def _source_row(source: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    gains = [r["gain"]["mean"] for r in rows]
    low, high = mean_gain_interval(gains)
    headrooms = [r["headroom"]["mean"] for r in rows if r.get("headroom")]
    mean_gain = mean(gains)
    efficiency = (round(mean_gain / mean(headrooms), 4)
                  if len(headrooms) == len(rows) and headrooms and mean(headrooms) > 0 else None)
    usd = _usd_sum([(r.get("cost") or {}).get("optimize_source_usd") for r in rows])
    return {"source": source, "seeds": len(rows), "mean_gain": round(mean_gain, 4), "ci_low": round(low, 4),
            "ci_high": round(high, 4), "efficiency": efficiency, "optimize_usd": usd,
            "gain_per_usd": _per_dollar(mean_gain, usd, len(rows)), "verdict": _verdict(low, high)}


def _dominated(row: dict[str, Any], others: list[dict[str, Any]]) -> bool:
    usd, gain = row["optimize_usd"], row["mean_gain"]
    for other in others:
        if other is row or other["optimize_usd"] is None:
            continue
        if other["optimize_usd"] <= usd and other["mean_gain"] >= gain and (
                other["optimize_usd"] < usd or other["mean_gain"] > gain):
            return True
    return False


def _direct(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The direct reference over the target's seeds (one item per seed carries it)."""
    per_seed: dict[str, dict[str, Any]] = {}
    for r in rows:
        if r.get("headroom"):
            per_seed.setdefault(r["seed"], r)
    if not per_seed:
        return None
    picked = list(per_seed.values())
    headrooms = [r["headroom"]["mean"] for r in picked]
    low, high = mean_gain_interval(headrooms)
    usd = _usd_sum([(r.get("cost") or {}).get("optimize_direct_usd") for r in picked])
    return {"seeds": len(picked), "mean_gain": round(mean(headrooms), 4), "ci_low": round(low, 4),
            "ci_high": round(high, 4), "optimize_usd": usd,
            "gain_per_usd": _per_dollar(mean(headrooms), usd, len(picked))}


def frontier(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per target (sorted): every source's row (see module docstring) and the direct reference.
    `items`: one result per (seed, source, target), as `summary.unique` gives them."""
    targets = []
    for target in sorted({r["target"] for r in items}):
        on_target = [r for r in items if r["target"] == target]
        rows = [_source_row(source, [r for r in on_target if r["source"] == source])
                for source in sorted({r["source"] for r in on_target})]
        for row in rows:
            row["frontier"] = row["optimize_usd"] is not None and not _dominated(row, rows)
        targets.append({"target": target, "sources": rows, "direct": _direct(on_target)})
    return targets


def _money(value: float | None) -> str:
    return "unpriced" if value is None else f"${value:.4f}"


def _per(value: float | None, usd: float | None) -> str:
    if usd == 0:
        return "free"
    return "-" if value is None else f"{value:+.2f}/$"


def frontier_rows(block: dict[str, Any]) -> list[tuple[str, ...]]:
    """One target's frontier as rows (a header row first): each source, cheapest first, then direct."""
    rows = [("source", "seeds", "mean gain [95% CI]", "efficiency", "optimization", "gain per $", "")]
    for row in sorted(block["sources"], key=lambda r: (r["optimize_usd"] is None, r["optimize_usd"] or 0)):
        note = "on the frontier" if row["frontier"] else ""
        if row["verdict"] == "hurts":
            note = (note + "; " if note else "") + "hurts the target"
        eff = "-" if row["efficiency"] is None else f"{row['efficiency']:.2f}"
        rows.append((row["source"], str(row["seeds"]),
                     f"{row['mean_gain']:+.2f} [{row['ci_low']:+.2f}, {row['ci_high']:+.2f}]", eff,
                     _money(row["optimize_usd"]), _per(row["gain_per_usd"], row["optimize_usd"]), note))
    direct = block["direct"]
    if direct is not None:
        rows.append((f"direct on {block['target']}", str(direct["seeds"]),
                     f"{direct['mean_gain']:+.2f} [{direct['ci_low']:+.2f}, {direct['ci_high']:+.2f}]", "1.00",
                     _money(direct["optimize_usd"]), _per(direct["gain_per_usd"], direct["optimize_usd"]),
                     "reference: optimized on the target"))
    return rows


FRONTIER_TITLE = ("source frontier for target {target} (gain over seeds with its 95% interval; "
                  "frontier: no other source both cheaper and better)")


def frontier_lines(targets: list[dict[str, Any]]) -> list[str]:
    """For the terminal, Markdown and `merge`: one block per target tried with several sources."""
    lines: list[str] = []
    for block in targets:
        if len(block["sources"]) < 2:
            continue
        rows = frontier_rows(block)
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        lines.append(FRONTIER_TITLE.format(target=block["target"]) + ":")
        lines += ["  " + "  ".join(c.ljust(widths[i]) for i, c in enumerate(r)).rstrip() for r in rows]
    return lines
