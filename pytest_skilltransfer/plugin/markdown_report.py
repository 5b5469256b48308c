"""The Markdown report (`--skilltransfer-md`): for a CI job summary or a pull-request comment.

It holds the summary line, the table of every item with its gate verdict, one mermaid
`xychart-beta` bar chart per seed and pair (baseline / transferred / direct on the target, which
GitHub renders), the failed gates, the rubric judges' agreement and calibration, and the
optimization price comparison.
"""

from __future__ import annotations

from typing import Any

from ..judge_report import judge_lines, unstable_lines
from ..report import LEGEND, md_table, pair_lines, price_difference, summary_line, unfinished_answers


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
    from .compare import VERDICT_WORDS, comparisons

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


def chart(result: dict[str, Any]) -> list[str]:
    """A mermaid bar chart of one result's three held-out scores on the target."""
    values = [result["baseline_target"], result["transferred"], result["direct_target"]]
    labels = ["baseline", "transferred", "direct"]
    shown = [(label, value) for label, value in zip(labels, values) if value is not None]
    return [
        "```mermaid",
        "xychart-beta",
        f'    title "{result["seed"]}: {result["source"]} -> {result["target"]}"',
        "    x-axis [" + ", ".join(f'"{label}"' for label, _ in shown) + "]",
        '    y-axis "held-out score on target" 0 --> 1',
        "    bar [" + ", ".join(f"{value:.2f}" for _, value in shown) + "]",
        "```",
    ]


def render(results: list[dict[str, Any]]) -> str:
    """The whole report."""
    if not results:
        return "# Skill transfer\n\nNo transfer items ran.\n"
    ordered = sorted(results, key=_key)
    lines = ["# Skill transfer", "", f"`{summary_line(ordered)}`", "", *_table(ordered), "", f"_{LEGEND}_", ""]
    lines += [f"- {line}" for line in pair_lines(ordered)] + [""]
    difference = price_difference(ordered)
    if difference:
        lines += [difference, ""]
    unfinished = [(r, text) for r in ordered if (text := unfinished_answers(r))]
    if unfinished:
        lines += ["## Unfinished answers", ""]
        lines += [f"- **{r['seed']}** ({r['source']} -> {r['target']}): {text}" for r, text in unfinished]
        lines.append("")
    lines += _against_base(ordered)
    failed = [r for r in ordered if r.get("gate") and not r["gate"]["passed"]]
    if failed:
        lines += ["## Failed or inconclusive gates", ""]
        for result in failed:
            gate = result["gate"]
            reasons = [*gate["failures"], *gate.get("inconclusive", []),
                       *([gate["snapshot"]] if gate["snapshot"] != "ok" else [])]
            lines += [f"- **{result['seed']}** ({result['source']} -> {result['target']}): " + "; ".join(reasons)]
        lines.append("")
    if judge_lines(ordered):
        lines += ["## Rubric judges", ""]
        for result in ordered:
            for line in judge_lines([result]):
                lines.append(f"- {line.strip()}".replace("\n  warning:", " — **warning**:"))
                lines += [f"  - unstable: {text}" for text in unstable_lines(result)]
        lines.append("")
    lines += ["## Scores per seed", ""]
    for result in ordered:
        lines += chart(result) + [""]
    return "\n".join(lines)


def errors_section(errors: list[dict[str, Any]]) -> str:
    """Items that errored before they had a result (a cassette miss, a broken model), with the reason."""
    if not errors:
        return ""
    lines = ["", f"## Errored items ({len(errors)})", ""]
    lines += [f"- `{e['item']}` ({e['source']} -> {e['target']}, at {e['when']}): {_cell(e['reason'])}" for e in errors]
    return "\n".join(lines) + "\n"
