"""Run-level statistics: a pure function of the per-item records of a JSON report.

Because it reads only what every result carries (`gain.mean`, `gain.n`, `gain.p_value`, the gate's
verdict), the summary of merged shards equals the summary of one run over the same items.

* Error control across items: Holm's step-down correction of the gains' exact p-values (two-sided)
  controls the family-wise error rate at 5% (the chance that *any* reported transfer or harm is a
  fluke), not merely the false-discovery rate. Outcomes are counted in both directions: transfers,
  hurts, no effect shown. An item counted twice (a hand-written test on
  a matrix item's seed and pair) is one hypothesis and counts once.
* Per pair (source -> target), an aggregate over seeds: the mean of the seeds' gains with an
  exact interval over seeds (the same exact family that bounds a gain over tasks, seeds as the
  units and their gains as fractional moves up and down). The interval refers to the population of seeds like these; below the
  number of seeds that could ever exclude 0 (`seeds_needed`) no interval is given, and the report says so.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from ..pricing.cost_breakdown import breakdown
from .frontier import frontier
from .stats import HURTS, LEVEL, NO_EFFECT, TRANSFERS, gain_interval, holm, mean, mean_gain_interval

CORRECTION = "holm"
ALPHA = round(1 - LEVEL, 6)


def _key(result: dict[str, Any]) -> tuple[str, str, str, str]:
    return result["seed"], result["source"], result["target"], result.get("optimizer") or ""


def unique(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One result per (seed, source, target, optimizer), sorted, the first occurrence kept."""
    seen: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    for result in sorted(results, key=lambda r: (_key(r), r.get("item", ""))):
        seen.setdefault(_key(result), result)
    return list(seen.values())


def _holm_outcome(result: dict[str, Any], p_holm: float) -> str:
    """The item's outcome after Holm: its direction when the adjusted p-value is at most alpha."""
    if p_holm > ALPHA + 1e-12:
        return NO_EFFECT
    return TRANSFERS if result["gain"]["mean"] > 0 else HURTS


@lru_cache(maxsize=None)
def seeds_needed(level: float = LEVEL) -> int:
    """The fewest seeds whose interval over seeds can lie wholly above 0 (every seed at gain +1)."""
    k = 1
    while gain_interval(k, k, 0.0, level)[0] <= 0:
        k += 1
    return k


def over_seeds(gains: list[float], level: float = LEVEL) -> tuple[float, float]:
    """The interval of the mean gain over seeds, seeds as the units, by the gains' own exact family."""
    return mean_gain_interval(gains, level)


def summarize(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Holm-adjusted outcomes per item, the per-pair aggregate over seeds, and the verdict counts."""
    items = unique(results)
    adjusted = holm([r["gain"]["p_value"] for r in items])
    per_item = []
    for result, p_holm in zip(items, adjusted):
        gain = result["gain"]["mean"]
        outcome = _holm_outcome(result, p_holm)
        per_item.append({
            "seed": result["seed"], "source": result["source"], "target": result["target"],
            "gain": gain, "p_value": result["gain"]["p_value"], "p_holm": float(f"{p_holm:.6g}"),
            "significant": outcome != NO_EFFECT, "outcome": outcome,
        })
    pairs = []
    needed = seeds_needed()
    for source, target in sorted({(r["source"], r["target"]) for r in items}):
        gains = [r["gain"]["mean"] for r in items if (r["source"], r["target"]) == (source, target)]
        mine = [i for i in per_item if (i["source"], i["target"]) == (source, target)]
        low, high = over_seeds(gains)
        enough = len(gains) >= needed
        pairs.append({"source": source, "target": target, "seeds": len(gains), "mean_gain": round(mean(gains), 4),
                      "ci_low": round(low, 4) if enough else None, "ci_high": round(high, 4) if enough else None,
                      "seeds_needed": needed, "population": "seeds like these, each scored on its own held-out tasks",
                      "transfers": sum(i["outcome"] == TRANSFERS for i in mine),
                      "hurts": sum(i["outcome"] == HURTS for i in mine),
                      "no_effect": sum(i["outcome"] == NO_EFFECT for i in mine),
                      "significant_gains": sum(i["outcome"] == TRANSFERS for i in mine)})
    verdicts = {"pass": 0, "fail": 0, "inconclusive": 0}
    for result in results:
        verdict = (result.get("gate") or {}).get("verdict")
        if verdict in verdicts:
            verdicts[verdict] += 1
    return {
        "correction": CORRECTION, "alpha": ALPHA, "hypotheses": len(items),
        "mean_gain": round(mean(r["gain"]["mean"] for r in items), 4),
        "outcomes": {o: sum(i["outcome"] == o for i in per_item) for o in (TRANSFERS, HURTS, NO_EFFECT)},
        "significant_gains": sum(i["outcome"] == TRANSFERS for i in per_item),
        "significant_losses": sum(i["outcome"] == HURTS for i in per_item),
        "verdicts": verdicts, "pairs": pairs, "items": per_item,
        "cost": breakdown(items), "frontier": frontier(items),
    }
