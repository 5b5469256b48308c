"""The source frontier: for each target, which source is worth its price.

A pure function of the items' records (`item_record.ItemRecord`, like `summary`), so merged shards give the
same frontier as one run. Per target, for each source that was tried on it:

* the mean gain over its seeds (transferred - baseline on the target) with the exact interval over
  seeds that the per-pair aggregate uses (`stats.mean_gain_interval`; seeds are the units), given only
  from the summary's minimum of seeds (`family.seeds_needed`) on, as the summary does;
* the efficiency against direct optimization: mean gain / mean direct headroom over the same seeds
  (None without a direct run, or when the headroom is not above 0);
* the optimization dollars per seed (the mean of its seeds' optimization costs: sources tried on
  different numbers of seeds compare at the same scale) and the gain per dollar (mean gain / dollars
  per seed);
* against every other source of the target, a paired comparison on the seeds both were tried on: the
  mean per-seed difference of transferred scores (both share the seed's baseline on the target, so it is
  the gain difference) with its exact interval over those seeds, by the same family (none below the
  minimum of seeds), and each one's dollars per seed on them;
* whether the source is on the frontier: it is dominated, and off the frontier, only when another
  source is at least as good with confidence (the paired difference's whole interval at or above 0,
  over at least the minimum of shared seeds) and no dearer per seed on those seeds, and strictly one of
  the two (cheaper, or the interval wholly above 0). Lacking that evidence a source stays on the
  frontier, and the comparison that could not decide says why. A source without a price is never on it;
* a verdict on the target: `hurts` when the whole interval is below 0, `helps` when above, else
  `inconclusive` (and `too few seeds` below the minimum).

Direct optimization on the target is listed beside the sources as the reference (its mean headroom
and its optimization dollars per seed); it is not a source and is never on the frontier. An item whose
source is its target (`--pair m:m`) is that reference too, never a source row: it stands for the direct
run where no other item of the target ran one.

Sources are ranked per target: on the frontier first, then by gain per dollar, then by mean gain (a
source without a price last); `rank` is the position, 1 the best.
"""

from __future__ import annotations

from typing import Any

from .family import seeds_needed
from .item_record import ItemRecord
from .score_intervals import EPSILON
from .stats import mean, mean_gain_interval

FEW = "too few seeds"


def _usd_per_seed(rows: list[ItemRecord], key: str = "optimize_source_usd") -> float | None:
    """The mean optimization dollars over the rows (one per seed); None when one is unpriced."""
    values = [getattr(r.cost, key) for r in rows]
    if not values or any(v is None for v in values):
        return None
    return round(mean(values), 6)


def _per_dollar(gain: float, usd_per_seed: float | None) -> float | None:
    if usd_per_seed is None or usd_per_seed <= 0:
        return None
    return round(gain / usd_per_seed, 4)


def _interval(gains: list[float]) -> tuple[float | None, float | None]:
    """The exact interval of the mean over seeds, or (None, None) below the minimum of seeds."""
    if len(gains) < seeds_needed():
        return None, None
    low, high = mean_gain_interval(gains)
    return round(low, 4), round(high, 4)


def _verdict(low: float | None, high: float | None) -> str:
    if low is None or high is None:
        return FEW
    return "hurts" if high < 0 else "helps" if low > 0 else "inconclusive"


def _by_seed(rows: list[ItemRecord]) -> dict[str, ItemRecord]:
    return {r.seed: r for r in rows}


def _source_row(source: str, rows: list[ItemRecord]) -> dict[str, Any]:
    gains = [r.gain.mean for r in rows]
    low, high = _interval(gains)
    headrooms = [r.headroom.mean for r in rows if r.headroom]
    mean_gain = mean(gains)
    efficiency = (round(mean_gain / mean(headrooms), 4)
                  if len(headrooms) == len(rows) and headrooms and mean(headrooms) > 0 else None)
    usd = _usd_per_seed(rows)
    return {"source": source, "seeds": len(rows), "mean_gain": round(mean_gain, 4), "ci_low": low,
            "ci_high": high, "efficiency": efficiency, "usd_per_seed": usd,
            "gain_per_usd": _per_dollar(mean_gain, usd), "verdict": _verdict(low, high)}


def compare(mine: list[ItemRecord], theirs: list[ItemRecord]) -> dict[str, Any]:
    """Another source (`theirs`) against this one (`mine`) on the seeds both were tried on, paired by seed:
    the mean of their transferred score minus mine (on one seed and target both share the baseline, so this
    is their gain minus mine, a value in [-1, 1]) with its exact interval over those seeds, and each one's
    dollars per seed on those seeds."""
    a, b = _by_seed(mine), _by_seed(theirs)
    shared = sorted(set(a) & set(b))
    differences = [b[s].transferred - a[s].transferred for s in shared]
    low, high = _interval(differences)
    return {"shared_seeds": len(shared), "gain_difference": round(mean(differences), 4) if shared else None,
            "ci_low": low, "ci_high": high,
            "usd_per_seed": _usd_per_seed([a[s] for s in shared]) if shared else None,
            "their_usd_per_seed": _usd_per_seed([b[s] for s in shared]) if shared else None}


def dominates(comparison: dict[str, Any]) -> bool:
    """Whether the other source of `comparison` (`compare`) dominates this one: at least as good with
    confidence, no dearer per seed on the shared seeds, and strictly one of the two."""
    low, mine, theirs = comparison["ci_low"], comparison["usd_per_seed"], comparison["their_usd_per_seed"]
    if low is None or mine is None or theirs is None or low < -EPSILON or theirs > mine + EPSILON:
        return False
    return theirs < mine - EPSILON or low > EPSILON


def _standing(source: str, on_target: list[ItemRecord], sources: list[str]) -> tuple[list[str], dict[str, Any]]:
    """The sources that dominate `source`, and its paired comparison against every other source."""
    mine = [r for r in on_target if r.source == source]
    comparisons = {other: compare(mine, [r for r in on_target if r.source == other])
                   for other in sources if other != source}
    return [other for other, c in comparisons.items() if dominates(c)], comparisons


def _direct(rows: list[ItemRecord], own: list[ItemRecord] = ()) -> dict[str, Any] | None:  # type: ignore[assignment]
    """The direct reference over the target's seeds (one item per seed carries it); without one, the items
    whose source is the target (`own`: optimized and scored on the target, which is what direct means)."""
    per_seed: dict[str, ItemRecord] = {}
    for r in rows:
        if r.headroom:
            per_seed.setdefault(r.seed, r)
    if not per_seed and own:
        picked = list(_by_seed(list(own)).values())
        gains = [r.gain.mean for r in picked]
        low, high = _interval(gains)
        usd = _usd_per_seed(picked)
        return {"seeds": len(picked), "mean_gain": round(mean(gains), 4), "ci_low": low, "ci_high": high,
                "usd_per_seed": usd, "gain_per_usd": _per_dollar(mean(gains), usd)}
    if not per_seed:
        return None
    picked = list(per_seed.values())
    headrooms = [r.headroom.mean for r in picked if r.headroom]
    low, high = _interval(headrooms)
    usd = _usd_per_seed(picked, "optimize_direct_usd")
    return {"seeds": len(picked), "mean_gain": round(mean(headrooms), 4), "ci_low": low, "ci_high": high,
            "usd_per_seed": usd, "gain_per_usd": _per_dollar(mean(headrooms), usd)}


def frontier(items: list[ItemRecord]) -> list[dict[str, Any]]:
    """Per target (sorted): every source's row (see module docstring) and the direct reference.
    `items`: one result per (seed, source, target), as `summary.unique` gives them."""
    targets = []
    for target in sorted({r.target for r in items}):
        own = [r for r in items if r.target == target and r.source == target]
        on_target = [r for r in items if r.target == target and r.source != target]
        sources = sorted({r.source for r in on_target})
        rows = [_source_row(source, [r for r in on_target if r.source == source]) for source in sources]
        for row in rows:
            row["dominated_by"], row["against"] = _standing(row["source"], on_target, sources)
            row["frontier"] = row["usd_per_seed"] is not None and not row["dominated_by"]
        rows.sort(key=_rank_key)
        for rank, row in enumerate(rows, 1):
            row["rank"] = rank
        targets.append({"target": target, "sources": rows, "direct": _direct(on_target, own),
                        "seeds_needed": seeds_needed()})
    return targets


def _rank_key(row: dict[str, Any]) -> tuple[Any, ...]:
    """On the frontier first, then the most gain per dollar (free counts as the most), then the most gain."""
    per_dollar = float("inf") if row["usd_per_seed"] == 0 else row["gain_per_usd"]
    return (not row["frontier"], per_dollar is None, -(per_dollar or 0.0), -row["mean_gain"], row["source"])


def _money(value: float | None) -> str:
    return "unpriced" if value is None else f"${value:.4f}"


def _per(value: float | None, usd: float | None) -> str:
    if usd == 0:
        return "free"
    return "-" if value is None else f"{value:+.2f}/$"


def _gain_cell(row: dict[str, Any]) -> str:
    if row["ci_low"] is None:
        return f"{row['mean_gain']:+.2f} (too few seeds)"
    return f"{row['mean_gain']:+.2f} [{row['ci_low']:+.2f}, {row['ci_high']:+.2f}]"


def _note(row: dict[str, Any]) -> str:
    notes = []
    if row.get("frontier"):
        notes.append("on the frontier")
    if row.get("dominated_by"):
        notes.append("dominated by " + ", ".join(row["dominated_by"]))
    if row["verdict"] == "hurts":
        notes.append("hurts the target")
    return "; ".join(notes)


def _comparison_lines(block: dict[str, Any]) -> list[str]:
    """The paired comparisons, each pair of sources once: the difference and its interval, or why none."""
    lines, seen = [], set()
    for row in sorted(block["sources"], key=lambda r: r["source"]):
        for other, c in sorted(row["against"].items()):
            if (other, row["source"]) in seen:
                continue
            seen.add((row["source"], other))
            if c["ci_low"] is None:
                lines.append(f"  {other} - {row['source']}: {c['shared_seeds']} shared seed(s), too few to compare "
                             f"({block['seeds_needed']} needed); neither is dominated on this evidence")
                continue
            mine, theirs = _money(c["usd_per_seed"]), _money(c["their_usd_per_seed"])
            lines.append(f"  {other} - {row['source']}: {c['gain_difference']:+.2f} [{c['ci_low']:+.2f}, "
                         f"{c['ci_high']:+.2f}] over {c['shared_seeds']} shared seeds, {theirs} vs {mine} per seed")
    return lines


FRONTIER_TITLE = ("source frontier for target {target} (gain over seeds with its 95% interval, from {needed} seeds; "
                  "dominated: another source at least as good with confidence on the seeds both ran, paired, and no "
                  "dearer per seed)")


def frontier_title(block: dict[str, Any]) -> str:
    """The heading of one target's frontier."""
    return FRONTIER_TITLE.format(target=block["target"], needed=block.get("seeds_needed", seeds_needed()))


def frontier_rows(block: dict[str, Any]) -> list[tuple[str, ...]]:
    """One target's frontier as rows (a header row first): each source in rank order, then direct."""
    rows = [("#", "source", "seeds", "mean gain [95% CI]", "efficiency", "$ per seed", "gain per $", "")]
    for row in sorted(block["sources"], key=lambda r: r.get("rank", 0)):
        eff = "-" if row["efficiency"] is None else f"{row['efficiency']:.2f}"
        rows.append((str(row.get("rank", "")), row["source"], str(row["seeds"]), _gain_cell(row), eff,
                     _money(row["usd_per_seed"]), _per(row["gain_per_usd"], row["usd_per_seed"]), _note(row)))
    direct = block["direct"]
    if direct is not None:
        rows.append(("", f"direct on {block['target']}", str(direct["seeds"]), _gain_cell(direct), "1.00",
                     _money(direct["usd_per_seed"]), _per(direct["gain_per_usd"], direct["usd_per_seed"]),
                     "reference: optimized on the target"))
    return rows


def comparison_lines(block: dict[str, Any]) -> list[str]:
    """The paired comparisons of one target's sources, under their heading."""
    return ["paired on shared seeds (other - this: mean gain difference [95% CI]):", *_comparison_lines(block)]


def frontier_lines(targets: list[dict[str, Any]]) -> list[str]:
    """For the terminal, Markdown and `merge`: one block per target tried with several sources."""
    lines: list[str] = []
    for block in targets:
        if len(block["sources"]) < 2:
            continue
        rows = frontier_rows(block)
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        lines.append(frontier_title(block) + ":")
        lines += ["  " + "  ".join(c.ljust(widths[i]) for i, c in enumerate(r)).rstrip() for r in rows]
        lines += comparison_lines(block)
    return lines
