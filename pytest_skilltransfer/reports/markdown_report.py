"""The Markdown report (`--skilltransfer-md`): for a CI job summary or a pull-request comment.

A headline with the item counts (passed / failed / inconclusive / errored) and each gate's verdicts,
the summary line, the table of every item, one text chart of every item's gain with its 95% interval
(a forest plot, readable in any Markdown renderer), a short section per failed or inconclusive item
(the reason, the scores, the checks the learned skill still misses), the errored items, the rubric
judges and the optimization price comparison. A pure function of the item records and the errors.
"""

from __future__ import annotations

from typing import Any

from .judge_report import judge_lines, unstable_lines
from .report import (
    failure_reason,
    gain_text,
    legend,
    md_table,
    p_text,
    pair_lines,
    price_difference,
    summary_line,
    table_rows,
    unfinished_answers,
    verdict_text,
)
from .result_json import item_counts

PLOT_WIDTH = 41  # cells for gains -1 .. +1, 0.05 each
CHECK_CHARS = 60


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _table(ordered: list[dict[str, Any]]) -> list[str]:
    """`ordered` is sorted as `table_rows` sorts (stably, by seed and pair), so rows and results align."""
    columns, rows = md_table(ordered)
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        lines.append("| " + " | ".join(_cell(c) for c in (*row[:-1], _bold(row[-1]))) + " |")
    return lines


def _key(result: dict[str, Any]) -> tuple[str, str, str]:
    return result["seed"], result["source"], result["target"]


def _bold(verdict: str) -> str:
    return "**FAIL**" if verdict == "fail" else verdict


def _against_base(ordered: list[dict[str, Any]]) -> list[str]:
    """Before -> after per item against the base ref (`--compare-to`), as a table; [] without a ref."""
    from .comparison import VERDICT_WORDS, comparisons

    regressed = VERDICT_WORDS["fail"]
    heading, rows = comparisons(ordered)
    if not heading:
        return []
    lines = ["## " + heading[0].upper() + heading[1:], "", "| item | before | after | regression gate |",
             "|---|---|---|---|"]
    for item, before, after, verdict in rows:
        shown = f"**{verdict}**" if verdict == regressed else verdict
        lines.append(f"| {_cell(item)} | {before} | {after} | {shown} |")
    return lines + [""]


def headline(results: list[dict[str, Any]], errors: list[dict[str, Any]]) -> list[str]:
    """`# Skill transfer: 9 items, 8 passed, 1 failed, ...` and each gate's verdict counts."""
    counts = item_counts(results, errors)
    total = sum(counts.values())
    shown = ", ".join(f"**{n} {what}**" if n and what in ("failed", "errored") else f"{n} {what}"
                      for what, n in counts.items())
    lines = [f"# Skill transfer: {total} item(s), {shown}", ""]
    gates: dict[str, dict[str, int]] = {}
    for result in results:
        for gate in (result.get("gate") or {}).get("gates", []):
            tally = gates.setdefault(gate["gate"], {})
            tally[gate["verdict"]] = tally.get(gate["verdict"], 0) + 1
    if gates:
        lines += ["Gates: " + "; ".join(f"`{name}` " + ", ".join(f"{n} {v}" for v, n in sorted(tally.items()))
                                         for name, tally in gates.items()), ""]
    return lines


def _cell_of(value: float) -> int:
    return round((max(-1.0, min(1.0, value)) + 1) / 2 * (PLOT_WIDTH - 1))


def gain_bar(result: dict[str, Any]) -> str:
    """The gain (●) with its 95% interval (─) on -1 .. +1, zero (│) and the min_gain threshold (┊)."""
    gain = result["gain"]
    cells = [" "] * PLOT_WIDTH
    for i in range(_cell_of(gain["ci_low"]), _cell_of(gain["ci_high"]) + 1):
        cells[i] = "─"
    thresholds = [g["threshold"] for g in (result.get("gate") or {}).get("gates", []) if g["gate"] == "min_gain"]
    for value, mark in [(t, "┊") for t in thresholds] + [(0.0, "│")]:
        cells[_cell_of(value)] = "┼" if cells[_cell_of(value)] == "─" and mark == "│" else mark
    cells[_cell_of(gain["mean"])] = "●"
    return "".join(cells)


def chart(ordered: list[dict[str, Any]]) -> list[str]:
    """One text chart of every item's gain: a row per item, in the table's order."""
    labels = [f"{row[0]} {row[1]}" for row in table_rows(ordered)]  # the terminal table's labels, same order
    width = max(map(len, labels))
    axis = "-1".ljust(PLOT_WIDTH // 2) + "0" + "+1".rjust(PLOT_WIDTH // 2)
    lines = ["## Gain per item", "",
             "_● gain transferred - baseline, ─ its 95% interval, │ zero, ┊ the min_gain threshold_", "",
             "```text", f"{'':<{width}}  {axis}"]
    lines += [f"{label:<{width}}  {gain_bar(r)}  {gain_text(r)}  {verdict_text(r)}" for label, r in zip(labels, ordered)]
    return lines + ["```", ""]


def _missed_checks(result: dict[str, Any]) -> str:
    """`contains=Owner: (20 of 40 tasks)`: the checks the learned skill misses on the target, most often first."""
    tasks = result["scores"]["transferred"]["tasks"]
    missed: dict[str, int] = {}
    for task in tasks:
        for label in {label for sample in task["samples"] for label in sample["failed"]}:
            missed[label] = missed.get(label, 0) + 1
    ranked = sorted(missed.items(), key=lambda kv: (-kv[1], kv[0]))
    return ", ".join(f"{_code(label)} ({n} of {len(tasks)} tasks)" for label, n in ranked) or "none"


def _code(text: str, width: int = CHECK_CHARS) -> str:
    """A code span of `text`, cut to `width` characters."""
    text = text if len(text) <= width else text[: width - 1] + "…"
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def failure_sections(ordered: list[dict[str, Any]]) -> list[str]:
    """A short section per failed or inconclusive item: the reason, the scores, the checks still missed."""
    lines = []
    for result in [r for r in ordered if verdict_text(r) in ("fail", "inconclusive")]:
        direct = result["direct_target"]
        lines += [f"### {verdict_text(result)}: {result['seed']} ({result['source']} -> {result['target']})", "",
                  f"- **{_cell(failure_reason(result))}**",
                  f"- on {result['target']}: baseline {result['baseline_target']:.2f} -> transferred "
                  f"{result['transferred']:.2f}" + ("" if direct is None else f" (direct {direct:.2f})")
                  + f"; gain {gain_text(result)}, p = {p_text(result['gain']['p_value'])}",
                  f"- checks missed with the learned skill: {_missed_checks(result)}"]
        lines += rerun_lines(result)
        lines.append("")
    return ["## Failures", "", *lines] if lines else []


def rerun_lines(result: dict[str, Any]) -> list[str]:
    from .rerun import rerun_commands

    return [f"- {what}: {_code(command)}" for what, command in rerun_commands(result)]


def _code(text: str) -> str:
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def _spend(ordered: list[dict[str, Any]]) -> list[str]:
    """Cost per phase, role and lane; the source frontier as a code block (it is a fixed-width table)."""
    from ..evidence.frontier import frontier, frontier_lines
    from ..evidence.summary import unique
    from ..pricing.cost_breakdown import breakdown, breakdown_lines

    items = unique(ordered)
    lines = [f"- {line}" for line in breakdown_lines(breakdown(items))]
    table = frontier_lines(frontier(items))
    if table:
        lines += ["", "## Source frontier", "", "```", *table, "```"]
    return lines + ([""] if lines else [])


def render(results: list[dict[str, Any]], errors: list[dict[str, Any]] | None = None) -> str:
    """The whole report."""
    errors = list(errors or [])
    if not results and not errors:
        return "# Skill transfer\n\nNo transfer items ran.\n"
    ordered = sorted(results, key=_key)
    lines = headline(ordered, errors)
    if ordered:
        lines += [summary_line(ordered).strip("= "), "", *_table(ordered), "", f"_{legend(ordered)}_", ""]
        lines += [f"- {line}" for line in pair_lines(ordered)] + [""]
        lines += chart(ordered)
    lines += failure_sections(ordered)
    if errors:
        lines += [f"## Errored items ({len(errors)})", ""]
        lines += [f"- `{e['item']}` ({e['source']} -> {e['target']}, at {e['when']}): {_cell(e['reason'])}"
                  for e in errors]
        lines.append("")
    difference = price_difference(ordered)
    if difference:
        lines += [difference, ""]
    lines += _spend(ordered)
    unfinished = [(r, text) for r in ordered if (text := unfinished_answers(r))]
    if unfinished:
        lines += ["## Unfinished answers", ""]
        lines += [f"- **{r['seed']}** ({r['source']} -> {r['target']}): {text}" for r, text in unfinished]
        lines.append("")
    lines += _against_base(ordered)
    if judge_lines(ordered):
        lines += ["## Rubric judges", ""]
        for result in ordered:
            for line in judge_lines([result]):
                lines.append(f"- {line.strip()}".replace("\n  warning:", " — **warning**:"))
                lines += [f"  - unstable: {text}" for text in unstable_lines(result)]
        lines.append("")
    return "\n".join(lines)
