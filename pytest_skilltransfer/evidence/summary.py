"""Run-level statistics: a pure function of the items' records (`item_record.ItemRecord`).

Because it reads only what every result carries (`gain.mean`, `gain.n`, `gain.p_value`, the gate's
verdict), the summary of merged shards equals the summary of one run over the same items.

* Error control across items: each item's outcome word is its finding in the run's family
  (`run_family`: Bonferroni over the run's distinct items, family-wise error 5%, the level its gates use;
  an item whose evidence is unchanged keeps the family its snapshot records), and the summary counts the
  words the rows show, so rows and counts agree: transfers, hurts, shown alone (the item's own 95% interval
  excludes 0, the family's does not), no effect shown, and undecidable (no outcome could be a finding at
  its level with its units). An item counted twice (a hand-written test on a matrix item's seed and pair),
  and items whose answers are byte-identical (one model over two wire protocols), are one hypothesis and
  count once.
* Per pair (source -> target), an aggregate over seeds: the mean of the seeds' gains with an
  exact interval over seeds (the same exact family that bounds a gain over tasks, seeds as the
  units and their gains as fractional moves up and down). The interval refers to the population of seeds like these; below the
  number of seeds that could ever exclude 0 (`seeds_needed`) no interval is given, and the report says so.
"""

from __future__ import annotations

from typing import Any

from ..pricing.cost_breakdown import breakdown
from .item_record import ItemRecord
from .run_family import UNDECIDABLE, RunFamily, kind, word
from .family import seeds_needed  # noqa: F401 (re-exported: the summary's minimum of seeds)
from .frontier import frontier
from .stats import HURTS, LEVEL, NO_EFFECT, TRANSFERS, mean, mean_gain_interval

CORRECTION = "bonferroni"
ALPHA = round(1 - LEVEL, 6)
SHOWN_ALONE = "shown alone"


def unique(results: list[ItemRecord]) -> list[ItemRecord]:
    """One result per (seed, source, target, optimizer), sorted, the first occurrence kept."""
    seen: dict[tuple[str, str, str, str], ItemRecord] = {}
    for result in sorted(results, key=lambda r: (r.key, r.item or "")):
        seen.setdefault(result.key, result)
    return list(seen.values())


def spent_by_errors(errors: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The errored items that spent something, as records `breakdown` adds to the results' bill."""
    return [{"cost": e["cost"]} for e in errors if (e.get("cost") or {}).get("phases")]


def bill(items: list[ItemRecord], errors: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """What the items and the errored items (`errors`) paid, per phase, role and lane (`breakdown`)."""
    return breakdown([{"cost": r.cost.to_json()} for r in items] + spent_by_errors(errors or []))


def distinct_evidence(items: list[ItemRecord]) -> list[ItemRecord]:
    """The items once per body of answers: two targets that gave byte-identical answers (one model over two wire
    protocols) are one hypothesis; the first in order is kept."""
    seen: set[str] = set()
    out = []
    for result in items:
        answers = result.evidence.answers if result.evidence else None
        if answers is not None and answers in seen:
            continue
        if answers is not None:
            seen.add(answers)
        out.append(result)
    return out


def _family(result: ItemRecord) -> RunFamily:
    """The family the item was judged in (its record), or the items alone for a record without one."""
    record = result.family
    if not record:
        return RunFamily(1, method="none")
    return RunFamily(record.size, record.alpha, record.method, share=record.alpha_share or 1.0,
                     futile=bool(record.futile))


def item_word(result: ItemRecord) -> str:
    """The word the item's row shows."""
    return result.outcome or word(result.gain.as_gain(), _family(result))


def over_seeds(gains: list[float], level: float = LEVEL) -> tuple[float, float]:
    """The interval of the mean gain over seeds, seeds as the units, by the gains' own exact family."""
    return mean_gain_interval(gains, level)


def summarize(results: list[ItemRecord], errors: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Each item's outcome in the run's family (as its row shows it), the per-pair aggregate over seeds, and the
    counts of the words; the cost counts what errored items (`errors`) spent too."""
    items = unique(results)
    hypotheses = distinct_evidence(items)
    counted = {id(r) for r in hypotheses}
    per_item = []
    for result in items:
        text = item_word(result)
        family = _family(result)
        per_item.append({
            "seed": result.seed, "source": result.source, "target": result.target,
            "gain": result.gain.mean, "p_value": result.gain.p_value,
            "p_adjusted": float(f"{min(1.0, result.gain.p_value * family.size):.6g}"),
            "level": round(family.level, 8), "family_size": family.size,
            "method": family.method,
            "significant": text in (TRANSFERS, HURTS), "outcome": text, "kind": kind(text),
            "decidable": kind(text) != UNDECIDABLE, "counted": id(result) in counted,
            **({"same_answers_as": _same_as(result, hypotheses)} if id(result) not in counted else {}),
        })
    pairs = []
    needed = seeds_needed()
    for source, target in sorted({(r.source, r.target) for r in items}):
        gains = [r.gain.mean for r in items if (r.source, r.target) == (source, target)]
        mine = [i for i in per_item if (i["source"], i["target"]) == (source, target)]
        low, high = over_seeds(gains)
        enough = len(gains) >= needed
        pairs.append({"source": source, "target": target, "seeds": len(gains), "mean_gain": round(mean(gains), 4),
                      "ci_low": round(low, 4) if enough else None, "ci_high": round(high, 4) if enough else None,
                      "seeds_needed": needed, "population": "seeds like these, each scored on its own held-out tasks",
                      **_counts(mine), "significant_gains": sum(i["outcome"] == TRANSFERS for i in mine)})
    verdicts = {"pass": 0, "fail": 0, "inconclusive": 0}
    for result in results:
        verdict = result.gate.verdict if result.gate else None
        if verdict in verdicts:
            verdicts[verdict] += 1
    counted_items = [i for i in per_item if i["counted"]]
    sizes = sorted({i["family_size"] for i in per_item})
    return {
        "correction": "none" if any(i["method"] == "none" for i in per_item) else CORRECTION, "alpha": ALPHA,
        "hypotheses": len(hypotheses), "items": per_item,
        "family": {"method": CORRECTION, "alpha": ALPHA, "sizes": sizes,
                   "same_answers": len(items) - len(hypotheses),
                   "rule": "each item at 1 - alpha / m, m the distinct items of the run its evidence was new in "
                           "(an item whose evidence digest equals its snapshot's keeps the m recorded there)"},
        "mean_gain": round(mean(r.gain.mean for r in items), 4),
        "outcomes": {**{o: sum(i["outcome"] == o for i in counted_items) for o in (TRANSFERS, HURTS, NO_EFFECT)},
                     **{k: sum(i["kind"] == k for i in counted_items) for k in (SHOWN_ALONE, UNDECIDABLE)}},
        "shown_alone": sum(i["kind"] == SHOWN_ALONE for i in counted_items),
        "undecidable": sum(i["kind"] == UNDECIDABLE for i in counted_items),
        "significant_gains": sum(i["outcome"] == TRANSFERS for i in counted_items),
        "significant_losses": sum(i["outcome"] == HURTS for i in counted_items),
        "verdicts": verdicts, "pairs": pairs,
        "cost": bill(items, errors), "frontier": frontier(items),
    }


def _counts(items: list[dict[str, Any]]) -> dict[str, int]:
    return {"transfers": sum(i["outcome"] == TRANSFERS for i in items),
            "hurts": sum(i["outcome"] == HURTS for i in items),
            "shown_alone": sum(i["kind"] == SHOWN_ALONE for i in items),
            "no_effect": sum(i["outcome"] == NO_EFFECT for i in items),
            "undecidable": sum(i["kind"] == UNDECIDABLE for i in items)}


def _same_as(result: ItemRecord, hypotheses: list[ItemRecord]) -> str:
    answers = result.evidence.answers if result.evidence else None
    first = next(r for r in hypotheses if r.evidence is not None and r.evidence.answers == answers)
    return f"{first.seed} {first.source} -> {first.target}"
