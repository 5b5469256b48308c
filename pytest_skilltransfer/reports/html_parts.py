"""The HTML page's shared pieces: its style, script and content policy, escaping, outcome and verdict chips,
item labels and anchors, and small tables; used by the page (`html_report`) and each item's section (`html_item`)."""

from __future__ import annotations

import hashlib
import html
import re
from typing import Any

from ..evidence.item_record import ItemRecord
from ..guards.terminal import safe
from .report import failure_reason, gain_text, gate_reason, verdict_text
from .why import changed, is_hand_written

ARMS = ("baseline", "transferred", "direct")
OUTCOMES = ("hurts", "transfers", "shown alone", "no effect shown", "undecidable")
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
th{background:var(--bg)}td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
table{max-width:100%}td{overflow-wrap:break-word}td code,td a{overflow-wrap:anywhere}svg{max-width:100%;height:auto}
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
.cause-grid{display:grid;grid-template-columns:repeat(2,minmax(0,1fr));gap:10px}.cause-grid>div{min-width:0}
.cause td details{border:0;margin:0;padding:0}.cause td details[open]>summary{border:0}
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
  function openHash(){var id=decodeURIComponent((location.hash||'').slice(1));if(!id){return;}
    var el=document.getElementById(id);if(!el){return;}
    for(var d=el;d;d=d.parentElement){if(d.tagName==='DETAILS'){d.open=true;}}
    el.scrollIntoView();}
  window.addEventListener('hashchange',openHash);openHash();
  document.body.classList.add('js');
})();
"""
CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"


def esc(text: Any) -> str:
    """Text for HTML (quotes included, so it is safe in attributes too), control and bidi characters written
    as visible escapes (`\\x1b`, `\\u202e`, as the terminal shows them), never raw."""
    return html.escape(safe(str(text)), quote=True)


def outcome_of(result: ItemRecord) -> str:
    """The measured outcome of the paired gain: transfers, hurts, or no effect shown."""
    if result.outcome:
        return str(result.outcome)
    gain = result.gain
    if gain.ci_low > 0:
        return "transfers"
    return "hurts" if gain.ci_high < 0 else "no effect shown"


def holm_outcome_of(result: ItemRecord, holm: dict[tuple[str, str, str], str]) -> str:
    """The item's outcome in the run's family (Bonferroni over its (seed, pair) items): what every count on the
    page counts (an item absent from the summary keeps its own outcome)."""
    return holm.get((result.seed, result.source, result.target), outcome_of(result))


def _outcome_class(outcome: str) -> str:
    return {"transfers": "o-transfers", "hurts": "o-hurts"}.get(outcome, "o-none")


def _verdict(result: ItemRecord) -> str:
    verdict = verdict_text(result)
    return "no gate" if verdict in ("-", "") else verdict


def _chip(text: str, css: str) -> str:
    return f'<span class="chip {css}">{esc(text)}</span>'


def _verdict_chip(verdict: str) -> str:
    return _chip(verdict, "v-" + verdict.replace(" ", "-"))


def anchor(result: ItemRecord) -> str:
    """A stable, readable element id for an item: seed and pair, and a digest of the node id (two tests may
    share a seed and pair)."""
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", f"{result.seed}--{result.source}--{result.target}").strip("-")
    return f"{slug}-{hashlib.sha1((result.item or '').encode()).hexdigest()[:6]}"


def _test_name(result: ItemRecord) -> str:
    return (result.item or "").split("::")[-1]


def _label(result: ItemRecord) -> str:
    label = f"{result.seed}  {result.source} -> {result.target}"
    return f"{label}  (hand-written test {_test_name(result)})" if is_hand_written(result) else label


def _changed(result: ItemRecord) -> bool:
    return changed(result)


def reason(result: ItemRecord) -> str:
    """The gate's one-line reason: why it did not pass, or, for a passing item that hurts or changed, what its
    first gate found."""
    if _verdict(result) not in ("pass", "no gate", "unchanged vs snapshot"):
        return failure_reason(result)
    gates = result.gate.gates if result.gate else ()
    compare = result.compare or {}
    if _changed(result) and compare.get("message"):
        return str(compare["message"])
    return gate_reason(gates[0]) if gates else f"gain {gain_text(result)}"


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


def _table(rows: list[tuple[str, ...]]) -> str:
    head, *body = rows
    return ("<table><tr>" + "".join(f"<th>{esc(h)}</th>" for h in head) + "</tr>"
            + "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>" for row in body) + "</table>")
