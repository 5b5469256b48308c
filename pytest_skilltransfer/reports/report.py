"""Human-readable reports of transfer results: the per-seed line and the summary table.

Both read the items' records (`evidence.item_record.ItemRecord`), so the CLI, the pytest terminal summary
(which receives results from xdist workers as JSON and reads them back as records) and the Markdown report
print the same numbers.
"""

from __future__ import annotations

from typing import Any

from ..engine.gate_specs import claim_gates, is_signed, label_of
from ..evidence.item_record import GainRecord, GateDecision, GateRecord, ItemRecord, ScoreRecord

COLUMNS = ("seed", "pair", "base", "transf.", "gain [95% CI]", "p", "mdg", "eff.", "outcome", "verdict")
MD_COLUMNS = ("seed", "pair", "baseline", "transferred", "direct", "gain [95% CI]", "p", "mdg", "eff. [95% CI]",
              "calls", "tokens", "$", "outcome", "verdict")
NO_GATE, UNCHANGED = "no gate", "unchanged vs snapshot"
SEED_CHARS = 20
TABLE_WIDTH = 120  # the terminal table stays narrower than this
MIN_LABEL_CHARS = 12
LEGEND = ("gain: paired per-task gain transferred - baseline with its exact 95% interval; p: the same exact test "
          "(unconditional, Tango-ordered) at no effect, so p <= 0.05 exactly when the interval excludes 0; "
          "mdg: smallest gain detected with 80% power at this task count in the most favourable case (binary "
          "tasks that only improve; any task getting worse raises it); "
          "restarts: optimizations per item and the sd of their gains (the gain's interval, over the population of "
          "optimizations, includes it); these skills: the mean gain of the R skills actually learned, exact over "
          "tasks with no bound over restarts (harm, min_gain and regression also fail on it, and on restart 1 alone); "
          "eff.: gain / direct headroom, shown when the headroom is significant; "
          "outcome: transfers / hurts only for a finding of the run's family (Bonferroni over the run's items, "
          "FWER 5%: the interval at that level wholly above / below 0), gain / harm shown alone (the item's own "
          "95% interval, the unadjusted figures in gain and p, excludes 0; the family's does not), undecidable at "
          "n tasks (no outcome could be a finding at the family's level), no effect shown (read it with mdg, it is "
          "not evidence of safety); const: a/b when a constant answer (one of the run's own) passes a of the b "
          "held-out tasks' rule checks: these checks cannot tell a right answer from a wrong one; "
          "verdict: pass / fail / inconclusive of the gates, no gate when no claim gate applies and "
          "unchanged vs snapshot when, in addition, the committed snapshot matched")


CLUSTERS_LEGEND = ("clusters: held-out tasks grouped by `cluster` are counted per cluster (the test's units: "
                   "scores and gains are means over clusters; intervals, p and mdg count clusters): clusters of "
                   "tasks, and the design effect deff, the variance of the mean over what as many independent "
                   "tasks would give")


WORSEN_SHARE = 0.1  # the share of tasks getting worse beside which the best-case mdg is stated


def mdg_beside(n: int) -> str:
    """`at 24 tasks mdg 0.26, and 0.44 when 10% of tasks also get worse`: the best case with a realistic one."""
    from ..evidence.stats import N_EXACT, minimal_detectable_gain, minimal_detectable_net_gain

    best = minimal_detectable_gain(n)
    if best is None or n > N_EXACT:
        return ""
    worse = minimal_detectable_net_gain(n, WORSEN_SHARE)
    return (f"at {n} tasks mdg {best:.2f}, and " + ("none" if worse is None else f"{worse:.2f}")
            + f" when {WORSEN_SHARE:.0%} of tasks also get worse")


def legend(results: list[ItemRecord]) -> str:
    """The table legend, with the clusters column explained when a result counts clusters, and the best-case
    mdg of the commonest task count beside its figure when 10% of tasks also get worse."""
    counts = [r.gain.n for r in results if not r.gain.restarts and r.gain.unit != "cluster"]
    beside = mdg_beside(max(set(counts), key=counts.count)) if counts else ""
    text = LEGEND.replace("raises it)", f"raises it: {beside})") if beside else LEGEND
    return text + ("; " + CLUSTERS_LEGEND if any(clusters_text(r) for r in results) else "")


def pair_names(result: ItemRecord) -> tuple[str, str]:
    """The names the run gave the pair, as node ids show them (recorded without base-URL credentials,
    `plugin.runner`); reports before names were recorded carry the ids only."""
    return result.source_name or result.source, result.target_name or result.target


def pair_text(result: ItemRecord, arrow: str = " -> ") -> str:
    """`source -> target` by model id, each preceded by the run's name for it when that is an alias."""
    names = pair_names(result)
    ids = result.source, result.target
    return arrow.join(i if n == i else f"{n} ({i})" for n, i in zip(names, ids))


def _score(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def gain_text(result: ItemRecord) -> str:
    """`+0.67 [+0.33, +1.00]`: the paired gain with its 95% interval."""
    gain = result.gain
    return f"{gain.mean:+.2f} [{gain.ci_low:+.2f}, {gain.ci_high:+.2f}]"


def night_verdict(night: dict[str, Any]) -> str:
    """What the gate did with one night's edits: accepted, rejected, or no change (nothing applied)."""
    if night["accepted"]:
        return "accepted"
    return "rejected" if night["applied"] else "no change"


def p_text(value: float | None) -> str:
    """`0.031`, `<.001`, or `-`."""
    if value is None:
        return "-"
    return "<.001" if value < 0.001 else f"{value:.3f}"


def mdg_text(result: ItemRecord) -> str:
    """The minimal detectable gain at this task count, or `>1` when no gain is detectable."""
    mdg = result.gain.mdg
    return ">1" if mdg is None else f"{mdg:.2f}"


def units_text(gain: GainRecord | ScoreRecord) -> str:
    """What the gain's (or score's) test counted: `40 task(s)`, or with clusters `12 cluster(s) of 40 task(s)`."""
    if gain.unit == "cluster":
        return f"{gain.clusters} cluster(s) of {gain.tasks} task(s)"
    return f"{gain.n} task(s)"


def clusters_text(result: ItemRecord) -> str | None:
    """`8 of 40, deff 2.31`: the clusters the gain counted, of how many tasks, and the design effect; `3 of 12:
    too few` when no verdict is possible; None for an unclustered result."""
    gain = result.gain
    if gain.unit != "cluster":
        return None
    if too_few_clusters(gain):
        return f"{gain.clusters} of {gain.tasks}: too few"
    effect = gain.design_effect
    return f"{gain.clusters} of {gain.tasks}, deff " + ("-" if effect is None else f"{effect:.2f}")


def design_effect_text(gain: GainRecord) -> str:
    """`, design effect 2.31` for a clustered gain (`-` when undefined), empty otherwise."""
    if gain.unit != "cluster":
        return ""
    effect = gain.design_effect
    return ", design effect " + ("-" if effect is None else f"{effect:.2f}")


def too_few_clusters(gain: GainRecord | ScoreRecord) -> str | None:
    """The plain statement that a clustered gain's (or score's) clusters are too few for any verdict; None otherwise."""
    from ..evidence.stats import undecidable_units, units_needed

    if gain.unit != "cluster" or gain.clusters is None or not undecidable_units(gain.clusters):
        return None
    return (f"too few clusters for any verdict: {gain.clusters} cluster(s) can never show a significant gain or "
            f"harm, whatever the tasks do (clusters are the test's units; at least {units_needed()} are needed): "
            "add clusters")


def efficiency_text(result: ItemRecord, interval: bool = False) -> str:
    """Efficiency (with its interval when asked), `-` unless the direct headroom is significant."""
    ci = result.efficiency_ci
    if ci is None:
        return "-"
    return f"{ci.mean:.2f} [{ci.ci_low:.2f}, {ci.ci_high:.2f}]" if interval else f"{ci.mean:.2f}"


def restarts_text(result: ItemRecord) -> str | None:
    """`5 sd 0.47`: the number of restarts and the sd of their gains; None for a single optimization."""
    spread = result.gain.restarts
    return None if not spread else f"{spread['count']} sd {spread['sd']:.2f}"


def these_text(result: ItemRecord) -> str | None:
    """`-0.59 [-0.81, -0.31]`: the mean gain of the R skills actually learned with its exact interval over
    tasks (`stats.these_bounds_of`); None for a single optimization or a record without it."""
    these = (result.gain.restarts or {}).get("these")
    return None if not these else f"{result.gain.mean:+.2f} [{these['ci_low']:+.2f}, {these['ci_high']:+.2f}]"


def _with_constant(results: list[ItemRecord], columns: tuple[str, ...],
                   rows: list[tuple[str, ...]]) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """Insert the `const.` column after the outcome when any result's checks a constant answer passes."""
    if not any(constant_text(r) for r in results):
        return columns, rows
    at = columns.index("outcome") + 1
    cells = [constant_text(r) or "-" for r in _sorted(results)]
    return (*columns[:at], CONSTANT_COLUMN, *columns[at:]), [(*row[:at], c, *row[at:]) for row, c in zip(rows, cells)]


def _with_restarts(results: list[ItemRecord], columns: tuple[str, ...], rows: list[tuple[str, ...]],
                   after: str) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """Insert the restarts and these-skills columns after `after` when any result has restarts, and the
    clusters column (`clusters_text`) after them when any result counts clusters."""
    for name, cell, empty in (("clusters", clusters_text, "-"), ("these skills [95% CI]", these_text, "-"),
                              ("restarts", restarts_text, "1")):
        if not any(cell(r) for r in results):
            continue
        at = columns.index(after) + 1
        cells = [cell(r) or empty for r in _sorted(results)]
        columns, rows = ((*columns[:at], name, *columns[at:]),
                         [(*row[:at], text, *row[at:]) for row, text in zip(rows, cells)])
    return columns, rows


def verdict_label(record: GateRecord) -> str:
    """What a gate record shows: fail or inconclusive as they are; `pass` only when a claim gate applied,
    else `unchanged vs snapshot` (the committed snapshot matched) or `no gate`: nothing was claimed."""
    if record.verdict != "pass":
        return record.verdict
    claims = record.claims if "claims" not in record.absent else [g.gate for g in record.gates if g.gate in claim_gates()]
    if claims:
        return "pass"
    return UNCHANGED if record.snapshot == "ok" else NO_GATE


def verdict_text(result: ItemRecord) -> str:
    """The gates' verdict (`verdict_label`), `-` when the item was not gated."""
    gate = result.gate
    return "-" if not gate else verdict_label(gate)


def method_text(result: ItemRecord) -> str:
    """The gain's test in a few words: `exact unconditional` or, above the exact range, `asymptotic Tango`."""
    method = result.gain.method or ""
    return "asymptotic Tango score" if "asymptotic" in method else "exact unconditional" if "exact uncond" in method \
        else method or "exact"


def outcome_text(result: ItemRecord) -> str:
    """The item's word in the run's family (`evidence.run_family`); a record without one: what its interval shows."""
    from ..evidence.stats import outcome

    return result.outcome or outcome(result.gain.ci_low, result.gain.ci_high)


CONSTANT_COLUMN = "const"


def constant_text(result: ItemRecord) -> str:
    """`24/24` when a constant answer passes at least half of the held-out tasks (the checks cannot tell a right
    answer from a wrong one), else nothing: the `const.` column, shown when any row has it."""
    found = result.constant_answer
    return f"{found.passes}/{found.tasks}" if found is not None and found.flagged else ""


def usd_text(value: float | None) -> str:
    """Dollars, or `n/a` when a model has no price."""
    return "n/a" if value is None else f"{value:.4f}"


def seed_line(result: ItemRecord) -> str:
    """One line per seed, as the upstream CLI prints it, plus the interval."""
    direct = (f" direct={_score(result.direct_target)}" if result.direct_target is not None
              else " direct=not needed" if result.direct_skipped else "")
    return (f"  {result.seed:<24} baseline={_score(result.baseline_target)} "
            f"transferred={_score(result.transferred)}{direct}  (gain {gain_text(result)}, "
            f"p={p_text(result.gain.p_value)}, mdg {mdg_text(result)}"
            + (f", restarts {restarts_text(result)}" if restarts_text(result) else "") + ")")


def summary_line(results: list[ItemRecord]) -> str:
    """`=== transfer a -> b: of N (seed, pair), in the run's family (...): T transfer, ... ===`: the counts of the
    words the rows show."""
    from ..evidence.summary import summarize

    pairs = sorted({pair_text(r) for r in results})
    summary = summarize(results)
    counts = summary["outcomes"]
    total = [r.cost.total_usd for r in results]
    usd = None if any(v is None for v in total) else sum(total)
    return (f"=== transfer {', '.join(pairs)}: of {summary['hypotheses']} (seed, pair){same_answers_text(summary)}, "
            f"{family_text(summary)}: "
            f"{counts['transfers']} transfer, {counts['hurts']} hurt{alone_text(summary.get('shown_alone', 0))}, "
            f"{counts['no effect shown']} no effect shown"
            f"{undecidable_text(summary.get('undecidable', 0))}; "
            f"mean gain {summary['mean_gain']:+.2f}, cost ${usd_text(usd)}{cache_text(results)} ===")


def family_text(summary: dict[str, Any]) -> str:
    """How the words were judged: `Bonferroni over the run's 40 items (FWER 5%)`, and how many kept the family
    their snapshot recorded."""
    if summary.get("correction") != "bonferroni":
        return "each item alone at 95% (no error control over the run)"
    family = summary["family"]
    sizes = "/".join(str(size) for size in family["sizes"])
    return f"Bonferroni over {sizes} item(s) (FWER 5%)"


def same_answers_text(summary: dict[str, Any]) -> str:
    """`, 2 with byte-identical answers counted once`, or nothing."""
    same = (summary.get("family") or {}).get("same_answers", 0)
    return f" ({same} more with byte-identical answers counted once)" if same else ""


def alone_text(count: int) -> str:
    """`, 2 shown alone` (the item's own test shows it, the family's does not), or nothing."""
    return f", {count} shown alone (not after adjustment)" if count else ""


def cache_text(results: list[ItemRecord]) -> str:
    """`, prompt cache saved $x (n tokens read)` when any call read or wrote the prompt cache, else ``."""
    read = sum(r.cost.cache_read_tokens for r in results)
    written = sum(r.cost.cache_write_tokens for r in results)
    if not read and not written:
        return ""
    saved = [r.cost.cache_saved_usd for r in results]
    amount = "n/a" if any(v is None for v in saved) else f"{sum(saved):.4f}"
    return f", prompt cache saved ${amount} ({read} tokens read, {written} written)"


def undecidable_text(count: int, why: bool = True) -> str:
    """`, 3 undecidable (...)`: the items no outcome could make a finding of the run's family, counted apart; empty
    when there are none."""
    if not count:
        return ""
    return f", {count} undecidable" + (" (too few held-out units for any finding at the family's level)" if why else "")


def pair_lines(results: list[ItemRecord]) -> list[str]:
    """Per pair, the counts of its rows' words and the mean gain over seeds with its exact 95% interval over seeds."""
    from ..evidence.summary import summarize

    return [f"{p['source']} -> {p['target']}: {p['transfers']} transfer, {p['hurts']} hurt"
            f"{alone_text(p.get('shown_alone', 0))}, "
            f"{p['no_effect']} no effect shown{undecidable_text(p.get('undecidable', 0), why=False)}; mean gain over {p['seeds']} seed(s) {p['mean_gain']:+.2f} "
            + (f"[{p['ci_low']:+.2f}, {p['ci_high']:+.2f}] (interval over seeds like these)" if p["ci_low"] is not None
               else f"(too few seeds for an interval over seeds: {p['seeds_needed']} needed)")
            for p in summarize(results)["pairs"]]


def _seed_label(result: ItemRecord) -> str:
    """The seed, plus the test's name for a hand-written test (so it is not mistaken for a matrix item)."""
    item = result.item or ""
    if not item or "::transfer[" in item:
        return result.seed
    return f"{result.seed} ({item.split('::')[-1]})"


def _short(text: str, width: int = SEED_CHARS) -> str:
    """`text` cut to `width` in the middle (`review~example`), so names that share a prefix stay apart."""
    if len(text) <= width:
        return text
    tail = (width - 1) // 2
    return text[: width - 1 - tail] + "~" + text[len(text) - tail:]


def _sorted(results: list[ItemRecord]) -> list[ItemRecord]:
    return sorted(results, key=lambda r: (r.seed, r.source, r.target))


def table_rows(results: list[ItemRecord]) -> list[tuple[str, ...]]:
    """Rows of the terminal table (`COLUMNS`), sorted by seed and pair."""
    return [(_short(_seed_label(r)), pair_text(r, "->"), _score(r.baseline_target),
             _score(r.transferred), gain_text(r), p_text(r.gain.p_value), mdg_text(r),
             efficiency_text(r), outcome_text(r), verdict_text(r)) for r in _sorted(results)]


def md_rows(results: list[ItemRecord]) -> list[tuple[str, ...]]:
    """Rows of the Markdown table (`MD_COLUMNS`), sorted by seed and pair."""
    return [(_seed_label(r), pair_text(r, "->"), _score(r.baseline_target), _score(r.transferred),
             _score(r.direct_target), gain_text(r), p_text(r.gain.p_value), mdg_text(r),
             efficiency_text(r, interval=True), str(r.cost.calls), str(r.cost.tokens),
             usd_text(r.cost.total_usd), outcome_text(r), verdict_text(r)) for r in _sorted(results)]


def md_table(results: list[ItemRecord]) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """The Markdown table's columns and rows (with a restarts column when any result has restarts)."""
    return _with_constant(results, *_with_restarts(results, MD_COLUMNS, md_rows(results), "gain [95% CI]"))


def text_table(results: list[ItemRecord], max_width: int = TABLE_WIDTH) -> str:
    """A fixed-width table for the terminal, narrower than `max_width`, one block per pair (`source -> target`
    above its rows), the pair's hand-written tests in a block of their own below it: when the cells would make it wider, the seed column is cut (`~`); the node ids name
    every item in full."""
    columns, body = _with_constant(results, *_with_restarts(results, COLUMNS, table_rows(results), "gain [95% CI]"))
    at = columns.index("pair")
    hand = [_is_hand_written(r) for r in _sorted(results)]
    body = [(r.seed, *row[1:]) if by_hand else row for row, r, by_hand in zip(body, _sorted(results), hand)]
    pairs = [row[at] for row in body]
    rows = [(*columns[:at], *columns[at + 1:]), *((*row[:at], *row[at + 1:]) for row in body)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    column = 0  # the seed
    excess = sum(widths) + 2 * (len(widths) - 1) - (max_width - 1)
    if excess > 0:
        widths[column] = min(widths[column], max(MIN_LABEL_CHARS, widths[column] - excess))
        rows = [row if j == 0 else (_short(row[column], widths[column]), *row[column + 1:])
                for j, row in enumerate(rows)]
    lines = ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(rows[0])).rstrip(),
             "  ".join("-" * w for w in widths)]
    for pair in sorted(set(pairs), key=lambda p: tuple(p.split("->", 1))):
        for by_hand in (False, True):
            block = ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip()
                     for row, row_pair, row_hand in zip(rows[1:], pairs, hand) if (row_pair, row_hand) == (pair, by_hand)]
            if block:
                lines.append(pair.replace("->", " -> ") + (HAND_BLOCK if by_hand else ":"))
                lines += block
    return "\n".join(lines)


HAND_BLOCK = ", hand-written tests (each counted once with the matrix item of its seed and pair):"


def _is_hand_written(result: ItemRecord) -> bool:
    from .why import is_hand_written

    return is_hand_written(result)


def unfinished_answers(result: ItemRecord) -> str | None:
    """`baseline: 2 truncated; transferred: 1 refusal; usage missing on 3 calls`, or None when all answers
    were finished and every call reported its usage."""
    parts = []
    for phase in ("baseline", "transferred", "direct"):
        evaluation = getattr(result.scores, phase)
        stops = evaluation.stops if evaluation is not None else {}
        counted = [f"{n} {kind.replace('_', ' ')}" for kind, n in stops.items() if n]
        if counted:
            parts.append(f"{phase}: {', '.join(counted)}")
    missing = result.cost.usage_unreported_calls
    if missing:
        parts.append(f"usage missing on {missing} call(s) (their tokens and cost are unknown, not 0)")
    return "; ".join(parts) or None


def price_difference(results: list[ItemRecord]) -> str | None:
    """What optimizing on the source cost against optimizing directly on the target, summed over results
    (an optimization several results share, e.g. one source for two targets, counted once)."""
    rows = [r for r in results if r.cost.optimize_direct_usd is not None]
    if not rows or any(r.cost.optimize_source_usd is None for r in rows):
        return None
    sources = {(r.seed, r.source, r.optimizer): r.cost.optimize_source_usd for r in rows}
    directs = {(r.seed, r.target, r.optimizer if r.optimizer != r.source else None):
               r.cost.optimize_direct_usd for r in rows}
    source, direct = sum(sources.values()), sum(directs.values())
    ratio = f" ({direct / source:.1f}x)" if source > 0 else ""
    return f"optimization cost: on source ${source:.4f} vs direct on target ${direct:.4f}{ratio}"


def gate_reason(gate: GateDecision, against: str | None = None) -> str:
    """One gate record (`Gate.as_dict`) in a few words, e.g. `gain +0.04 [-0.38, +0.45] inconclusive for
    min_gain +0.30: 61 tasks would decide it` (its `message` holds the full sentence); `against`: the base
    ref a regression gate compared with (`--compare-to`), named instead of "snapshot"."""
    name, verdict, estimate, low, high = gate.gate, gate.verdict, gate.estimate, gate.ci_low, gate.ci_high
    if name == "judge_stability":
        return f"pass rests on {estimate:.0f} uncertain rubric verdict(s)"
    if name == "expect":  # "seed.toml declares 'hurts' for A -> B but the run shows '...': gain ... (95% CI, n)"
        return gate.message.split("; ")[0] or f"expect {verdict}"
    fmt = "+.2f" if is_signed(name) else ".2f"
    label = label_of(name)
    if name == "regression_tolerance" and against:
        label = f"change vs {against}"
    if estimate is None:
        shown = f"{label} undefined"
    elif low is None or high is None:
        shown = f"{label} {estimate:{fmt}}"
    else:
        shown = f"{label} {estimate:{fmt}} [{low:{fmt}}, {high:{fmt}}]"
        level = gate.level
        if level is not None and abs(level - 0.95) > 1e-9:  # tested at the run family's level: say which
            shown += f" ({level * 100:.6g}% CI)"
    if name == "regression_tolerance":
        return f"{'regression' if verdict == 'fail' else verdict}: {shown} beyond tolerance {gate.threshold:.2f}"
    threshold = f"{name} {gate.threshold:{fmt}}"
    if verdict == "fail":
        return f"{shown} below {threshold}"
    if verdict == "inconclusive" and "too few clusters for any verdict" in gate.message:
        return f"{shown}: too few clusters for any verdict"
    if verdict == "inconclusive":
        tasks = gate.tasks_to_decide
        return f"{shown} inconclusive for {threshold}" + (f": {tasks} tasks would decide it" if tasks else "")
    return f"{shown} meets {threshold}"


def snapshot_reason(snapshot: str) -> str | None:
    """A gate record's `snapshot` field in short (without the file, which the item names); None when it matched."""
    if snapshot in ("ok", "updated", "not compared"):
        return None
    _, differs, change = snapshot.partition(" differs: ")
    return f"snapshot differs, {change}" if differs else snapshot


def failure_reason(result: ItemRecord) -> str:
    """Why an item did not pass, in one line: failed gates first, then inconclusive ones, then a snapshot change."""
    record = result.gate
    gates = sorted((g for g in (record.gates if record else ()) if g.verdict != "pass"), key=lambda g: g.verdict != "fail")
    snapshot = snapshot_reason(record.snapshot or "ok") if record else None
    against = (result.compare or {}).get("ref")
    return "; ".join([gate_reason(g, against) for g in gates] + ([snapshot] if snapshot else [])) or "skill transfer failed"
