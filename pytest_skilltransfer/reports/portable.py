"""The comparison rows of `--validate-on`: per item, the single-model and the multi-model (portable) skill on the
target, each against the baseline and against each other, with the extra cost and the outcome word."""

from __future__ import annotations

from typing import Any

from ..engine.validation import CheckRate, ValidationScore, blocked_text
from ..evidence.item_record import ItemRecord

HEADING = ("portable skills (--validate-on): single- and multi-model skill on the target, each item's 3 "
           "comparisons one exact paired family, Holm-adjusted p, intervals at the Holm step's level")
COLUMNS = ("seed", "pair", "validated on", "base", "single", "multi", "single - base", "multi - base",
           "multi - single", "p (Holm)", "extra cost", "outcome")


def _interval(comparison: dict[str, Any]) -> str:
    """`+0.58 [+0.25, +0.81] at 97.5%`: the interval and the Holm step's level it is taken at."""
    level = comparison.get("level")
    at = f" at {level * 100:.4g}%" if level is not None else ""
    return f"{comparison['mean']:+.2f} [{comparison['ci_low']:+.2f}, {comparison['ci_high']:+.2f}]{at}"


def _p(value: float) -> str:
    return "<.001" if value < 0.001 else f"{value:.3f}"


def extra_cost_text(extra: dict[str, Any]) -> str:
    """`$0.0123 (48 calls)`, or `unpriced (48 calls)`."""
    usd = extra.get("usd")
    money = "unpriced" if usd is None else f"${usd:.4f}"
    return f"{money} ({extra.get('calls', 0)} calls)"


def comparison_row(result: ItemRecord) -> tuple[str, ...]:
    """One item's row (its result must carry `portable`)."""
    portable = result.portable
    family = {c["name"]: c for c in portable["family"]["comparisons"]}
    return (result.seed, f"{result.source} -> {result.target}", ",".join(portable["validate_on"]),
            f"{result.baseline_target:.2f}", f"{result.transferred:.2f}",
            f"{portable['transferred']['hard']['mean']:.2f}",
            _interval(family["single"]), _interval(family["multi"]), _interval(family["multi_vs_single"]),
            _p(family["multi_vs_single"]["p_holm"]), extra_cost_text(portable["extra_cost"]), portable["outcome"])


def portable_lines(results: list[ItemRecord]) -> list[str]:
    """The heading and a fixed-width table of every result that has a portable arm (none: no lines)."""
    items = sorted((r for r in results if r.portable), key=lambda r: (r.source, r.target, r.seed))
    if not items:
        return []
    rows = [COLUMNS, *(comparison_row(r) for r in items)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    text = ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in rows]
    return [HEADING, text[0], "  ".join("-" * w for w in widths), *text[1:], *blocked_lines(items)]


def blocked_by_text(night: dict[str, Any]) -> str:
    """The models that blocked a night's edits (its JSON form), each with the kinds of check whose pass rate
    dropped beyond the tolerance, as the nights' log says it: `big (contains 1.00 -> 0.50)`."""
    blocked = set(night.get("blocked_by", []))
    scores = [ValidationScore(v["model"], v["before"], v["after"],
                              tuple(CheckRate(c["check"], c["before"], c["after"]) for c in v.get("checks", [])
                                    if c["check"] in v.get("dropped_checks", [])))
              for v in night.get("validation", []) if v["model"] in blocked]
    known = {s.model_id for s in scores}
    return ", ".join([blocked_text(scores)] * bool(scores) + [m for m in night.get("blocked_by", []) if m not in known])


def blocked_lines(results: list[ItemRecord]) -> list[str]:
    """Per item: how many nights the listed models blocked, and by whom."""
    lines = []
    for result in results:
        nights = (result.portable.get("optimization") or {}).get("nights") or []
        blocked = [f"night {n['night']} by {blocked_by_text(n)}" for n in nights
                   if not n["accepted"] and n.get("blocked_by")]
        if blocked:
            lines.append(f"{result.seed} ({result.source} -> {result.target}): edits blocked: "
                         f"{'; '.join(blocked)}")
    return lines


def portable_markdown(results: list[ItemRecord]) -> list[str]:
    """The same rows as a Markdown table under a heading (none without a portable arm)."""
    items = sorted((r for r in results if r.portable), key=lambda r: (r.source, r.target, r.seed))
    if not items:
        return []
    head = "| " + " | ".join(COLUMNS) + " |"
    rule = "|" + "---|" * len(COLUMNS)
    rows = ["| " + " | ".join(cell.replace("|", "\\|") for cell in comparison_row(r)) + " |" for r in items]
    return ["## Portable skills (--validate-on)", "", f"_{HEADING.partition(': ')[2]}_", "", head, rule, *rows,
            *(f"- {line}" for line in blocked_lines(items)), ""]
