"""Regression against a base ref, as reports show it: the verdict words and one row per compared item,
from the items' `compare` records in the JSON report (written by `plugin.compare`)."""

from __future__ import annotations

from typing import Any

VERDICT_WORDS = {"pass": "ok", "fail": "regressed", "new": "new (no snapshot at the ref)",
                 "unscored": "not compared (the snapshot at the ref has no per-task scores)",
                 "off": "not gated (regression_tolerance off)"}


def regression_verdict(gate: dict[str, Any]) -> str:
    """The regression gate's verdict in a gate record: pass or fail, "off" when it did not run."""
    for decision in gate.get("gates", []):
        if decision["gate"] == "regression_tolerance":
            return str(decision["verdict"])
    return "off"


def comparisons(results: list[dict[str, Any]]) -> tuple[str, list[tuple[str, str, str, str]]]:
    """The heading `regression against REF (commit): counts` and one (item, before, after, verdict)
    row per item compared with the base ref; ("", []) without a ref."""
    compared = [r for r in results if r.get("compare")]
    if not compared:
        return "", []
    first = compared[0]["compare"]
    counts = {v: sum(1 for r in compared if r["compare"]["verdict"] == v) for v in VERDICT_WORDS if v != "pass"}
    said = ", ".join(f"{n} {VERDICT_WORDS[v]}" for v, n in counts.items() if n) or "no regression"
    rows = []
    for result in compared:
        record = result["compare"]
        rows.append((result.get("item") or result["seed"], "-" if record["before"] is None else f"{record['before']:.2f}",
                     f"{record['after']:.2f}", VERDICT_WORDS.get(record["verdict"], record["verdict"])))
    return f"regression against {first['ref']} ({first['commit'][:7]}): {said}", rows


def summary_lines(results: list[dict[str, Any]]) -> list[str]:
    """For the terminal: the heading and the items whose score or verdict needs a look, the rest counted."""
    heading, rows = comparisons(results)
    if not heading:
        return []
    shown = [row for row in rows if row[3] != VERDICT_WORDS["pass"] or row[1] != row[2]]
    lines = [heading, *(f"  {item}: {before} -> {after}  {verdict}" for item, before, after, verdict in shown)]
    if len(shown) < len(rows):
        lines.append(f"  ({len(rows) - len(shown)} more item(s) unchanged and passing; every item is in the "
                     "Markdown and JSON reports)")
    return lines
