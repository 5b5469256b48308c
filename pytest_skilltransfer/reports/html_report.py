"""The HTML report (`--skilltransfer-html`, `merge --html`, `html REPORT.json`): one self-contained page.

A pure function of the JSON report (`result_json.run_report` plus the run's own fields), so a page
rebuilt later from a JSON file, or from merged shards, equals the page the run wrote. Everything is
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

import base64
import difflib
import hashlib
import html
import re
import zlib
from typing import Any, Iterable

from ..evidence.frontier import comparison_lines, frontier_rows, frontier_title
from ..evidence.summary import summarize
from ..guards.terminal import safe
from ..pricing.cost_breakdown import breakdown_lines
from .report import (
    clusters_text,
    design_effect_text,
    failure_reason,
    gain_text,
    gate_reason,
    mdg_text,
    night_verdict,
    p_text,
    pair_lines,
    summary_line,
    these_text,
    units_text,
    usd_text,
    verdict_text,
)
from .why import changed, check_arms, holm_outcomes, is_hand_written, run_checks, why

ARMS = ("baseline", "transferred", "direct")
OUTCOMES = ("hurts", "transfers", "no effect shown")
CHART_WIDTH = 420  # px of the -1 .. +1 axis
ROW_HEIGHT = 18
LABEL_WIDTH = 330
FOLD_CHARS = 1200  # longer answers are folded
FOLDED_NOTE = ("Answers folded away: each task's answers, stop reasons and missed checks are stored compressed in "
               "this page and appear here when the item is opened with JavaScript on. Without JavaScript, the task x "
               "arm matrix above gives each task's result and the JSON report keeps the answers.")

CSS = """
:root{--ok:#1a7f37;--bad:#cf222e;--mid:#9a6700;--muted:#57606a;--line:#d0d7de;--bg:#f6f8fa}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:1180px;padding:12px 20px;color:#1f2328}
h1{font-size:20px;margin:8px 0}h2{font-size:16px;margin:18px 0 6px;border-bottom:1px solid var(--line)}
h3{font-size:14px;margin:12px 0 4px}
code,pre{font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,monospace}
pre{background:var(--bg);padding:6px 8px;overflow:auto;white-space:pre-wrap;margin:4px 0}
table{border-collapse:collapse;margin:4px 0}td,th{border:1px solid var(--line);padding:2px 6px;text-align:left;vertical-align:top}
th{background:var(--bg)}td.num{text-align:right;font-variant-numeric:tabular-nums}
.chip{display:inline-block;padding:0 6px;border-radius:9px;font-size:12px;border:1px solid var(--line);white-space:nowrap}
.o-transfers,.v-pass,.t-pass{background:#dafbe1;color:var(--ok)}.o-hurts,.v-fail,.t-fail{background:#ffebe9;color:var(--bad)}
.o-none,.v-inconclusive{background:#fff8c5;color:var(--mid)}.v-no-gate,.v-unchanged-vs-snapshot,.hand{background:#eaeef2;color:var(--muted)}.v-errored{background:#ffebe9;color:var(--bad)}
.counts>span{margin-right:10px}caption{text-align:left}.muted{color:var(--muted)}.cluster{color:var(--muted);font-size:12px}
details{border:1px solid var(--line);border-radius:6px;margin:6px 0;padding:2px 8px}
details>summary{cursor:pointer;padding:2px 0}details[open]>summary{border-bottom:1px solid var(--line);margin-bottom:4px}
details details{border:0;border-left:3px solid var(--line);border-radius:0;margin:2px 0}
.answers{display:grid;grid-template-columns:repeat(3,minmax(0,1fr));gap:6px}
.answers>div{min-width:0}
.diff .add{background:#dafbe1}.diff .del{background:#ffebe9}.diff .hunk{color:var(--muted)}
.matrix td.t-pass,.matrix td.t-fail{text-align:center}
.differs-box:checked~table.matrix tr.same{display:none}
.why{list-style:none;padding:0}.why>li{border-left:4px solid var(--bad);padding:4px 10px;margin:6px 0;background:#fff}
.why>li.w-inconclusive,.why>li.w-changed{border-left-color:var(--mid)}
.why ul{margin:2px 0 2px 18px;padding:0}.why p{margin:3px 0}.why .line{font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,monospace;background:var(--bg)}
td.worse{color:var(--bad);font-weight:600}td.better{color:var(--ok)}
.js-only{display:none}body.js .js-only{display:block}
#search{width:340px;padding:3px 6px;font:inherit}
nav a{margin-right:10px}
svg text{font:11px system-ui,sans-serif}
"""

SCRIPT = """
(function(){
  var filters=document.querySelectorAll('[data-filter]');
  filters.forEach(function(b){b.addEventListener('click',function(){
    var f=b.getAttribute('data-filter');
    document.querySelectorAll('details.item').forEach(function(d){
      d.style.display=(f==='all'||d.getAttribute('data-outcome')===f||d.getAttribute('data-verdict')===f)?'':'none';});
    document.querySelectorAll('tr.item-row').forEach(function(r){
      r.style.display=(f==='all'||r.getAttribute('data-outcome')===f||r.getAttribute('data-verdict')===f)?'':'none';});
  });});
  document.querySelectorAll('table.sortable th').forEach(function(th,i){th.style.cursor='pointer';
    th.addEventListener('click',function(){var body=th.closest('table').tBodies[0];
      var rows=Array.prototype.slice.call(body.rows);var asc=th.getAttribute('data-asc')!=='1';
      rows.sort(function(a,b){var x=a.cells[i].getAttribute('data-v')||a.cells[i].textContent,
        y=b.cells[i].getAttribute('data-v')||b.cells[i].textContent;var nx=parseFloat(x),ny=parseFloat(y);
        var c=(!isNaN(nx)&&!isNaN(ny))?nx-ny:x.localeCompare(y);return asc?c:-c;});
      th.setAttribute('data-asc',asc?'1':'0');rows.forEach(function(r){body.appendChild(r);});});});
  function unfold(store){if(!store.unfolding){store.unfolding=Promise.resolve().then(function(){
      var bin=atob(store.getAttribute('data-z')),bytes=new Uint8Array(bin.length);
      for(var i=0;i<bin.length;i++){bytes[i]=bin.charCodeAt(i);}
      return new Response(new Blob([bytes]).stream().pipeThrough(new DecompressionStream('deflate'))).text();
    }).then(function(text){store.innerHTML=text;store.removeAttribute('data-z');},function(){
      store.insertAdjacentText('beforeend',' (This browser could not unfold them: it lacks DecompressionStream.)');});}
    return store.unfolding;}
  function unfoldItem(d){var store=d.querySelector('.answer-store[data-z]');return store?unfold(store):Promise.resolve();}
  document.querySelectorAll('details.item').forEach(function(d){
    d.addEventListener('toggle',function(){if(d.open){unfoldItem(d);}});if(d.open){unfoldItem(d);}});
  var box=document.getElementById('search'),note=document.getElementById('search-note'),everything=null;
  function has(el,q){return !!el&&el.textContent.toLowerCase().indexOf(q)>=0;}
  function search(){var q=box.value.trim().toLowerCase(),items=0,tasks=0,shown={};
    document.querySelectorAll('details.item').forEach(function(d){
      var label=!q||has(d.querySelector('summary'),q),any=false,drills={};
      d.querySelectorAll('details[data-task]').forEach(function(t){drills[t.getAttribute('data-task')]=t;});
      d.querySelectorAll('tr[data-task]').forEach(function(r){var id=r.getAttribute('data-task'),t=drills[id];
        var hit=!!q&&(has(r.cells[0],q)||has(t,q));any=any||hit;if(hit){tasks++;}
        r.style.display=(!q||label||hit)?'':'none';if(t){t.style.display=r.style.display;}});
      var show=label||any;d.style.display=show?'':'none';if(show){items++;shown[d.id]=1;}
      if(q&&any&&!label){d.open=true;}});
    document.querySelectorAll('tr.item-row').forEach(function(r){r.style.display=(!q||shown[r.getAttribute('data-item')])?'':'none';});
    note.textContent=q?(items+' item(s) shown, '+tasks+' task(s) match'):'';
    if(q&&!everything){everything=Promise.all(Array.prototype.map.call(document.querySelectorAll('details.item'),unfoldItem))
      .then(search);}}
  if(box){box.addEventListener('input',search);}
  document.body.classList.add('js');
})();
"""

CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"
RUN_CHECKS = 10  # the run's most missed checks shown on the page


def esc(text: Any) -> str:
    """Text for HTML (quotes included, so it is safe in attributes too), control and bidi characters written
    as visible escapes (`\\x1b`, `\\u202e`, as the terminal shows them), never raw."""
    return html.escape(safe(str(text)), quote=True)


def outcome_of(result: dict[str, Any]) -> str:
    """The measured outcome of the paired gain: transfers, hurts, or no effect shown."""
    if result.get("outcome"):
        return str(result["outcome"])
    gain = result["gain"]
    if gain["ci_low"] > 0:
        return "transfers"
    return "hurts" if gain["ci_high"] < 0 else "no effect shown"


def holm_outcome_of(result: dict[str, Any], holm: dict[tuple[str, str, str], str]) -> str:
    """The item's outcome after Holm's correction over the run's (seed, pair) items: what every count on the
    page counts (an item absent from the summary keeps its own outcome)."""
    return holm.get((result["seed"], result["source"], result["target"]), outcome_of(result))


def _outcome_class(outcome: str) -> str:
    return {"transfers": "o-transfers", "hurts": "o-hurts"}.get(outcome, "o-none")


def _verdict(result: dict[str, Any]) -> str:
    verdict = verdict_text(result)
    return "no gate" if verdict in ("-", "") else verdict


def _chip(text: str, css: str) -> str:
    return f'<span class="chip {css}">{esc(text)}</span>'


def _verdict_chip(verdict: str) -> str:
    return _chip(verdict, "v-" + verdict.replace(" ", "-"))


def anchor(result: dict[str, Any]) -> str:
    """A stable, readable element id for an item: seed and pair, and a digest of the node id (two tests may
    share a seed and pair)."""
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", f"{result['seed']}--{result['source']}--{result['target']}").strip("-")
    return f"{slug}-{hashlib.sha1(str(result.get('item', '')).encode()).hexdigest()[:6]}"


def _test_name(result: dict[str, Any]) -> str:
    return str(result.get("item", "")).split("::")[-1]


def _label(result: dict[str, Any]) -> str:
    label = f"{result['seed']}  {result['source']} -> {result['target']}"
    return f"{label}  (hand-written test {_test_name(result)})" if is_hand_written(result) else label


def _changed(result: dict[str, Any]) -> bool:
    return changed(result)


def attention_first(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Failed, hurting and changed items first, then the rest; stable by seed and pair."""
    def rank(r: dict[str, Any]) -> int:
        if _verdict(r) == "fail":
            return 0
        if outcome_of(r) == "hurts":
            return 1
        if _changed(r) or _verdict(r) == "inconclusive":
            return 2
        return 3
    ordered = sorted(results, key=lambda r: (r["seed"], r["source"], r["target"], r.get("item", "")))
    return sorted(ordered, key=rank)


def _tally(values: Iterable[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    return counts


def _summary(report: dict[str, Any]) -> dict[str, Any]:
    """The report's run summary (Holm-adjusted outcomes, spend, frontier); recomputed for a report without one."""
    return report.get("summary") or summarize(report.get("results") or [])


def headline(report: dict[str, Any]) -> str:
    """The one count: (seed, pair) outcomes after Holm, the gates of the matrix items, hand-written tests
    apart, errors, dollars."""
    results, errors = report["results"], report.get("errors") or []
    summary = _summary(report) if results else {"outcomes": {}, "hypotheses": 0}
    outcomes = summary["outcomes"]
    matrix = [r for r in results if not is_hand_written(r)]
    hand = [r for r in results if is_hand_written(r)]
    verdicts = _tally(_verdict(r) for r in matrix)
    if errors:
        verdicts["errored"] = len(errors)
    usd = [r["cost"].get("total_usd") for r in results]
    dollars = "n/a (unpriced model)" if any(u is None for u in usd) else f"${sum(usd):.4f}"
    calls = sum(r["cost"].get("calls", 0) for r in results)
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
            f'<p class="counts"><b>Outcome</b> after Holm (FWER 5%) over {summary["hypotheses"]} (seed, pair): '
            f'{outcome_chips}</p>'
            f'<p class="counts"><b>Gates</b> of the {len(matrix)} matrix item(s): {verdict_chips}</p>{hand_text}'
            f'<p class="counts"><b>Cost</b> {esc(dollars)} over {calls} call(s)</p>')


def gain_chart(results: list[dict[str, Any]]) -> str:
    """An SVG forest plot: each item's gain (dot) and 95% interval (bar) on -1 .. +1, zero and thresholds marked."""
    height = ROW_HEIGHT * (len(results) + 2)
    width = LABEL_WIDTH + CHART_WIDTH + 150

    def x(value: float) -> float:
        return LABEL_WIDTH + (max(-1.0, min(1.0, value)) + 1) / 2 * CHART_WIDTH

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
             f'aria-label="gain per item with 95% intervals">']
    for tick in (-1, -0.5, 0, 0.5, 1):
        parts.append(f'<line x1="{x(tick):.1f}" y1="{ROW_HEIGHT - 4}" x2="{x(tick):.1f}" y2="{height - ROW_HEIGHT}" '
                     f'stroke="{"#57606a" if tick == 0 else "#d0d7de"}" stroke-width="{1.5 if tick == 0 else 1}"/>')
        parts.append(f'<text x="{x(tick):.1f}" y="{ROW_HEIGHT - 6}" text-anchor="middle">{tick:+g}</text>')
    colors = {"transfers": "#1a7f37", "hurts": "#cf222e"}
    for row, result in enumerate(results, start=1):
        y = ROW_HEIGHT * row + ROW_HEIGHT / 2
        gain = result["gain"]
        color = colors.get(outcome_of(result), "#9a6700")
        parts.append(f'<a href="#{anchor(result)}"><text x="{LABEL_WIDTH - 8}" y="{y + 4:.1f}" text-anchor="end">'
                     f'{esc(_label(result))}</text></a>')
        for gate in (result.get("gate") or {}).get("gates", []):
            threshold = gate.get("threshold")
            if gate.get("gate") in ("min_gain", "harm", "noninferiority") and isinstance(threshold, (int, float)):
                parts.append(f'<line x1="{x(threshold):.1f}" y1="{y - 7:.1f}" x2="{x(threshold):.1f}" y2="{y + 7:.1f}" '
                             f'stroke="#8250df" stroke-dasharray="2,2"><title>{esc(gate["gate"])} {threshold:+g}</title></line>')
        parts.append(f'<line x1="{x(gain["ci_low"]):.1f}" y1="{y:.1f}" x2="{x(gain["ci_high"]):.1f}" y2="{y:.1f}" '
                     f'stroke="{color}" stroke-width="3"/>')
        parts.append(f'<circle cx="{x(gain["mean"]):.1f}" cy="{y:.1f}" r="4" fill="{color}">'
                     f'<title>{esc(gain_text(result))}</title></circle>')
        parts.append(f'<text x="{LABEL_WIDTH + CHART_WIDTH + 10}" y="{y + 4:.1f}">{esc(gain_text(result))}</text>')
    parts.append("</svg>")
    return "".join(parts)


def needs_a_look(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The items a reviewer must look at: failed, hurt, inconclusive or changed against the base."""
    return [r for r in results if _verdict(r) in ("fail", "inconclusive") or outcome_of(r) == "hurts" or _changed(r)]


def reason(result: dict[str, Any]) -> str:
    """The gate's one-line reason: why it did not pass, or, for a passing item that hurts or changed, what its
    first gate found."""
    if _verdict(result) not in ("pass", "no gate", "unchanged vs snapshot"):
        return failure_reason(result)
    gates = (result.get("gate") or {}).get("gates", [])
    compare = result.get("compare") or {}
    if _changed(result) and compare.get("message"):
        return str(compare["message"])
    return gate_reason(gates[0]) if gates else f"gain {gain_text(result)}"


def _why_item(result: dict[str, Any], holm: dict[tuple[str, str, str], str]) -> str:
    """One entry of "Needs a look": the item, its reason, the checks newly missed with their task counts and the
    learned lines they point at, and the commands."""
    from .rerun import rerun_commands

    verdict, outcome = _verdict(result), holm_outcome_of(result, holm)
    css = "w-fail" if verdict == "fail" or outcome_of(result) == "hurts" else "w-changed" if _changed(result) else "w-inconclusive"
    found = why(result)
    checks = []
    for check in found["checks"]:
        lines = "".join(f'<li class="line">{esc(line)}</li>' for line in check["lines"])
        points = (f"; the learned line(s) it points at:<ul>{lines}</ul>" if lines
                  else '; <span class="muted">no learned line names it</span>')
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
            f'<p><b>{esc(reason(result))}</b></p>{missed}{accepted}'
            + (f"<ul>{commands}</ul>" if commands else "") + "</li>")


def _attention(results: list[dict[str, Any]], holm: dict[tuple[str, str, str], str]) -> str:
    """"Needs a look": each failed, hurting, inconclusive or changed item and why."""
    flagged = needs_a_look(results)
    if not flagged:
        return "<p>No item failed, hurt its target or changed against the base.</p>"
    return '<ul class="why">' + "".join(_why_item(r, holm) for r in flagged) + "</ul>"


def _items_table(results: list[dict[str, Any]], holm: dict[tuple[str, str, str], str], hand: bool = False) -> str:
    clustered = any(clusters_text(r) for r in results)
    head = ("seed", *(("test",) if hand else ()), "pair", "baseline", "transferred", "direct", "gain [95% CI]", "p",
            "mdg", *(("clusters",) if clustered else ()), "outcome (Holm)", "gates", "$")
    rows = []
    for r in results:
        clusters = f'<td class="num">{esc(clusters_text(r) or "-")}</td>' if clustered else ""
        test = f"<td><code>{esc(_test_name(r))}</code></td>" if hand else ""
        outcome, verdict = holm_outcome_of(r, holm), _verdict(r)
        direct = "-" if r.get("direct_target") is None else f"{r['direct_target']:.2f}"
        rows.append(
            f'<tr class="{"hand-row" if hand else "item-row"}" data-item="{anchor(r)}" data-outcome="{esc(outcome)}" '
            f'data-verdict="{esc(verdict)}">'
            f'<td><a href="#{anchor(r)}">{esc(r["seed"])}</a></td>{test}<td>{esc(r["source"])} -&gt; {esc(r["target"])}</td>'
            f'<td class="num">{r["baseline_target"]:.2f}</td><td class="num">{r["transferred"]:.2f}</td>'
            f'<td class="num">{direct}</td><td class="num" data-v="{r["gain"]["mean"]}">{esc(gain_text(r))}</td>'
            f'<td class="num" data-v="{r["gain"]["p_value"]}">{p_text(r["gain"]["p_value"])}</td>'
            f'<td class="num">{mdg_text(r)}</td>{clusters}<td>{_chip(outcome, _outcome_class(outcome))}</td>'
            f'<td>{_verdict_chip(verdict)}</td>'
            f'<td class="num">{esc(usd_text(r["cost"].get("total_usd")))}</td></tr>')
    return ('<table class="sortable"><thead><tr>' + "".join(f"<th>{h}</th>" for h in head) + "</tr></thead><tbody>"
            + "".join(rows) + "</tbody></table>")


def _filters(results: list[dict[str, Any]], holm: dict[tuple[str, str, str], str]) -> str:
    counts = _tally([holm_outcome_of(r, holm) for r in results] + [_verdict(r) for r in results])
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


def check_table(rows: list[dict[str, Any]]) -> str:
    """Checks x arms: each check's missed tasks per arm and the change transferred - baseline, worst first."""
    if not rows:
        return "<p>No check was missed in any arm.</p>"
    body = []
    for row in rows:
        change = row["change"]
        css = "worse" if change > 0 else "better" if change < 0 else ""
        direct = "-" if row["direct"] is None else str(row["direct"])
        body.append(f'<tr><td><code>{esc(row["check"])}</code></td><td class="num">{row["baseline"]}</td>'
                    f'<td class="num">{row["transferred"]}</td><td class="num">{direct}</td>'
                    f'<td class="num {css}">{change:+d}</td><td class="num">{row["newly_missed"]}</td>'
                    f'<td class="num">{row["fixed"]}</td></tr>')
    tasks = rows[0]["tasks"]
    return (f'<table class="checks"><caption class="muted">held-out tasks (of {tasks}) on which a check was missed, '
            'per arm; change = transferred - baseline (more misses is worse)</caption><tr><th>check</th>'
            '<th>baseline</th><th>transferred</th><th>direct</th><th>change</th><th>newly missed</th><th>fixed</th>'
            "</tr>" + "".join(body) + "</table>")


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


def _gates(result: dict[str, Any]) -> str:
    gates = (result.get("gate") or {}).get("gates", [])
    if not gates:
        return "<p>No gate: this item makes no claim; its outcome above is what was measured.</p>"
    rows = "".join(f'<tr><td>{esc(g.get("gate", ""))}</td><td>{_chip(g.get("verdict", ""), "v-" + str(g.get("verdict", "")))}</td>'
                   f'<td>{esc(g.get("message", ""))}</td></tr>' for g in gates)
    return f"<table><tr><th>gate</th><th>verdict</th><th>message</th></tr>{rows}</table>"


def _scores(result: dict[str, Any]) -> str:
    rows = []
    for arm in ARMS:
        ev = result["scores"].get(arm)
        if ev is None:
            rows.append(f"<tr><td>{arm}</td><td colspan=3>-</td></tr>")
            continue
        hard = ev["hard"]
        rows.append(f'<tr><td>{arm}</td><td class="num">{hard["mean"]:.3f}</td>'
                    f'<td class="num">[{hard["ci_low"]:.3f}, {hard["ci_high"]:.3f}]</td>'
                    f'<td class="num">{ev["soft"]["mean"]:.3f}</td></tr>')
    gain = result["gain"]
    return ("<table><tr><th>on the target</th><th>hard</th><th>95% CI</th><th>soft</th></tr>" + "".join(rows)
            + f'</table><p>gain {esc(gain_text(result))} over {esc(units_text(gain) + design_effect_text(gain))}, '
              f'p = {p_text(gain["p_value"])}, '
              f'minimal detectable gain {mdg_text(result)}; {gain.get("improved", "?")} improved, '
              f'{gain.get("worsened", "?")} worsened, {gain.get("tied", "?")} tied</p>')


def _tasks_by_arm(result: dict[str, Any]) -> tuple[list[str], dict[str, dict[str, dict[str, Any]]]]:
    by_arm: dict[str, dict[str, dict[str, Any]]] = {}
    order: list[str] = []
    for arm in ARMS:
        ev = result["scores"].get(arm)
        for task in (ev or {}).get("tasks", []):
            by_arm.setdefault(task["task_id"], {})[arm] = task
            if task["task_id"] not in order:
                order.append(task["task_id"])
    return order, by_arm


def _cell(task: dict[str, Any] | None) -> str:
    if task is None:
        return "<td>-</td>"
    css = "t-pass" if task["hard"] >= 1 else "t-fail" if task["hard"] <= 0 else "t-mid"
    mark = "pass" if task["hard"] >= 1 else "fail" if task["hard"] <= 0 else f"{task['hard']:.2f}"
    return f'<td class="{css}" title="soft {task["soft"]:.2f}">{mark} <span class="muted">{task["soft"]:.2f}</span></td>'


def _answer_block(arm: str, task: dict[str, Any] | None) -> str:
    if task is None:
        return f"<div><b>{arm}</b><p class=muted>not scored</p></div>"
    parts = [f"<div><b>{arm}</b> {_cell(task).replace('<td', '<span').replace('</td>', '</span>')}"]
    for sample in task.get("samples", []):
        answer = sample.get("answer")
        missed = ", ".join(sample.get("failed", [])) or "none"
        stop = sample.get("stop_reason") or ""
        parts.append(f'<p class="muted">sample {esc(sample.get("sample_id", ""))}: stop {esc(stop)}; missed: '
                     f'<code>{esc(missed)}</code></p>')
        if answer is not None:
            long = len(answer) > FOLD_CHARS
            body = f"<pre>{esc(answer)}</pre>"
            parts.append(f"<details><summary>answer ({len(answer)} chars)</summary>{body}</details>" if long else body)
        for vote in sample.get("rubric", []) or []:
            parts.append(f'<p class="muted">rubric: {esc(_vote_text(vote))}</p>')
    return "".join(parts) + "</div>"


def _vote_text(vote: dict[str, Any]) -> str:
    verdict = vote.get("verdict", vote.get("passed", ""))
    return f"{vote.get('criterion', vote.get('check', ''))}: {verdict} {vote.get('reason', '')}".strip()


def task_matrix(result: dict[str, Any]) -> str:
    """Held-out task x arm, pass/fail and soft score, a CSS-only filter for tasks whose result differs,
    and per task the answers side by side with the checks each missed."""
    order, by_arm = _tasks_by_arm(result)
    box = f"{anchor(result)}-tasks"
    rows, drill = [], []
    for task_id in order:
        arms = by_arm[task_id]
        hards = {arms[a]["hard"] for a in ARMS if a in arms}
        css = "differs" if len(hards) > 1 else "same"
        cluster = next((arms[a]["cluster"] for a in ARMS if a in arms and "cluster" in arms[a]), None)
        cluster_note = "" if cluster is None else f' <span class="cluster">{esc(cluster)}</span>'
        rows.append(f'<tr class="{css}" data-task="{esc(task_id)}"><td><a href="#{box}-{esc(task_id)}">{esc(task_id)}</a>'
                    f'{cluster_note}</td>' + "".join(_cell(arms.get(a)) for a in ARMS) + "</tr>")
        drill.append(f'<details id="{box}-{esc(task_id)}" data-task="{esc(task_id)}"><summary>{esc(task_id)}'
                     f'{" (differs)" if css == "differs" else ""}</summary><div class="answers">'
                     + "".join(_answer_block(a, arms.get(a)) for a in ARMS) + "</div></details>")
    differ = sum(1 for row in rows if row.startswith('<tr class="differs" '))
    return (f'<input type="checkbox" id="{box}" class="differs-box"> <label for="{box}">only the {differ} task(s) '
            f'whose result differs between arms</label>'
            '<table class="matrix"><tr><th>task</th>' + "".join(f"<th>{a}</th>" for a in ARMS) + "</tr>"
            + "".join(rows) + "</table><h3>Answers per task</h3>" + answer_store("".join(drill)))


def answer_store(fragment: str) -> str:
    """An item's answers per task, stored compressed (zlib, base64) in the page and unfolded by the script
    when the item is opened; without JavaScript a note says where they went. Deterministic, so merged
    shards and a page rebuilt from the JSON report stay byte-equal."""
    packed = base64.b64encode(zlib.compress(fragment.encode("utf-8"), 9)).decode("ascii")
    return f'<div class="answer-store" data-z="{packed}"><p class="muted">{FOLDED_NOTE}</p></div>'


def unfold(store: str) -> str:
    """The HTML an answer store holds (what the page's script shows): `answer_store`'s inverse."""
    packed = re.search(r'data-z="([A-Za-z0-9+/=]*)"', store)
    if packed is None:
        raise ValueError("no answer store in this HTML")
    return zlib.decompress(base64.b64decode(packed.group(1))).decode("utf-8")


def skill_diff(result: dict[str, Any]) -> str:
    """The learned skill as a unified diff against the seed's skill (the whole skill when the seed's is absent)."""
    learned = result.get("learned_skill", "")
    seed = result.get("seed_skill")
    if seed is None:
        return f"<pre>{esc(learned)}</pre>"
    lines = list(difflib.unified_diff(seed.splitlines(), learned.splitlines(), "SKILL.md (seed)", "SKILL.md (learned)",
                                      lineterm="", n=2))
    if not lines:
        return "<p>The learned skill equals the seed's skill (no edit was accepted).</p>"
    css = {"+": "add", "-": "del", "@": "hunk"}
    body = "\n".join(f'<span class="{css.get(line[:1], "")}">{esc(line)}</span>' for line in lines)
    return f'<pre class="diff">{body}</pre>'


def _nights(optimization: dict[str, Any] | None, label: str) -> str:
    if not optimization:
        return ""
    items = []
    for night in optimization.get("nights", []):
        after = "-" if night.get("val_after") is None else f"{night['val_after']:.3f}"
        edits = "".join(f"<li>{esc(e.get('op', ''))}: {esc(' '.join(str(e.get('content', '')).split())[:300])}</li>"
                        for e in night.get("applied", []))
        unmatched = "".join(f"<li class=muted>not applied ({esc(e.get('reason', ''))}): "
                            f"{esc(' '.join(str(e.get('content', '')).split())[:200])}</li>"
                            for e in night.get("unmatched", []))
        note = f" ({esc(night['note'])})" if night.get("note") else ""
        note += "".join(f", {esc(v['model'])} {v['before']:.3f} -&gt; {'-' if v['after'] is None else format(v['after'], '.3f')}"
                        for v in night.get("validation", []))
        note += f" (blocked by {esc(', '.join(night['blocked_by']))})" if night.get("blocked_by") and not night["accepted"] else ""
        items.append(f"<li>night {night['night']}: val {night['val_before']:.3f} -&gt; {after}, "
                     f"<b>{esc(night_verdict(night))}</b>{note}<ul>{edits}{unmatched}</ul></li>")
    return (f"<h3>{esc(label)}: agent {esc(optimization.get('agent', ''))}, optimizer "
            f"{esc(optimization.get('optimizer', ''))}</h3><ul>{''.join(items)}</ul>")


def _costs(result: dict[str, Any]) -> str:
    rows = []
    for phase, phase_rows in result["cost"].get("phases", {}).items():
        for row in phase_rows:
            rows.append(f'<tr><td>{esc(phase)}</td><td>{esc(row["role"])}</td><td>{esc(row["model"])}</td>'
                        f'<td>{esc(row.get("lane", ""))}</td><td class="num">{row["calls"]}</td>'
                        f'<td class="num">{row["input_tokens"]}</td><td class="num">{row["output_tokens"]}</td>'
                        f'<td class="num">{esc(usd_text(row.get("usd")))}</td></tr>')
    if not rows:
        return ""
    return ("<table><tr><th>phase</th><th>role</th><th>model</th><th>lane</th><th>calls</th><th>input tok.</th>"
            "<th>output tok.</th><th>$</th></tr>" + "".join(rows) + "</table>")


def _restarts(result: dict[str, Any]) -> str:
    runs = result.get("restarts")
    if not runs:
        return ""
    rows = "".join(f'<tr><td>{r["restart"]}</td><td>{r["split_seed"]}</td><td class="num">{r["transferred"]:.3f}</td>'
                   f'<td class="num">{"-" if r["direct"] is None else format(r["direct"], ".3f")}</td>'
                   f'<td class="num">{r["gain"]:+.3f}</td></tr>' for r in runs)
    these = these_text(result)
    caption = (f'<caption class="muted">over the population of optimizations {esc(gain_text(result))}; these '
               f'{len(runs)} skills {esc(these)} (exact over tasks; harm, min_gain and regression also fail on it '
               "and on restart 1 alone)</caption>" if these else "")
    return ("<h3>Restarts</h3><table>" + caption + "<tr><th>restart</th><th>split seed</th><th>transferred</th>"
            f"<th>direct</th><th>gain</th></tr>{rows}</table>")


def _portable(result: dict[str, Any]) -> str:
    """With --validate-on: the family of three comparisons, the extra cost and the portable skill's nights."""
    portable = result.get("portable")
    if not portable:
        return ""
    from .portable import extra_cost_text

    rows = "".join(f'<tr><td>{esc(c["label"])}</td><td class="num">{c["mean"]:+.3f}</td>'
                   f'<td class="num">[{c["ci_low"]:+.3f}, {c["ci_high"]:+.3f}]</td><td class="num">{c["level"]:.4f}</td>'
                   f'<td class="num">{c["p_value"]:.3g}</td><td class="num">{c["p_holm"]:.3g}</td>'
                   f'<td>{esc(c["outcome"])}</td></tr>' for c in portable["family"]["comparisons"])
    per_model = ", ".join(f"{m['model']} {m['calls']} calls ${usd_text(m['usd'])}" for m in portable["extra_cost"]["per_model"])
    word = portable["outcome"]
    css = {"more portable": "o-transfers", "less portable": "o-hurts"}.get(word, "o-none")
    return (f"<h3>Portable skill (validated on {esc(', '.join(portable['validate_on']))}, tolerance "
            f"{portable['tolerance']:g})</h3><p>{_chip(word, css)} on {esc(result['target'])}: single-model "
            f"{result['transferred']:.2f}, multi-model {portable['transferred']['hard']['mean']:.2f}, baseline "
            f"{result['baseline_target']:.2f}; extra cost {esc(extra_cost_text(portable['extra_cost']))} "
            f"({esc(per_model)})</p><table><tr><th>comparison</th><th>gain</th><th>interval</th><th>level</th>"
            f"<th>p</th><th>p (Holm)</th><th>outcome</th></tr>{rows}</table>"
            f"{_nights(portable.get('optimization'), 'Against the validation set, on the source')}")


def _compare(result: dict[str, Any]) -> str:
    compare = result.get("compare")
    if not compare:
        return ""
    before = "-" if compare.get("before") is None else f"{compare['before']:.2f}"
    return (f"<h3>Against {esc(compare.get('ref', 'the base'))}</h3><p>transferred {before} -&gt; "
            f"{compare['after']:.2f}: <b>{esc(compare.get('verdict', ''))}</b> {esc(compare.get('message', ''))}</p>")


def item_section(result: dict[str, Any], holm: dict[tuple[str, str, str], str] | None = None) -> str:
    """One folded section with everything about an item."""
    outcome, verdict = holm_outcome_of(result, holm or {}), _verdict(result)
    from .rerun import rerun_commands

    rerun = "".join(f"<p>{esc(what)}: <code>{esc(command)}</code></p>" for what, command in rerun_commands(result))
    hand = _chip("hand-written test", "hand") + " " if is_hand_written(result) else ""
    return (f'<details class="item" id="{anchor(result)}" data-outcome="{esc(outcome)}" data-verdict="{esc(verdict)}">'
            f'<summary>{hand}<b>{esc(_label(result))}</b> {_chip(outcome, _outcome_class(outcome))} '
            f'{_verdict_chip(verdict)} gain {esc(gain_text(result))}</summary>'
            f"{rerun}<h3>Gates</h3>{_gates(result)}<h3>Scores</h3>{_scores(result)}{_compare(result)}"
            f"<h3>Checks x arms</h3>{check_table(result.get('checks') or check_arms(result))}"
            f"<h3>Tasks</h3>{task_matrix(result)}"
            f"<h3>Learned skill (diff against the seed's)</h3>{skill_diff(result)}"
            f"<h3>Nights</h3>{_nights(result['optimization'].get('source'), 'On the source')}"
            f"{_nights(result['optimization'].get('direct'), 'Direct, on the target')}"
            f"{_restarts(result)}{_portable(result)}<h3>Cost</h3>{_costs(result)}</details>")


def _errors(errors: list[dict[str, Any]]) -> str:
    if not errors:
        return ""
    rows = "".join(f"<li><code>{esc(e.get('item', ''))}</code> ({esc(e.get('source', ''))} -&gt; "
                   f"{esc(e.get('target', ''))}, at {esc(e.get('when', ''))}): {esc(e.get('reason', ''))}</li>"
                   for e in errors)
    return f"<h2>Errored items ({len(errors)})</h2><ul>{rows}</ul>"


def _table(rows: list[tuple[str, ...]]) -> str:
    head, *body = rows
    return ("<table><tr>" + "".join(f"<th>{esc(h)}</th>" for h in head) + "</tr>"
            + "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>" for row in body) + "</table>")


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
                                                  tuple(str(budget.get(k, "-")) for k in (
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


def plan_section(report: dict[str, Any]) -> str:
    """A plan carried by the report (what the run could cost at most), as its fields."""
    plan = report.get("plan")
    if not plan:
        return ""
    rows = plan if isinstance(plan, list) else [plan]
    keys = list(dict.fromkeys(k for row in rows if isinstance(row, dict) for k in row))
    if not keys:
        return f"<pre>{esc(plan)}</pre>"
    return _table([tuple(keys), *(tuple(str(row.get(k, "")) for k in keys) for row in rows if isinstance(row, dict))])


def render(report: dict[str, Any]) -> str:
    """The whole page from a JSON report."""
    results = attention_first(report.get("results") or [])
    errors = list(report.get("errors") or [])
    body = [headline(report)]
    if results:
        summary = _summary(report)
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
                 "<h2>Items</h2>", '<p class="muted">outcome after Holm over the (seed, pair) items, as counted above; '
                 'the gain column is each item\'s own interval</p>', _filters(matrix, holm), _items_table(matrix, holm)]
        if hand:
            body += ["<h2>Hand-written tests</h2>",
                     '<p class="muted">tests calling the transfer fixture; one on the seed and pair of a matrix item '
                     'is the same (seed, pair) and is counted once</p>', _items_table(hand, holm, hand=True)]
        frontier, spend, plan = frontier_section(summary), spend_section(report, summary), plan_section(report)
        body += ["<h2>Source frontier</h2>", frontier] if frontier else []
        body += ["<h2>Spend</h2>", spend] if spend else []
        body += ["<h2>Plan</h2>", plan] if plan else []
        body += ["<h2>Per item</h2>", *(item_section(r, holm) for r in results)]
    else:
        body.append("<p>No transfer item produced a result.</p>")
    body.append(_errors(errors))
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>Skill transfer report</title><style>{CSS}</style></head><body>"
            + "\n".join(body) + f"<script>{SCRIPT}</script></body></html>\n")
