"""Human-readable reports of transfer results: the per-seed line and the summary table.

Both work on the JSON shape of `result_json`, so the CLI, the pytest terminal summary (which
receives results from xdist workers as JSON) and the Markdown report print the same numbers.
"""

from __future__ import annotations

from typing import Any

COLUMNS = ("seed", "pair", "baseline", "transferred", "direct", "gain ± CI", "eff.", "calls", "tokens", "$")


def _score(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def gain_text(result: dict[str, Any]) -> str:
    """`+0.67 [+0.33, +1.00]`: the paired gain with its 95% interval."""
    gain = result["gain"]
    return f"{gain['mean']:+.2f} [{gain['ci_low']:+.2f}, {gain['ci_high']:+.2f}]"


def night_verdict(night: dict[str, Any]) -> str:
    """What the gate did with one night's edits: accepted, rejected, or no change (nothing applied)."""
    if night["accepted"]:
        return "accepted"
    return "rejected" if night["applied"] else "no change"


def usd_text(value: float | None) -> str:
    """Dollars, or `n/a` when a model has no price."""
    return "n/a" if value is None else f"{value:.4f}"


def seed_line(result: dict[str, Any]) -> str:
    """One line per seed, as the upstream CLI prints it, plus the interval."""
    direct = f" direct={_score(result['direct_target'])}" if result["direct_target"] is not None else ""
    return (f"  {result['seed']:<24} baseline={_score(result['baseline_target'])} "
            f"transferred={_score(result['transferred'])}{direct}  (gain {gain_text(result)})")


def summary_line(results: list[dict[str, Any]]) -> str:
    """`=== transfer a -> b: P/N positive, mean gain +x ===`."""
    pairs = sorted({f"{r['source']} -> {r['target']}" for r in results})
    positive = sum(1 for r in results if r["transfer_gain"] > 0)
    mean_gain = sum(r["transfer_gain"] for r in results) / len(results) if results else 0.0
    total = [r["cost"]["total_usd"] for r in results]
    usd = None if any(v is None for v in total) else sum(total)
    return (f"=== transfer {', '.join(pairs)}: {positive}/{len(results)} positive, "
            f"mean gain {mean_gain:+.2f}, cost ${usd_text(usd)}{cache_text(results)} ===")


def cache_text(results: list[dict[str, Any]]) -> str:
    """`, prompt cache saved $x (n tokens read)` when any call read or wrote the prompt cache, else ``."""
    read = sum(r["cost"].get("cache_read_tokens", 0) for r in results)
    written = sum(r["cost"].get("cache_write_tokens", 0) for r in results)
    if not read and not written:
        return ""
    saved = [r["cost"].get("cache_saved_usd") for r in results]
    amount = "n/a" if any(v is None for v in saved) else f"{sum(saved):.4f}"
    return f", prompt cache saved ${amount} ({read} tokens read, {written} written)"


def _seed_label(result: dict[str, Any]) -> str:
    """The seed, plus the test's name for a hand-written test (so it is not mistaken for a matrix item)."""
    item = result.get("item", "")
    if not item or "::transfer[" in item:
        return result["seed"]
    return f"{result['seed']} ({item.split('::')[-1]})"


def table_rows(results: list[dict[str, Any]]) -> list[tuple[str, ...]]:
    """Rows of the summary table, sorted by seed and pair."""
    rows = []
    for r in sorted(results, key=lambda r: (r["seed"], r["source"], r["target"])):
        eff = "-" if r["efficiency"] is None else f"{r['efficiency']:.2f}"
        rows.append((_seed_label(r), f"{r['source']}->{r['target']}", _score(r["baseline_target"]), _score(r["transferred"]),
                     _score(r["direct_target"]), gain_text(r), eff, str(r["cost"]["calls"]), str(r["cost"]["tokens"]),
                     usd_text(r["cost"]["total_usd"])))
    return rows


def text_table(results: list[dict[str, Any]]) -> str:
    """A fixed-width table for the terminal."""
    rows = [COLUMNS, *table_rows(results)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    lines = ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def unfinished_answers(result: dict[str, Any]) -> str | None:
    """`baseline: 2 truncated; transferred: 1 refusal; usage missing on 3 calls`, or None when all answers
    were finished and every call reported its usage."""
    parts = []
    for phase in ("baseline", "transferred", "direct"):
        evaluation = result["scores"].get(phase)
        stops = (evaluation or {}).get("stops") or {}
        counted = [f"{n} {kind.replace('_', ' ')}" for kind, n in stops.items() if n]
        if counted:
            parts.append(f"{phase}: {', '.join(counted)}")
    missing = result["cost"].get("usage_unreported_calls", 0)
    if missing:
        parts.append(f"usage missing on {missing} call(s) (their tokens and cost are unknown, not 0)")
    return "; ".join(parts) or None


def price_difference(results: list[dict[str, Any]]) -> str | None:
    """What optimizing on the source cost against optimizing directly on the target, summed over results."""
    rows = [r for r in results if r["cost"]["optimize_direct_usd"] is not None]
    if not rows or any(r["cost"]["optimize_source_usd"] is None for r in rows):
        return None
    source = sum(r["cost"]["optimize_source_usd"] for r in rows)
    direct = sum(r["cost"]["optimize_direct_usd"] for r in rows)
    ratio = f" ({direct / source:.1f}x)" if source > 0 else ""
    return f"optimization cost: on source ${source:.4f} vs direct on target ${direct:.4f}{ratio}"
