"""One item's folded section of the HTML page: its gates, scores, checks x arms, the task x arm matrix, the answers
(kept compressed in the page and unfolded when the item is opened), the learned skill's diff, the nights,
restarts, the portable skill and the cost."""

from __future__ import annotations

import base64
import difflib
import re
import zlib
from typing import Any

from ..evidence.item_record import ItemRecord, TaskRecord
from ..evidence.run_family import kind
from .html_parts import (
    ARMS,
    FOLD_CHARS,
    FOLDED_NOTE,
    _chip,
    _label,
    _outcome_class,
    _verdict,
    _verdict_chip,
    anchor,
    check_table,
    esc,
    holm_outcome_of,
)
from .report import design_effect_text, gain_text, mdg_text, night_verdict, p_text, these_text, units_text, usd_text
from .portable import blocked_by_text
from .why import check_arms, is_hand_written


def _gates(result: ItemRecord) -> str:
    gates = result.gate.gates if result.gate else ()
    if not gates:
        return "<p>No gate: this item makes no claim; its outcome above is what was measured.</p>"
    rows = "".join(f'<tr><td>{esc(g.gate)}</td><td>{_chip(g.verdict, "v-" + g.verdict)}</td>'
                   f'<td>{esc(g.message)}</td></tr>' for g in gates)
    return f"<table><tr><th>gate</th><th>verdict</th><th>message</th></tr>{rows}</table>"


def _scores(result: ItemRecord) -> str:
    rows = []
    for arm in ARMS:
        ev = getattr(result.scores, arm)
        if ev is None:
            rows.append(f"<tr><td>{arm}</td><td colspan=3>-</td></tr>")
            continue
        hard = ev.hard
        rows.append(f'<tr><td>{arm}</td><td class="num">{hard.mean:.3f}</td>'
                    f'<td class="num">[{hard.ci_low:.3f}, {hard.ci_high:.3f}]</td>'
                    f'<td class="num">{ev.soft.mean:.3f}</td></tr>')
    gain = result.gain
    counts = {name: "?" if value is None else value
              for name, value in (("improved", gain.improved), ("worsened", gain.worsened), ("tied", gain.tied))}
    return ("<table><tr><th>on the target</th><th>hard</th><th>95% CI</th><th>soft</th></tr>" + "".join(rows)
            + f'</table><p>gain {esc(gain_text(result))} over {esc(units_text(gain) + design_effect_text(gain))}, '
              f'p = {p_text(gain.p_value)}, '
              f'minimal detectable gain {mdg_text(result)}; {counts["improved"]} improved, '
              f'{counts["worsened"]} worsened, {counts["tied"]} tied</p>')


def _tasks_by_arm(result: ItemRecord) -> tuple[list[str], dict[str, dict[str, TaskRecord]]]:
    by_arm: dict[str, dict[str, TaskRecord]] = {}
    order: list[str] = []
    for arm in ARMS:
        ev = getattr(result.scores, arm)
        for task in ev.tasks if ev is not None else ():
            by_arm.setdefault(task.task_id, {})[arm] = task
            if task.task_id not in order:
                order.append(task.task_id)
    return order, by_arm


def _cell(task: TaskRecord | None) -> str:
    if task is None:
        return "<td>-</td>"
    css = "t-pass" if task.hard >= 1 else "t-fail" if task.hard <= 0 else "t-mid"
    mark = "pass" if task.hard >= 1 else "fail" if task.hard <= 0 else f"{task.hard:.2f}"
    return f'<td class="{css}" title="soft {task.soft:.2f}">{mark} <span class="muted">{task.soft:.2f}</span></td>'


def _answer_block(arm: str, task: TaskRecord | None) -> str:
    if task is None:
        return f"<div><b>{arm}</b><p class=muted>not scored</p></div>"
    parts = [f"<div><b>{arm}</b> {_cell(task).replace('<td', '<span').replace('</td>', '</span>')}"]
    for sample in task.samples:
        answer = sample.answer
        missed = ", ".join(sample.failed) or "none"
        stop = sample.stop_reason or ""
        parts.append(f'<p class="muted">sample {esc(sample.sample_id)}: stop {esc(stop)}; missed: '
                     f'<code>{esc(missed)}</code></p>')
        if answer is not None:
            long = len(answer) > FOLD_CHARS
            body = f"<pre>{esc(answer)}</pre>"
            parts.append(f"<details><summary>answer ({len(answer)} chars)</summary>{body}</details>" if long else body)
        for vote in sample.rubric or ():
            parts.append(f'<p class="muted">rubric: {esc(_vote_text(vote))}</p>')
    return "".join(parts) + "</div>"


def _vote_text(vote: dict[str, Any]) -> str:
    verdict = vote.get("verdict", vote.get("passed", ""))
    return f"{vote.get('criterion', vote.get('check', ''))}: {verdict} {vote.get('reason', '')}".strip()


def task_matrix(result: ItemRecord) -> str:
    """Held-out task x arm, pass/fail and soft score, a CSS-only filter for tasks whose result differs,
    and per task the answers side by side with the checks each missed."""
    order, by_arm = _tasks_by_arm(result)
    box = f"{anchor(result)}-tasks"
    rows, drill = [], []
    for task_id in order:
        arms = by_arm[task_id]
        hards = {arms[a].hard for a in ARMS if a in arms}
        css = "differs" if len(hards) > 1 else "same"
        cluster = next((arms[a].cluster for a in ARMS if a in arms and arms[a].cluster is not None), None)
        cluster_note = "" if cluster is None else f' <span class="cluster">{esc(cluster)}</span>'
        rows.append(f'<tr class="{css}" data-task="{esc(task_id)}"><td><a href="#{box}-{esc(task_id)}">{esc(task_id)}</a>'
                    f'{cluster_note}</td>' + "".join(_cell(arms.get(a)) for a in ARMS) + "</tr>")
        drill.append(f'<details id="{box}-{esc(task_id)}" data-task="{esc(task_id)}"><summary>{esc(task_id)}'
                     f'{" (differs)" if css == "differs" else ""}</summary><div class="answers">'
                     + "".join(_answer_block(a, arms.get(a)) for a in ARMS) + "</div></details>")
    differ = sum(1 for row in rows if row.startswith('<tr class="differs" '))
    held = f"all {len(rows)} held-out task(s) x arms, pass or fail and soft score"
    toggle = (f'<span class="muted">{held};</span> <input type="checkbox" id="{box}" class="differs-box"> '
              f'<label for="{box}">show only the {differ} whose pass or fail differs between arms</label>' if differ else
              f'<p class="muted">{held}; every task passes or fails alike in every arm</p>')
    return (toggle + '<table class="matrix"><tr><th>task</th>' + "".join(f"<th>{a}</th>" for a in ARMS) + "</tr>"
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


def skill_diff(result: ItemRecord) -> str:
    """The learned skill as a unified diff against the seed's skill (the whole skill when the seed's is absent)."""
    learned = result.learned_skill
    seed = result.seed_skill
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
        note += f" (blocked by {esc(blocked_by_text(night))})" if night.get("blocked_by") and not night["accepted"] else ""
        items.append(f"<li>night {night['night']}: val {night['val_before']:.3f} -&gt; {after}, "
                     f"<b>{esc(night_verdict(night))}</b>{note}<ul>{edits}{unmatched}</ul></li>")
    return (f"<h3>{esc(label)}: agent {esc(optimization.get('agent', ''))}, optimizer "
            f"{esc(optimization.get('optimizer', ''))}</h3><ul>{''.join(items)}</ul>")


def _costs(result: ItemRecord) -> str:
    rows = []
    for phase, phase_rows in result.cost.phases.items():
        for row in phase_rows:
            rows.append(f'<tr><td>{esc(phase)}</td><td>{esc(row.role)}</td><td>{esc(row.model)}</td>'
                        f'<td>{esc(row.lane or "")}</td><td class="num">{row.calls}</td>'
                        f'<td class="num">{row.input_tokens}</td><td class="num">{row.output_tokens}</td>'
                        f'<td class="num">{esc(usd_text(row.usd))}</td></tr>')
    if not rows:
        return ""
    return ("<table><tr><th>phase</th><th>role</th><th>model</th><th>lane</th><th>calls</th><th>input tok.</th>"
            "<th>output tok.</th><th>$</th></tr>" + "".join(rows) + "</table>")


def _restarts(result: ItemRecord) -> str:
    runs = result.restarts
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


def _portable(result: ItemRecord) -> str:
    """With --validate-on: the family of three comparisons, the extra cost and the portable skill's nights."""
    portable = result.portable
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
            f"{portable['tolerance']:g})</h3><p>{_chip(word, css)} on {esc(result.target)}: single-model "
            f"{result.transferred:.2f}, multi-model {portable['transferred']['hard']['mean']:.2f}, baseline "
            f"{result.baseline_target:.2f}; extra cost {esc(extra_cost_text(portable['extra_cost']))} "
            f"({esc(per_model)})</p><table><tr><th>comparison</th><th>gain</th><th>interval</th><th>level</th>"
            f"<th>p</th><th>p (Holm)</th><th>outcome</th></tr>{rows}</table>"
            f"{_nights(portable.get('optimization'), 'Against the validation set, on the source')}")


def _compare(result: ItemRecord) -> str:
    compare = result.compare
    if not compare:
        return ""
    before = "-" if compare.get("before") is None else f"{compare['before']:.2f}"
    return (f"<h3>Against {esc(compare.get('ref', 'the base'))}</h3><p>transferred {before} -&gt; "
            f"{compare['after']:.2f}: <b>{esc(compare.get('verdict', ''))}</b> {esc(compare.get('message', ''))}</p>")


def _unlearnable(result: ItemRecord) -> str:
    """A paragraph when even the direct optimization on this pair's target gained nothing, naming the checks no
    arm passed (the run summary names the seeds where that holds on every pair)."""
    if result.unlearnable is None:
        return ""
    never = result.unlearnable.checks_never_passed
    listed = ", ".join(f"<code>{esc(label)}</code>" for label in never) or "none (each passed somewhere, never all together)"
    return (f'<p class="unlearnable"><b>Nothing learnable on this pair:</b> even direct optimization on '
            f'{esc(result.target)} gained nothing; checks never passed in any arm: {listed}</p>')


def _gaming(result: ItemRecord) -> str:
    """The constant-answer flag, the transferred answers' collapse and how a fixed context was chosen, in words
    (nothing when none applies)."""
    constant, collapse, chosen = result.constant_answer, result.answers_collapse, result.context_chosen
    notes = [constant.text if constant is not None and constant.flagged else None,
             collapse.text if collapse is not None else None]
    return ("".join(f'<p class="muted"><b>Checks:</b> {esc(note)}</p>' for note in notes if note)
            + (f'<p class="muted"><b>Fixed context:</b> chosen {esc(chosen)}</p>' if chosen else ""))


def item_section(result: ItemRecord, holm: dict[tuple[str, str, str], str] | None = None) -> str:
    """One folded section with everything about an item."""
    outcome, verdict = holm_outcome_of(result, holm or {}), _verdict(result)
    from .rerun import rerun_commands

    rerun = "".join(f"<p>{esc(what)}: <code>{esc(command)}</code></p>" for what, command in rerun_commands(result))
    hand = _chip("hand-written test", "hand") + " " if is_hand_written(result) else ""
    return (f'<details class="item" id="{anchor(result)}" data-outcome="{esc(kind(outcome))}" data-verdict="{esc(verdict)}">'
            f'<summary>{hand}<b>{esc(_label(result))}</b> {_chip(outcome, _outcome_class(outcome))} '
            f'{_verdict_chip(verdict)} gain {esc(gain_text(result))}</summary>'
            f"{rerun}{_unlearnable(result)}{_gaming(result)}<h3>Gates</h3>{_gates(result)}<h3>Scores</h3>{_scores(result)}{_compare(result)}"
            f"<h3>Checks x arms</h3>{check_table(result.checks or check_arms(result))}"
            f"<h3>Tasks</h3>{task_matrix(result)}"
            f"<h3>Learned skill (diff against the seed's)</h3>{skill_diff(result)}"
            f"<h3>Nights</h3>{_nights(result.optimization.get('source'), 'On the source')}"
            f"{_nights(result.optimization.get('direct'), 'Direct, on the target')}"
            f"{_restarts(result)}{_portable(result)}<h3>Cost</h3>{_costs(result)}</details>")
