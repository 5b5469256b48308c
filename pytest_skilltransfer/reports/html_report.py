"""The HTML report (`--skilltransfer-html`, `merge --html`, `html REPORT.json`): one self-contained page.

A pure function of the JSON report (`result_json.run_report` plus the run's own fields), so a page
rebuilt later from a JSON file, or from merged shards, equals the page the run wrote, but for one section
the JSON does not hold: a run that recorded adds how it went (`run_standing`: when it ended, its wall time,
the round trips it took). While such a run goes, `render_running` is its page (`plugin.live_page`). Everything is
inline: CSS, an SVG chart, a small script; a Content-Security-Policy forbids any fetch, so the file
opens from disk, a CI artifact or a static host alike. It reads with JavaScript off: drill-down is
`<details>`, the "tasks that differ" filter is a CSS checkbox; the script only adds sorting, the
outcome / verdict filters, and the answers: each item's answers per task are stored compressed
(`answer_store`) and unfolded when the item is opened, so a page of hundreds of items stays small; without
JavaScript a note stands in their place.

Control and bidi characters from tasks, skills and answers are written as visible escapes (`guards.terminal`).

First screen (for a reviewer with ten seconds), why first: one count (the (seed, pair) outcomes after Holm,
as the summary line counts them; the matrix items' gate verdicts; hand-written tests apart), dollars, then
"Needs a look": each failed, hurting, inconclusive or changed item with the gate's one-line reason, the
checks newly missed (task counts), the learned lines they point at (`why`) and the rerun / accept
command; a search box over items and tasks (JavaScript only; the page reads without it). Below: the
summary line and per-pair aggregate, the checks missed most across the run, one chart of every matrix
item's gain with its 95% interval, the items table, the hand-written tests apart, the source frontier,
spend (and the budget), a plan when the report has one. Then one folded section per item (for the
engineer with ten minutes): gates and their messages, the three scores with intervals, checks x arms,
the task x arm matrix with each task's answers side by side and the checks they missed, the learned
skill as a diff against the seed's, the nights, cost per role and phase, restarts, before -> after
against the base.
"""

from __future__ import annotations

from typing import Any, Iterable

from ..engine.gate_specs import chart_gates
from ..evidence.frontier import comparison_lines, frontier_rows, frontier_title
from ..evidence.run_family import kind
from ..evidence.item_record import ItemRecord, records
from ..evidence.summary import spent_by_errors, summarize
from ..pricing.cost_breakdown import breakdown_lines, errored_spend
from .html_item import item_section
from .run_standing import Standing, html_section
from .html_parts import (
    CSP,
    CSS,
    OUTCOMES,
    SCRIPT,
    _changed,
    _chip,
    _label,
    _outcome_class,
    _table,
    _test_name,
    _verdict,
    _verdict_chip,
    anchor,
    esc,
    holm_outcome_of,
    outcome_of,
    reason,
)
from .report import (
    clusters_text,
    family_text,
    gain_text,
    mdg_text,
    p_text,
    pair_lines,
    summary_line,
    usd_text,
)
from .comparison import accept_commands, label, learned_diff, moved_record, newly_missed
from .why import (
    CAUSE_RULE,
    holm_outcomes,
    is_hand_written,
    portable_text,
    run_checks,
    unlearnable,
    unlearnable_text,
    why,
)

CHART_WIDTH = 420  # px of the -1 .. +1 axis
ROW_HEIGHT = 18
LABEL_WIDTH = 330  # px for item labels at least; more up to MAX_LABEL_WIDTH when a label needs it
MAX_LABEL_WIDTH = 600


RUN_CHECKS = 10  # the run's most missed checks shown on the page


def attention_first(results: list[ItemRecord]) -> list[ItemRecord]:
    """Failed, hurting and changed items first, then the rest; stable by seed and pair."""
    def rank(r: ItemRecord) -> int:
        if _verdict(r) == "fail":
            return 0
        if outcome_of(r) == "hurts":
            return 1
        if _changed(r) or _verdict(r) == "inconclusive":
            return 2
        return 3
    ordered = sorted(results, key=lambda r: (r.seed, r.source, r.target, r.item or ""))
    return sorted(ordered, key=rank)


def _tally(values: Iterable[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    return counts


def _summary(report: dict[str, Any], results: list[ItemRecord]) -> dict[str, Any]:
    """The report's run summary (Holm-adjusted outcomes, spend, frontier); recomputed for a report without one."""
    return report.get("summary") or summarize(results)


def headline(report: dict[str, Any], results: list[ItemRecord]) -> str:
    """The one count: (seed, pair) outcomes after Holm, the gates of the matrix items, hand-written tests
    apart, errors, dollars."""
    errors = report.get("errors") or []
    summary = _summary(report, results) if results else {"outcomes": {}, "hypotheses": 0}
    outcomes = summary["outcomes"]
    matrix = [r for r in results if not is_hand_written(r)]
    hand = [r for r in results if is_hand_written(r)]
    verdicts = _tally(_verdict(r) for r in matrix)
    if errors:
        verdicts["errored"] = len(errors)
    paid = [*(r.cost.to_json() for r in results), *(e["cost"] for e in spent_by_errors(errors))]  # errored items'
    usd = [cost.get("total_usd") for cost in paid]  # spend stays in the bill
    dollars = "n/a (unpriced model)" if any(u is None for u in usd) else f"${sum(usd):.4f}"
    calls = sum(cost.get("calls", 0) for cost in paid)
    outcome_chips = " ".join(f'<span data-count="{esc(o)}">{_chip(f"{outcomes.get(o, 0)} {o}", _outcome_class(o))}</span>'
                             for o in OUTCOMES)
    verdict_chips = " ".join(_chip(f"{n} {v}", "v-" + v.replace(" ", "-")) for v, n in sorted(verdicts.items()))
    hand_text = ""
    if hand:
        hand_verdicts = ", ".join(f"{n} {v}" for v, n in sorted(_tally(_verdict(r) for r in hand).items()))
        hand_text = (f'<p class="counts"><b>Hand-written tests</b> {_chip(f"{len(hand)} test(s)", "hand")} '
                     f'<span class="muted">gates {esc(hand_verdicts)}; shown apart below; a test on the seed and '
                     f'pair of a matrix item is that (seed, pair) again and is counted once</span></p>')
    return (f'<h1>Skill transfer: {summary["hypotheses"]} (seed, pair)'
            f'{f" + {len(hand)} hand-written test(s)" if hand else ""}'
            f'{f" + {len(errors)} errored" if errors else ""}</h1>'
            f'<p class="counts"><b>Outcome</b>, {esc(family_text(summary))}, over {summary["hypotheses"]} (seed, pair): '
            f'{outcome_chips}</p>'
            f'<p class="counts"><b>Gates</b> of the {len(matrix)} matrix item(s): {verdict_chips}</p>{hand_text}'
            f'<p class="counts"><b>Cost</b> {esc(dollars)} over {calls} call(s)</p>')


def _chart_label(result: ItemRecord) -> str:
    return _label(result)


def _text_width(text: str) -> float:
    """A generous width in px of `text` at the chart's 11px sans-serif (wide letters count more)."""
    return sum(8.5 if c in "mwMW@" else 7.5 if c.isupper() else 3.5 if c in "ilj.,:;!|' " else 6.3 for c in text)


def _cut(text: str, width: float) -> str:
    """`text` cut in its middle with an ellipsis so it fits `width` px: the seed's start and the pair's end
    stay (the whole label is the element's title)."""
    head, tail = text[: len(text) // 2], text[len(text) // 2:]
    while (head or tail) and _text_width(head + "…" + tail) > width:
        if len(head) >= len(tail):
            head = head[:-1]
        else:
            tail = tail[1:]
    return head + "…" + tail


def gain_chart(results: list[ItemRecord]) -> str:
    """An SVG forest plot: each item's gain (dot) and 95% interval (bar) on -1 .. +1, zero and thresholds marked."""
    height = ROW_HEIGHT * (len(results) + 2)
    labels = [_chart_label(r) for r in results]
    label_width = round(min(MAX_LABEL_WIDTH, max([LABEL_WIDTH, *(_text_width(label) + 16 for label in labels)])))
    width = label_width + CHART_WIDTH + 150

    def x(value: float) -> float:
        return label_width + (max(-1.0, min(1.0, value)) + 1) / 2 * CHART_WIDTH

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img" aria-label="gain per item with 95% intervals">']
    for tick in (-1, -0.5, 0, 0.5, 1):
        parts.append(f'<line x1="{x(tick):.1f}" y1="{ROW_HEIGHT - 4}" x2="{x(tick):.1f}" y2="{height - ROW_HEIGHT}" '
                     f'stroke="{"#57606a" if tick == 0 else "#d0d7de"}" stroke-width="{1.5 if tick == 0 else 1}"/>')
        parts.append(f'<text x="{x(tick):.1f}" y="{ROW_HEIGHT - 6}" text-anchor="middle">{tick:+g}</text>')
    colors = {"transfers": "#1a7f37", "hurts": "#cf222e"}
    for row, result in enumerate(results, start=1):
        y = ROW_HEIGHT * row + ROW_HEIGHT / 2
        gain = result.gain
        color = colors.get(outcome_of(result), "#9a6700")
        label = labels[row - 1]
        shown = label if _text_width(label) + 16 <= label_width else _cut(label, label_width - 16)
        parts.append(f'<a href="#{anchor(result)}"><text x="{label_width - 8}" y="{y + 4:.1f}" text-anchor="end">'
                     f'<title>{esc(label)}</title>{esc(shown)}</text></a>')
        for gate in result.gate.gates if result.gate else ():
            threshold, sign = gate.threshold, chart_gates().get(gate.gate)
            if sign is not None and isinstance(threshold, (int, float)):
                at = sign * threshold  # a tolerance or margin t is the line at -t
                parts.append(f'<line class="threshold" data-gate="{esc(gate.gate)}" x1="{x(at):.1f}" y1="{y - 7:.1f}" '
                             f'x2="{x(at):.1f}" y2="{y + 7:.1f}" stroke="#8250df" stroke-dasharray="2,2">'
                             f'<title>{esc(gate.gate)} {threshold:g}: gain {at:+g}</title></line>')
        parts.append(f'<line x1="{x(gain.ci_low):.1f}" y1="{y:.1f}" x2="{x(gain.ci_high):.1f}" y2="{y:.1f}" '
                     f'stroke="{color}" stroke-width="3"/>')
        parts.append(f'<circle cx="{x(gain.mean):.1f}" cy="{y:.1f}" r="4" fill="{color}">'
                     f'<title>{esc(gain_text(result))}</title></circle>')
        parts.append(f'<text x="{label_width + CHART_WIDTH + 10}" y="{y + 4:.1f}">{esc(gain_text(result))}</text>')
    parts.append("</svg>")
    return "".join(parts)


def needs_a_look(results: list[ItemRecord]) -> list[ItemRecord]:
    """The items a reviewer must look at: failed, hurt, inconclusive or changed against the base, probably
    unlearnable as written, or with a portable-skill (--validate-on) outcome."""
    return [r for r in results if _verdict(r) in ("fail", "inconclusive") or outcome_of(r) == "hurts" or _changed(r)
            or unlearnable(r) or r.portable]


def _why_item(result: ItemRecord, holm: dict[tuple[str, str, str], str]) -> str:
    """One entry of "Needs a look": the item, its reason, the checks newly missed with their task counts and the
    learned lines they point at, and the commands."""
    from .rerun import rerun_commands

    verdict, outcome = _verdict(result), holm_outcome_of(result, holm)
    css = "w-fail" if verdict == "fail" or outcome_of(result) == "hurts" else "w-changed" if _changed(result) else "w-inconclusive"
    found = why(result)
    checks = []
    for check in found["checks"]:
        lines = "".join(f'<li class="line">{esc(line)}</li>' for line in check["lines"])
        mentions = "".join(f'<li class="line">{esc(line)}</li>' for line in check.get("mentions", []))
        points = (f"; learned line(s) that may cause it:<ul>{lines}</ul>" if lines
                  else '; <span class="muted">no learned line may cause it</span>')
        points += (f'{"" if lines else "; "}<span class="muted">learned line(s) that only mention it (they point the other way, so they '
                   f'are not blamed):</span><ul>{mentions}</ul>' if mentions else "")
        checks.append(f'<li><code>{esc(check["check"])}</code> {found["kind"]} on <b>{check["tasks"]} of '
                      f'{check["of"]}</b> task(s){points}</li>')
    pointed = any(c["lines"] for c in found["checks"])
    learned = found["learned_lines"]
    accepted = ("" if pointed or not learned else
                f'<p class="muted">lines the accepted nights changed ({len(learned)}):</p><ul>'
                + "".join(f'<li class="line">{esc(line)}</li>' for line in learned[:6]) + "</ul>")
    if not learned:
        accepted = '<p class="muted">no night was accepted: the learned skill equals the seed\'s</p>'
    commands = "".join(f"<li>{esc(what)}: <code>{esc(command)}</code></li>" for what, command in rerun_commands(result))
    missed = (f"<p>checks {found['kind']} with the learned skill on the target:</p><ul>{''.join(checks)}</ul>"
              if checks else '<p class="muted">no check is missed with the learned skill</p>')
    return (f'<li class="{css}" data-item="{anchor(result)}"><a href="#{anchor(result)}"><b>{esc(_label(result))}</b></a> '
            f'{_chip(outcome, _outcome_class(outcome))} {_verdict_chip(verdict)} gain {esc(gain_text(result))}'
            f'<p><b>{esc(reason(result))}</b></p>{_notes(result)}{cause_block(result)}{missed}{accepted}'
            + (f"<ul>{commands}</ul>" if commands else "") + "</li>")


def _notes(result: ItemRecord) -> str:
    """The portable skill's outcome and the unlearnable-as-written warning, when they apply."""
    notes = [text for text in (portable_text(result), unlearnable(result) and unlearnable_text(result)) if text]
    return "".join(f'<p class="note">{esc(text)}</p>' for text in notes)


def _diff_pre(lines: list[str]) -> str:
    css = {"+": "add", "-": "del", "@": "hunk"}
    return '<pre class="diff">' + "\n".join(f'<span class="{css.get(line[:1], "")}">{esc(line)}</span>'
                                              for line in lines) + "</pre>"


def cause_block(result: ItemRecord) -> str:
    """The cause of a change against the base ref (`--compare-to`), side by side: the seed's diff from the ref
    beside the checks newly missed on the tasks that dropped (with their scores), and the learned skill's
    change; the line that accepts a regression on purpose first."""
    compare = moved_record(result)
    cause = compare.get("cause")
    if cause is None:
        return ""
    tasks = cause.get("tasks", [])
    before = "-" if compare.get("before") is None else f"{compare['before']:.2f}"
    checks = "".join(f"<li><code>{esc(check)}</code> on <b>{n} of {len(tasks)}</b> task(s)</li>"
                     for check, n in newly_missed(cause))
    rows = "".join(f'<tr><td>{esc(t["task"])}</td><td class="num">{t["before"]:g}</td><td class="num">{t["after"]:g}'
                   f'</td><td><code>{esc(", ".join(t["missed"]) or "none")}</code></td><td>'
                   + ("-" if t.get("answer") is None else
                      f'<details><summary>{esc(" ".join(t["answer"].split())[:40])}…</summary><pre>{esc(t["answer"])}'
                      "</pre></details>") + "</td></tr>" for t in tasks[:8])
    more = f'<p class="muted">{len(tasks) - 8} more task(s) in the item below</p>' if len(tasks) > 8 else ""
    missed = (f"<p>checks newly missed on the {len(tasks)} task(s) lower than at {esc(compare.get('ref', ''))}:</p>"
              f"<ul>{checks}</ul><table><tr><th>task</th><th>before</th><th>after</th><th>misses now</th>"
              f"<th>answer now</th></tr>{rows}"
              f"</table>{more}" if tasks else '<p class="muted">no task scores lower than at the ref</p>')
    diff = (cause.get("seed_diff") or "").splitlines()
    seed = (f"<p>the seed's files {esc(label(compare))} (SKILL.md, tasks, seed.toml):</p>{_diff_pre(diff)}" if diff
            else f'<p class="muted">the seed\'s files are as at {esc(compare.get("ref", "the ref"))}: the change is '
                 "elsewhere (models, options, cassettes)</p>")
    learned = learned_diff(result)
    moved = f"<p>the learned skill now against the one at the ref:</p>{_diff_pre(learned)}" if learned else ""
    accept = "".join(f"<li>{esc(what)}: <code>{esc(text)}</code></li>" for what, text in accept_commands(result))
    return (f'<div class="cause"><p><b>cause, {esc(label(compare))}</b>: transferred {before} -&gt; '
            f'{compare["after"]:.2f}</p>' + (f"<ul>{accept}</ul>" if accept else "")
            + f'<div class="cause-grid"><div>{seed}</div><div>{missed}{moved}</div></div></div>')


def _attention(results: list[ItemRecord], holm: dict[tuple[str, str, str], str]) -> str:
    """"Needs a look": each failed, hurting, inconclusive or changed item and why."""
    flagged = needs_a_look(results)
    if not flagged:
        return ("<p>No item failed, hurt its target or changed against the base; none is unlearnable as written "
                "or has a portable-skill outcome.</p>")
    return ('<ul class="why">' + "".join(_why_item(r, holm) for r in flagged) + "</ul>"
            f'<p class="muted rule">How a learned line is matched to a check: {esc(CAUSE_RULE)}</p>')


def _items_table(results: list[ItemRecord], holm: dict[tuple[str, str, str], str], hand: bool = False) -> str:
    clustered = any(clusters_text(r) for r in results)
    head = ("seed", *(("test",) if hand else ()), "pair", "baseline", "transferred", "direct", "gain [95% CI]", "p",
            "mdg", *(("clusters",) if clustered else ()), "outcome (run family)", "gates", "$")
    rows = []
    for r in results:
        clusters = f'<td class="num">{esc(clusters_text(r) or "-")}</td>' if clustered else ""
        test = f"<td><code>{esc(_test_name(r))}</code></td>" if hand else ""
        outcome, verdict = holm_outcome_of(r, holm), _verdict(r)
        direct = (f"{r.direct_target:.2f}" if r.direct_target is not None
                  else '<span title="direct reference on demand: the transferred skill shows a gain">not needed</span>'
                  if r.direct_skipped else "-")
        rows.append(
            f'<tr class="{"hand-row" if hand else "item-row"}" data-item="{anchor(r)}" data-outcome="{esc(kind(outcome))}" '
            f'data-verdict="{esc(verdict)}">'
            f'<td><a href="#{anchor(r)}">{esc(r.seed)}</a></td>{test}<td>{esc(r.source)} -&gt; {esc(r.target)}</td>'
            f'<td class="num">{r.baseline_target:.2f}</td><td class="num">{r.transferred:.2f}</td>'
            f'<td class="num">{direct}</td><td class="num" data-v="{r.gain.mean}">{esc(gain_text(r))}</td>'
            f'<td class="num" data-v="{r.gain.p_value}">{p_text(r.gain.p_value)}</td>'
            f'<td class="num">{mdg_text(r)}</td>{clusters}<td>{_chip(outcome, _outcome_class(outcome))}</td>'
            f'<td>{_verdict_chip(verdict)}</td>'
            f'<td class="num">{esc(usd_text(r.cost.total_usd))}</td></tr>')
    return ('<table class="sortable"><thead><tr>' + "".join(f"<th>{h}</th>" for h in head) + "</tr></thead><tbody>"
            + "".join(rows) + "</tbody></table>")


def _filters(results: list[ItemRecord], holm: dict[tuple[str, str, str], str]) -> str:
    counts = _tally([kind(holm_outcome_of(r, holm)) for r in results] + [_verdict(r) for r in results])
    buttons = ["all", *OUTCOMES, "fail", "inconclusive", "unchanged vs snapshot", "no gate"]
    return ('<p class="filters">Show: ' + " ".join(
        f'<button type="button" data-filter="{esc(b)}">{esc(b)}'
        f'{"" if b == "all" else f" ({counts.get(b, 0)})"}</button>' for b in buttons)
            + ' <noscript><span class="muted">(filters need JavaScript; everything is shown)</span></noscript></p>')


def _search() -> str:
    """A search box over items and tasks (labels, task ids, answers); shown only when JavaScript runs."""
    return ('<p class="js-only"><label>Search items and tasks: <input type="search" id="search" '
            'placeholder="seed, model, task id, answer text" autocomplete="off"></label> '
            '<span id="search-note" class="muted"></span></p>')


def run_check_table(rows: list[dict[str, Any]]) -> str:
    """The checks missed most with the learned skill across the run's (seed, pair) items."""
    rows = [r for r in rows if r["transferred"] or r["baseline"]][:RUN_CHECKS]
    if not rows:
        return "<p>No check was missed in any item.</p>"
    body = "".join(
        f'<tr><td><code>{esc(r["check"])}</code></td><td class="num">{r["items"]}</td><td class="num">{r["baseline"]}</td>'
        f'<td class="num">{r["transferred"]}</td><td class="num">{r["direct"]}</td>'
        f'<td class="num {"worse" if r["change"] > 0 else "better" if r["change"] < 0 else ""}">{r["change"]:+d}</td></tr>'
        for r in rows)
    return ('<table class="checks run-checks"><caption class="muted">missed tasks summed over the (seed, pair) items; '
            'items: those whose transferred arm misses it</caption><tr><th>check</th><th>items</th><th>baseline</th>'
            f"<th>transferred</th><th>direct</th><th>change</th></tr>{body}</table>")


def _errors(errors: list[dict[str, Any]]) -> str:
    if not errors:
        return ""
    rows = "".join(f"<li><code>{esc(e.get('item', ''))}</code> ({esc(e.get('source', ''))} -&gt; "
                   f"{esc(e.get('target', ''))}, at {esc(e.get('when', ''))}{esc(errored_spend(e))}): "
                   f"{esc(e.get('reason', ''))}"
                   + (f"<br>fix: <code>{esc(e['command'])}</code>" if e.get("command") else "") + "</li>"
                   for e in errors)
    seeds = sorted({e["seed"] for e in errors if e.get("command") and e.get("seed")})
    every = "".join(f"<li>every item of {esc(seed)}: <code>python -m pytest_skilltransfer rerecord {esc(seed)}</code></li>"
                    for seed in seeds)
    return (f'<h2 id="errored">Errored items ({len(errors)})</h2><p>These items have no result: no count below '
            f"includes them.</p><ul class=\"errors\">{rows}</ul>"
            + (f"<p>re-record in one command per seed:</p><ul>{every}</ul>" if every else ""))


def spend_section(report: dict[str, Any], summary: dict[str, Any]) -> str:
    """Dollars by phase, role and lane (shared phases once), the optimization comparison, and the budget."""
    costs = summary.get("cost") or {}
    parts = []
    for what, key in (("phase", "by_phase"), ("role", "by_role"), ("lane", "by_lane")):
        values = costs.get(key) or {}
        if values:
            parts.append(_table([(what, "$"), *((name, usd_text(usd)) for name, usd in values.items())]))
    optimization = costs.get("optimization") or {}
    if optimization:
        ratio = optimization.get("direct_over_source")
        parts.append(f"<p>optimization on the source ${esc(usd_text(optimization.get('source_usd')))} vs direct on "
                     f"the target ${esc(usd_text(optimization.get('direct_usd')))}"
                     + ("" if ratio is None else f" ({ratio:.1f}x)") + "</p>")
    budget = report.get("budget")
    if budget:
        parts.append("<h3>Budget</h3>" + _table([("limit $", "charged $", "in flight $", "live calls",
                                                   "charged in full", "refused"),
                                                  tuple(human(budget.get(k, "-")) for k in (
                                                      "limit_usd", "charged_usd", "in_flight_usd", "live_calls",
                                                      "charged_in_full", "refused"))]))
    lines = breakdown_lines(costs) if costs else []
    note = "" if lines or not costs else '<p class="muted">every model in this run is free (cost $0)</p>'
    return ('<div class="spend" style="display:flex;gap:16px;flex-wrap:wrap;align-items:flex-start">'
            + "".join(f"<div>{p}</div>" for p in parts) + f"</div>{note}") if parts else ""


def frontier_section(summary: dict[str, Any]) -> str:
    """The source frontier of every target tried with several sources."""
    blocks = [b for b in summary.get("frontier") or [] if len(b["sources"]) >= 2]
    return "".join(f"<h3>{esc(frontier_title(b))}</h3>{_table(frontier_rows(b))}"
                   f"<pre>{esc(chr(10).join(comparison_lines(b)))}</pre>" for b in blocks)


def human(value: Any) -> str:
    """A number as a person reads it: floats to 4 decimals (dollars to the cent's hundredth), whole counts with
    thousands separated; anything else as text."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "" if value is None else str(value)
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:,.4f}" if abs(value) < 1000 else f"{value:,.2f}"


def _plan_rows(rows: list[dict[str, Any]]) -> str:
    keys = list(dict.fromkeys(k for row in rows if isinstance(row, dict) for k in row))
    return _table([tuple(keys), *(tuple(human(row.get(k, "")) for k in keys) for row in rows if isinstance(row, dict))])


def plan_section(report: dict[str, Any]) -> str:
    """The plan the report carries (`--plan --skilltransfer-json`): the total, the lanes, where the money goes
    (by pair, phase, role and model) and each item; older reports' plain rows as a table."""
    plan = report.get("plan")
    if not plan:
        return ""
    if not isinstance(plan, dict) or "total" not in plan:
        rows = plan if isinstance(plan, list) else [plan]
        return _plan_rows(rows) if any(isinstance(row, dict) for row in rows) else f"<pre>{esc(plan)}</pre>"
    parts = [f"<p>prices of {esc(plan.get('prices_effective', '?'))}; expected and upper bound in dollars</p>",
             "<h3>Total</h3>", _plan_rows([plan["total"]])]
    if plan.get("lanes"):
        parts += ["<h3>By lane</h3>", _plan_rows([{"lane": lane, **figures} for lane, figures in plan["lanes"].items()])]
    for name, table in (plan.get("breakdown") or {}).items():
        parts += [f"<h3>{esc(name.replace('_', ' '))}</h3>",
                  _plan_rows([{name.removeprefix('by_'): key, **figures} for key, figures in table.items()])]
    if plan.get("items"):
        parts += ["<h3>Items</h3>", _plan_rows(plan["items"])]
    return "".join(parts)


def render(report: dict[str, Any], history: str = "", standing: Standing | None = None) -> str:
    """The whole page from a JSON report; `history`: the history section (`reports.history_view.html_section`, read
    from git by `html --history`), placed before the items' sections; `standing`: the run's own section (when it
    ended, its wall time and round trips: `reports.run_standing`), written by the run that recorded, not in the JSON."""
    results = attention_first(records(report.get("results") or []))
    errors = list(report.get("errors") or [])
    body = [headline(report, results)]
    stopped = report.get("interrupted")
    if stopped:
        body.append(f'<p class="interrupted"><strong>Interrupted ({esc(stopped["by"])})</strong>: '
                    f'${stopped["paid_usd"]:.4f} paid for {stopped["answers"]} answer(s) recorded; '
                    f'{esc(stopped["resume"])}</p>')
    if standing is not None:
        body.append(html_section(standing))
    body.append(_errors(errors))
    if results:
        summary = _summary(report, results)
        holm = holm_outcomes(summary)
        matrix = [r for r in results if not is_hand_written(r)]
        hand = [r for r in results if is_hand_written(r)]
        body += ["<h2>Needs a look</h2>", _attention(results, holm), _search(),
                 "<h2>Summary</h2>", f"<p>{esc(summary_line(results).strip('= '))}</p>",
                 "<ul>" + "".join(f"<li>{esc(line)}</li>" for line in pair_lines(results)) + "</ul>",
                 "<h2>Checks missed most</h2>", run_check_table(report.get("checks") or run_checks(results)),
                 "<h2>Gain per item</h2>",
                 '<p class="muted">dot: gain transferred - baseline; bar: its 95% interval; dark line: zero; '
                 'dashed: a gate threshold</p>', gain_chart(matrix),
                 "<h2>Items</h2>", '<p class="muted">outcome in the run family (Bonferroni over the (seed, pair) items), as counted above; '
                 'the gain column is each item\'s own interval</p>', _filters(matrix, holm), _items_table(matrix, holm)]
        if hand:
            body += ["<h2>Hand-written tests</h2>",
                     '<p class="muted">tests calling the transfer fixture; one on the seed and pair of a matrix item '
                     'is the same (seed, pair) and is counted once</p>', _items_table(hand, holm, hand=True)]
        frontier, spend, plan = frontier_section(summary), spend_section(report, summary), plan_section(report)
        body += ["<h2>Source frontier</h2>", frontier] if frontier else []
        body += ["<h2>Spend</h2>", spend] if spend else []
        body += ["<h2>Plan</h2>", plan] if plan else []
        body += ["<h2>History: gain over commits</h2>", history] if history else []
        body += ["<h2>Per item</h2>", *(item_section(r, holm) for r in results)]
    elif report.get("plan"):
        body += ["<h2>Plan</h2>", '<p class="muted">no model was called: what the run would send and cost</p>',
                 plan_section(report)]
    else:
        body.append("<p>No transfer item produced a result.</p>")
    if history and not results:
        body += ["<h2>History: gain over commits</h2>", history]
    return _page("Skill transfer report", body)


def _page(title: str, body: list[str], head: str = "") -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">{head}'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{title}</title><style>{CSS}</style></head><body>"
            + "\n".join(body) + f"<script>{SCRIPT}</script></body></html>\n")


def render_running(results: list[ItemRecord], errors: list[dict[str, Any]], standing: Standing,
                   refresh_s: float) -> str:
    """The page of a running run: where it stands (`run_standing.html_section`: items, round trips left, ETA, a
    rate-limit wait), the items finished so far with their own gain and gate, and those that errored; the browser
    reloads it every `refresh_s` seconds. The run's outcomes over the whole family, its summary and the items'
    sections come with the finished page (they are claims about every item)."""
    matrix = attention_first(results)
    rows = "".join(
        f'<tr><td>{esc(r.seed)}</td><td>{esc(r.source)} -&gt; {esc(r.target)}</td>'
        f'<td class="num">{r.baseline_target:.2f}</td><td class="num">{r.transferred:.2f}</td>'
        f'<td class="num">{esc(gain_text(r))}</td><td>{_verdict_chip(_verdict(r))}</td>'
        f'<td class="num">{esc(usd_text(r.cost.total_usd))}</td></tr>' for r in matrix)
    finished = ("<h2>Items finished so far</h2>"
                '<p class="muted">each item\'s own gain and gates; the outcomes over the run\'s family of items, the '
                "summary and each item's details come when the run has finished</p>"
                "<table><thead><tr><th>seed</th><th>pair</th><th>baseline</th><th>transferred</th>"
                f"<th>gain [95% CI]</th><th>gates</th><th>$</th></tr></thead><tbody>{rows}</tbody></table>"
                if matrix else "<p>No item has finished yet.</p>")
    reload_s = max(1, round(refresh_s))
    body = [f"<h1>Skill transfer: running, {standing.items_done} of {standing.items} item(s) done</h1>",
            html_section(standing, reload_s), _errors(errors), finished]
    return _page("Skill transfer report (running)", body, f'<meta http-equiv="refresh" content="{reload_s}">')
