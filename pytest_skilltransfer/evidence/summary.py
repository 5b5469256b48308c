"""Run-level statistics: a pure function of the per-item records of a JSON report.

Because it reads only what every result carries (`gain.mean`, `gain.n`, `gain.p_value`, the gate's
verdict), the summary of merged shards equals the summary of one run over the same items.

* Error control across items: Holm's step-down correction of the gains' exact p-values (two-sided)
  controls the family-wise error rate at 5% (the chance that *any* reported transfer or harm is a
  fluke), not merely the false-discovery rate. Outcomes are counted in both directions: transfers,
  hurts, no effect shown, and apart from them the items that no outcome could make a finding after Holm
  in this family (`decidability`: too few held-out units for their smallest p-value to pass the
  step-down bars; `undecidable`). An item counted twice (a hand-written test on
  a matrix item's seed and pair) is one hypothesis and counts once.
* Per pair (source -> target), an aggregate over seeds: the mean of the seeds' gains with an
  exact interval over seeds (the same exact family that bounds a gain over tasks, seeds as the
  units and their gains as fractional moves up and down). The interval refers to the population of seeds like these; below the
  number of seeds that could ever exclude 0 (`seeds_needed`) no interval is given, and the report says so.
"""

from __future__ import annotations

from typing import Any

from ..pricing.cost_breakdown import breakdown
from .decidability import unreachable
from .family import seeds_needed  # noqa: F401 (re-exported: the summary's minimum of seeds)
from .frontier import frontier
from .stats import HURTS, LEVEL, NO_EFFECT, TRANSFERS, holm, mean, mean_gain_interval, restart_count_of

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


def spent_by_errors(errors: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The errored items that spent something, as records `breakdown` adds to the results' bill."""
    return [{"cost": e["cost"]} for e in errors if (e.get("cost") or {}).get("phases")]


def _holm_outcome(result: dict[str, Any], p_holm: float) -> str:
    """The item's outcome after Holm: its direction when the adjusted p-value is at most alpha."""
    if p_holm > ALPHA + 1e-12:
        return NO_EFFECT
    return TRANSFERS if result["gain"]["mean"] > 0 else HURTS


def over_seeds(gains: list[float], level: float = LEVEL) -> tuple[float, float]:
    """The interval of the mean gain over seeds, seeds as the units, by the gains' own exact family."""
    return mean_gain_interval(gains, level)


def summarize(results: list[dict[str, Any]], errors: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Holm-adjusted outcomes per item, the per-pair aggregate over seeds, and the verdict counts; the cost
    counts what errored items (`errors`) spent too."""
    items = unique(results)
    adjusted = holm([r["gain"]["p_value"] for r in items])
    never = unreachable([r["gain"]["n"] for r in items], [restart_count_of(r["gain"]) for r in items])
    per_item = []
    for index, (result, p_holm) in enumerate(zip(items, adjusted)):
        gain = result["gain"]["mean"]
        outcome = _holm_outcome(result, p_holm)
        per_item.append({
            "seed": result["seed"], "source": result["source"], "target": result["target"],
            "gain": gain, "p_value": result["gain"]["p_value"], "p_holm": float(f"{p_holm:.6g}"),
            "significant": outcome != NO_EFFECT, "outcome": outcome, "decidable": index not in never,
            **({"units_to_decide": never[index]} if index in never else {}),
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
                      "no_effect": sum(i["outcome"] == NO_EFFECT and i["decidable"] for i in mine),
                      "undecidable": sum(not i["decidable"] for i in mine),
                      "significant_gains": sum(i["outcome"] == TRANSFERS for i in mine)})
    verdicts = {"pass": 0, "fail": 0, "inconclusive": 0}
    for result in results:
        verdict = (result.get("gate") or {}).get("verdict")
        if verdict in verdicts:
            verdicts[verdict] += 1
    return {
        "correction": CORRECTION, "alpha": ALPHA, "hypotheses": len(items),
        "mean_gain": round(mean(r["gain"]["mean"] for r in items), 4),
        "outcomes": {o: sum(i["outcome"] == o and i["decidable"] for i in per_item) for o in (TRANSFERS, HURTS, NO_EFFECT)},
        "undecidable": sum(not i["decidable"] for i in per_item),
        "significant_gains": sum(i["outcome"] == TRANSFERS for i in per_item),
        "significant_losses": sum(i["outcome"] == HURTS for i in per_item),
        "verdicts": verdicts, "pairs": pairs, "items": per_item,
        "cost": breakdown(items + spent_by_errors(errors or [])), "frontier": frontier(items),
    }
