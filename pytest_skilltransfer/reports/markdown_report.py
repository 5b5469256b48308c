"""The Markdown report (`--skilltransfer-md`): for a CI job summary or a pull-request comment, read in ten seconds.

First screen: a headline with the item counts (passed / failed / inconclusive / errored), the (seed, pair)
outcomes after Holm (the counts the page and the terminal show, hand-written tests named apart), then a
short section per failed, hurting or inconclusive item saying why (the gate's reason, the checks newly
missed with their task counts and the learned lines they point at, the rerun / accept commands), the
errored items, and a narrow table (seed, pair, gain [95% CI], outcome, verdict), flagged items first.
Everything else is folded in one `<details>` block: each gate's verdicts, the summary line, the full
table, one text chart of every item's gain (a forest plot), the per-pair aggregate, spend and the source
frontier, unfinished answers, the comparison with the base ref and the rubric judges. Control and bidi
characters are written as visible escapes. A pure function of the item records and the errors.
"""

from __future__ import annotations

from typing import Any

from ..evidence.item_record import ItemRecord
from ..evidence.summary import summarize
from ..guards.terminal import safe
from .judge_report import judge_lines, unstable_lines
from .portable import portable_markdown
from .report import (
    failure_reason,
    gain_text,
    gate_reason,
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
from .why import (
    changed,
    holm_outcomes,
    is_hand_written,
    portable_text,
    run_checks,
    unlearnable,
    unlearnable_text,
    why,
)

PLOT_WIDTH = 41  # cells for gains -1 .. +1, 0.05 each
CHECK_CHARS = 60
LINE_CHARS = 90


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _table(ordered: list[ItemRecord]) -> list[str]:
    """`ordered` is sorted as `table_rows` sorts (stably, by seed and pair), so rows and results align."""
    columns, rows = md_table(ordered)
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        lines.append("| " + " | ".join(_cell(c) for c in (*row[:-1], _bold(row[-1]))) + " |")
    return lines


def _key(result: ItemRecord) -> tuple[str, str, str]:
    return result.seed, result.source, result.target


def _bold(verdict: str) -> str:
    return "**FAIL**" if verdict == "fail" else verdict


def _against_base(ordered: list[ItemRecord]) -> list[str]:
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


def headline(results: list[ItemRecord], errors: list[dict[str, Any]]) -> list[str]:
    """`# Skill transfer: 9 items, 8 passed, 1 failed, ...` and each gate's verdict counts."""
    counts = item_counts(results, errors)
    total = sum(counts.values())
    shown = ", ".join(f"**{n} {what}**" if n and what in ("failed", "errored") else f"{n} {what}"
                      for what, n in counts.items())
    return [f"# Skill transfer: {total} item(s), {shown}", ""]


def gate_lines(results: list[ItemRecord]) -> list[str]:
    """`Gates: `min_gain` 3 pass, 1 fail; ...`: each gate's verdict counts."""
    lines: list[str] = []
    gates: dict[str, dict[str, int]] = {}
    for result in results:
        for gate in result.gate.gates if result.gate else ():
            tally = gates.setdefault(gate.gate, {})
            tally[gate.verdict] = tally.get(gate.verdict, 0) + 1
    if gates:
        lines += ["Gates: " + "; ".join(f"`{name}` " + ", ".join(f"{n} {v}" for v, n in sorted(tally.items()))
                                         for name, tally in gates.items()), ""]
    return lines


def _cell_of(value: float) -> int:
    return round((max(-1.0, min(1.0, value)) + 1) / 2 * (PLOT_WIDTH - 1))


def gain_bar(result: ItemRecord) -> str:
    """The gain (●) with its 95% interval (─) on -1 .. +1, zero (│) and the min_gain threshold (┊)."""
    gain = result.gain
    cells = [" "] * PLOT_WIDTH
    for i in range(_cell_of(gain.ci_low), _cell_of(gain.ci_high) + 1):
        cells[i] = "─"
    thresholds = [g.threshold for g in (result.gate.gates if result.gate else ()) if g.gate == "min_gain"]
    for value, mark in [(t, "┊") for t in thresholds] + [(0.0, "│")]:
        cells[_cell_of(value)] = "┼" if cells[_cell_of(value)] == "─" and mark == "│" else mark
    cells[_cell_of(gain.mean)] = "●"
    return "".join(cells)


def chart(ordered: list[ItemRecord]) -> list[str]:
    """One text chart of every item's gain: a row per item, in the table's order."""
    labels = [f"{row[0]} {row[1]}" for row in table_rows(ordered)]  # the terminal table's labels, same order
    width = max(map(len, labels))
    axis = "-1".ljust(PLOT_WIDTH // 2) + "0" + "+1".rjust(PLOT_WIDTH // 2)
    lines = ["## Gain per item", "",
             "_● gain transferred - baseline, ─ its 95% interval, │ zero, ┊ the min_gain threshold_", "",
             "```text", f"{'':<{width}}  {axis}"]
    lines += [f"{label:<{width}}  {gain_bar(r)}  {gain_text(r)}  {verdict_text(r)}" for label, r in zip(labels, ordered)]
    return lines + ["```", ""]


def _missed_checks(result: ItemRecord) -> str:
    """`contains=Owner: (20 of 40 tasks)`: the checks the learned skill misses on the target, most often first."""
    tasks = result.scores.transferred.tasks if result.scores.transferred else ()
    missed: dict[str, int] = {}
    for task in tasks:
        for label in {label for sample in task.samples for label in sample.failed}:
            missed[label] = missed.get(label, 0) + 1
    ranked = sorted(missed.items(), key=lambda kv: (-kv[1], kv[0]))
    return ", ".join(f"{_code(label)} ({n} of {len(tasks)} tasks)" for label, n in ranked) or "none"


def _code(text: str, width: int = CHECK_CHARS) -> str:
    """A code span of `text`, cut to `width` characters."""
    text = text if len(text) <= width else text[: width - 1] + "…"
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def flagged(ordered: list[ItemRecord]) -> list[ItemRecord]:
    """Failed items first, then hurting, then inconclusive or changed ones (each group in the table's order)."""
    def rank(result: ItemRecord) -> int:
        verdict = verdict_text(result)
        if verdict == "fail":
            return 0
        if result.outcome == "hurts":
            return 1
        return 2 if verdict == "inconclusive" or changed(result) or unlearnable(result) or result.portable else 3
    return sorted((r for r in ordered if rank(r) < 3), key=rank)


def _name(result: ItemRecord) -> str:
    test = f", hand-written test {(result.item or '').split('::')[-1]}" if is_hand_written(result) else ""
    return f"{result.seed} ({result.source} -> {result.target}{test})"


def _reason(result: ItemRecord) -> str:
    if verdict_text(result) in ("fail", "inconclusive"):
        return failure_reason(result)
    compare = result.compare or {}
    if changed(result) and compare.get("message"):
        return str(compare["message"])
    gates = result.gate.gates if result.gate else ()
    return gate_reason(gates[0]) if gates else f"gain {gain_text(result)}"


def why_lines(result: ItemRecord) -> list[str]:
    """The checks newly missed (task counts) and the learned lines each points at, or the lines the nights changed."""
    found = why(result)
    lines = []
    for check in found["checks"]:
        pointed = "; ".join(_code(line, LINE_CHARS) for line in check["lines"])
        mentions = "; ".join(_code(line, LINE_CHARS) for line in check.get("mentions", []))
        lines.append(f"- {found['kind']}: {_code(check['check'])} on **{check['tasks']} of {check['of']} tasks**"
                     + (f" ← may be caused by learned: {pointed}" if pointed else "")
                     + (f" (mentioned, not blamed: {mentions})" if mentions else ""))
    if not any(c["lines"] for c in found["checks"]):
        learned = found["learned_lines"]
        lines.append("- learned lines: " + ("; ".join(_code(line, LINE_CHARS) for line in learned[:4])
                                            + (f" (+{len(learned) - 4} more)" if len(learned) > 4 else "")
                                            if learned else "none (no night was accepted)"))
    return lines


def failure_sections(ordered: list[ItemRecord]) -> list[str]:
    """A short section per failed, hurting or inconclusive item: why, the scores, the commands."""
    lines = []
    for result in flagged(ordered):
        direct = result.direct_target
        verdict = verdict_text(result)
        word = (verdict if verdict in ("fail", "inconclusive") else "hurts" if result.outcome == "hurts"
                else "changed" if changed(result) else "unlearnable as written?" if unlearnable(result)
                else "portable skill")
        notes = [text for text in (portable_text(result), unlearnable(result) and unlearnable_text(result)) if text]
        lines += [f"### {word}: {_name(result)}", "",
                  f"- **{_cell(_reason(result))}**", *(f"- {_cell(text)}" for text in notes), *why_lines(result),
                  f"- on {result.target}: baseline {result.baseline_target:.2f} -> transferred "
                  f"{result.transferred:.2f}" + ("" if direct is None else f" (direct {direct:.2f})")
                  + f"; gain {gain_text(result)}, p = {p_text(result.gain.p_value)}"]
        lines += cause_markdown(result)
        lines += rerun_lines(result)
        lines.append("")
    return ["## Needs a look", "", *lines] if lines else []


def cause_markdown(result: ItemRecord) -> list[str]:
    """The cause of a change against the base ref: checks newly missed, the seed's diff, the accept line."""
    from .comparison import accept_commands, label, learned_diff, moved_record, newly_missed

    compare = moved_record(result)
    cause = compare.get("cause")
    if cause is None:
        return []
    tasks = cause.get("tasks", [])
    lines = [f"- **cause, {label(compare)}**: transferred "
             f"{'-' if compare.get('before') is None else format(compare['before'], '.2f')} -> {compare['after']:.2f}"]
    if tasks:
        lines.append(f"  - checks newly missed on the {len(tasks)} task(s) lower than at {compare['ref']}: "
                     + ", ".join(f"{_code(check)} ({n})" for check, n in newly_missed(cause)))
    diff = cause.get("seed_diff") or ""
    if diff:
        lines += [f"  - the seed's files {label(compare)}:", "", "```diff", *diff.splitlines(), "```", ""]
    else:
        lines.append(f"  - the seed's files are as at {compare['ref']}: the change is elsewhere (models, options, "
                     "cassettes)")
    learned = learned_diff(result)
    if learned:
        lines += ["  - the learned skill now against the one at the ref:", "", "```diff", *learned, "```", ""]
    lines += [f"  - {what}: {_code(text, len(text))}" for what, text in accept_commands(result)]
    return lines


def narrow_table(ordered: list[ItemRecord], holm: dict[tuple[str, str, str], str]) -> list[str]:
    """seed | pair | gain [95% CI] | outcome (after Holm) | verdict: flagged items first."""
    first = flagged(ordered)
    rows = first + [r for r in ordered if r not in first]
    lines = ["| seed | pair | gain [95% CI] | outcome (run family) | verdict |", "|---|---|---|---|---|"]
    for r in rows:
        seed = r.seed + (" (hand-written test)" if is_hand_written(r) else "")
        outcome = holm.get(_key(r), r.outcome or "")
        lines.append(f"| {_cell(seed)} | {r.source}->{r.target} | {gain_text(r)} | "
                     f"{'**hurts**' if outcome == 'hurts' else outcome} | {_bold(verdict_text(r))} |")
    return lines + [""]


def outcome_line(ordered: list[ItemRecord], summary: dict[str, Any]) -> str:
    """The counts of the rows' words in the run's family, hand-written tests named apart, and the dollars."""
    counts = summary["outcomes"]
    hurt = f"**{counts['hurts']} hurt**" if counts["hurts"] else "0 hurt"
    hand = [r for r in ordered if is_hand_written(r)]
    total = [r.cost.total_usd for r in ordered]
    usd = "n/a" if any(v is None for v in total) else f"{sum(total):.4f}"
    from .report import alone_text, family_text, same_answers_text, undecidable_text

    return (f"**Outcome, {family_text(summary)}, over {summary['hypotheses']} (seed, pair)"
            f"{same_answers_text(summary)}:** {counts['transfers']} transfer, "
            f"{hurt}{alone_text(summary.get('shown_alone', 0))}, {counts['no effect shown']} no effect shown"
            f"{undecidable_text(summary.get('undecidable', 0), why=False)}"
            + (f" · {len(hand)} hand-written test(s), each counted once with the matrix item of its seed and pair"
               if hand else "") + f" · cost ${usd}")


def rerun_lines(result: ItemRecord) -> list[str]:
    from .rerun import rerun_commands

    return [f"- {what}: {_code(command, len(command))}" for what, command in rerun_commands(result)]


def _spend(ordered: list[ItemRecord], errors: list[dict[str, Any]] | None = None) -> list[str]:
    """Cost per phase, role and lane (errored items' spend included); the source frontier as a code block
    (it is a fixed-width table)."""
    from ..evidence.frontier import frontier, frontier_lines
    from ..evidence.summary import bill, unique
    from ..pricing.cost_breakdown import breakdown_lines

    items = unique(ordered)
    lines = [f"- {line}" for line in breakdown_lines(bill(items, errors))]
    table = frontier_lines(frontier(items))
    if table:
        lines += ["", "## Source frontier", "", "```", *table, "```"]
    return lines + ([""] if lines else [])


def render(results: list[ItemRecord], errors: list[dict[str, Any]] | None = None) -> str:
    """The whole report, control and bidi characters escaped visibly."""
    errors = list(errors or [])
    if not results and not errors:
        return "# Skill transfer\n\nNo transfer items ran.\n"
    ordered = sorted(results, key=_key)
    lines = headline(ordered, errors)
    summary = summarize(ordered) if ordered else None
    if summary:
        lines += [outcome_line(ordered, summary), ""]
    lines += error_lines(errors)
    lines += failure_sections(ordered)
    if ordered:
        lines += narrow_table(ordered, holm_outcomes(summary))
        lines += portable_markdown(ordered)
    details = details_lines(ordered, errors)
    if details:
        lines += ["<details><summary>Details: gates, the full table, the gain chart, spend, judges</summary>", "",
                  *details, "</details>", ""]
    return safe("\n".join(lines))


def error_lines(errors: list[dict[str, Any]]) -> list[str]:
    """The errored items first (they have no result), each with the command that fixes it when there is one."""
    if not errors:
        return []
    from ..pricing.cost_breakdown import errored_spend

    lines = [f"## Errored items ({len(errors)})", ""]
    for e in errors:
        lines.append(f"- `{e['item']}` ({e['source']} -> {e['target']}, at {e['when']}{errored_spend(e)}): "
                     f"{_cell(e['reason'])}")
        if e.get("command"):
            lines.append(f"  - fix: {_code(e['command'], len(e['command']))}")
    seeds = sorted({e["seed"] for e in errors if e.get("command") and e.get("seed")})
    if seeds:
        lines += ["", "Re-record every item of a seed in one command:", "",
                  *(f"- `python -m pytest_skilltransfer rerecord {seed}`" for seed in seeds)]
    return lines + [""]


def run_check_lines(ordered: list[ItemRecord], top: int = 10) -> list[str]:
    """The checks missed most with the learned skill across the (seed, pair) items, per arm."""
    rows = [r for r in run_checks(ordered) if r["transferred"] or r["baseline"]][:top]
    if not rows:
        return []
    lines = ["## Checks missed most", "", "_missed held-out tasks summed over the (seed, pair) items; items: those "
             "whose transferred arm misses it_", "", "| check | items | baseline | transferred | direct | change |",
             "|---|---|---|---|---|---|"]
    lines += [f"| {_cell(_code(r['check']))} | {r['items']} | {r['baseline']} | {r['transferred']} | {r['direct']} | "
              f"{r['change']:+d} |" for r in rows]
    return lines + [""]


def details_lines(ordered: list[ItemRecord], errors: list[dict[str, Any]] | None = None) -> list[str]:
    """Everything below the first screen."""
    lines = gate_lines(ordered)
    if ordered:
        lines += [summary_line(ordered).strip("= "), "", *_table(ordered), "", f"_{legend(ordered)}_", ""]
        lines += [f"- {line}" for line in pair_lines(ordered)] + [""]
        lines += chart(ordered)
        lines += run_check_lines(ordered)
    difference = price_difference(ordered)
    if difference:
        lines += [difference, ""]
    lines += _spend(ordered, errors)
    unfinished = [(r, text) for r in ordered if (text := unfinished_answers(r))]
    if unfinished:
        lines += ["## Unfinished answers", ""]
        lines += [f"- **{r.seed}** ({r.source} -> {r.target}): {text}" for r, text in unfinished]
        lines.append("")
    lines += _against_base(ordered)
    if judge_lines(ordered):
        lines += ["## Rubric judges", ""]
        for result in ordered:
            for line in judge_lines([result]):
                lines.append(f"- {line.strip()}".replace("\n  warning:", " — **warning**:"))
                lines += [f"  - unstable: {text}" for text in unstable_lines(result)]
        lines.append("")
    return lines
