"""Run-level statistics: a pure function of the per-item records of a JSON report.

Because it reads only what every result carries (`gain.mean`, `gain.n`, `gain.p_value`, the gate's
verdict), the summary of merged shards equals the summary of one run over the same items.

* Error control across items: Holm's step-down correction of the gains' exact sign-flip p-values
  controls the family-wise error rate at 5% (the chance that *any* reported significant gain or loss
  is a fluke), not merely the false-discovery rate. An item counted twice (a hand-written test on
  a matrix item's seed and pair) is one hypothesis and counts once.
* Per pair (source -> target), an aggregate over seeds: the mean of the seeds' gains with an
  exact interval over seeds (the same Clopper-Pearson rule on (g + 1) / 2 that bounds a gain over
  tasks; seeds are the units).
"""

from __future__ import annotations

from typing import Any

from .cost_breakdown import breakdown
from .frontier import frontier
from .stats import LEVEL, difference_interval, holm, mean

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


def summarize(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Holm-adjusted significance per item, the per-pair aggregate over seeds, and the verdict counts."""
    items = unique(results)
    adjusted = holm([r["gain"]["p_value"] for r in items])
    per_item = []
    for result, p_holm in zip(items, adjusted):
        gain = result["gain"]["mean"]
        per_item.append({
            "seed": result["seed"], "source": result["source"], "target": result["target"],
            "gain": gain, "p_value": result["gain"]["p_value"], "p_holm": float(f"{p_holm:.6g}"),
            "significant": p_holm <= ALPHA and gain != 0,
        })
    pairs = []
    for source, target in sorted({(r["source"], r["target"]) for r in items}):
        gains = [r["gain"]["mean"] for r in items if (r["source"], r["target"]) == (source, target)]
        low, high = difference_interval(gains)
        pairs.append({"source": source, "target": target, "seeds": len(gains), "mean_gain": round(mean(gains), 4),
                      "ci_low": round(low, 4), "ci_high": round(high, 4),
                      "significant_gains": sum(1 for i in per_item if i["significant"] and i["gain"] > 0
                                               and (i["source"], i["target"]) == (source, target))})
    verdicts = {"pass": 0, "fail": 0, "inconclusive": 0}
    for result in results:
        verdict = (result.get("gate") or {}).get("verdict")
        if verdict in verdicts:
            verdicts[verdict] += 1
    return {
        "correction": CORRECTION, "alpha": ALPHA, "hypotheses": len(items),
        "significant_gains": sum(1 for i in per_item if i["significant"] and i["gain"] > 0),
        "significant_losses": sum(1 for i in per_item if i["significant"] and i["gain"] < 0),
        "verdicts": verdicts, "pairs": pairs, "items": per_item,
        "cost": breakdown(items), "frontier": frontier(items),
    }
