"""TransferResult -> its typed record (`evidence.item_record.ItemRecord`) and the JSON report: upstream's fields
first, then ours (CIs, p-values, efficiency, cost, skills, tasks).

Each result carries everything the run-level statistics need (per-task scores, the gain's p-value,
n and mean), so `summary.summarize` recomputes them exactly from any list of results, e.g. merged shards.

The CLI's `--json`, the plugin's `--skilltransfer-json` and the snapshots all use this one shape.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, replace
from typing import Any, Iterable

from ..engine.ledger import Tally, evidence_digest
from ..engine.results import Costs, Evaluation, Night, Optimization, TaskResult, TransferResult, total_costs
from ..engine.validation import DEFAULT_TOLERANCE, ValidationScore
from ..evidence.stats import clustered_score, mean, outcome
from ..evidence.item_record import CostRecord, ItemRecord
from ..evidence.summary import summarize
from ..pricing.prices import cache_saving_usd, cost_usd, lane_of
from .judge_report import judge_json, verdict_json
from .why import check_arms, run_checks

EXPERIMENT = "skilltransfer/transfer"
TAIL_CHARS = 300
ANSWER_CHARS = 2000  # each answer's text kept in the report (the HTML page shows it); 0 keeps none


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def cost_rows(costs: Costs) -> list[dict[str, Any]]:
    """One row per (model, role): calls paid, uses reused (answers paid for once already: `cached`, and
    what they would have cost again, `reused_usd`), tokens (prompt-cache writes and reads are part of
    the input tokens) and dollars (None when unpriced), with what prompt caching saved."""
    rows = []
    for (model_id, role), tally in costs.items():
        usd = cost_usd(model_id, tally.usage)
        saved = cache_saving_usd(model_id, tally.usage)
        reused = cost_usd(model_id, tally.reused)
        rows.append({
            "model": model_id, "role": role, "lane": lane_of(model_id), **_lane_parts(model_id, tally),
            "calls": tally.calls, "cached": tally.cached,
            "input_tokens": tally.usage.input_tokens, "output_tokens": tally.usage.output_tokens,
            "cache_write_tokens": tally.usage.cache_write_tokens, "cache_read_tokens": tally.usage.cache_read_tokens,
            "usage_unreported": tally.usage.unreported,
            "usd": _round_usd(usd), "reused_usd": _round_usd(reused), "cache_saved_usd": _round_usd(saved),
        })
    return rows


def _lane_parts(model_id: str, tally: Tally) -> dict[str, Any]:
    """`lanes`: dollars per lane, for a row part of whose answers were paid outside the model's lane
    (a batch lane's synchronous fallback, ...); nothing for the usual row."""
    if not tally.usage.lanes:
        return {}
    return {"lanes": {lane: _round_usd(cost_usd(model_id, part, lane))
                      for lane, part in tally.usage.parts(lane_of(model_id))}}


def cache_saved(costs: Costs) -> float | None:
    """Dollars prompt caching saved over a cost table; None when any model in it has no price."""
    total = 0.0
    for (model_id, _), tally in costs.items():
        saved = cache_saving_usd(model_id, tally.usage)
        if saved is None:
            return None
        total += saved
    return total


def dollars(costs: Costs) -> float | None:
    """Total dollars of a cost table; None when any model in it has no price."""
    total = 0.0
    for (model_id, _), tally in costs.items():
        usd = cost_usd(model_id, tally.usage)
        if usd is None:
            return None
        total += usd
    return total


def reused_dollars(costs: Costs) -> float | None:
    """What the reused answers of a cost table would have cost again; None when any model is unpriced."""
    total = 0.0
    for (model_id, _), tally in costs.items():
        usd = cost_usd(model_id, tally.reused)
        if usd is None:
            return None
        total += usd
    return total


def tokens(costs: Costs) -> int:
    """Input + output tokens of a cost table."""
    return sum(t.usage.input_tokens + t.usage.output_tokens for t in costs.values())


def calls(costs: Costs) -> int:
    return sum(t.calls for t in costs.values())


ROLES = ("agent_on_source", "agent_on_target", "optimizer")


def role_of(phase: str, role: str, model: str | None = None, source: str | None = None) -> str:
    """Which of the three paid roles a (phase, meter role) is: the optimizer, or the agent on either side (in the
    optimization against a validation set, the source's calls are on the source, the listed models' on targets)."""
    if role == "optimizer":
        return "optimizer"
    if phase in ("optimize-portable", ERRORED_PHASE):
        return "agent_on_source" if model == source else "agent_on_target"
    return "agent_on_source" if phase == "optimize-source" else "agent_on_target"


def sum_roles(parts: Iterable[tuple[str, int, int, float | None]]) -> dict[str, dict[str, Any]]:
    """(role, calls, tokens, usd) parts summed per role; dollars are None once any part is unpriced."""
    totals: dict[str, dict[str, Any]] = {role: {"calls": 0, "tokens": 0, "usd": 0.0} for role in ROLES}
    for role, calls_, tokens_, usd in parts:
        total = totals[role]
        total["calls"] += calls_
        total["tokens"] += tokens_
        total["usd"] = None if total["usd"] is None or usd is None else total["usd"] + usd
    return {role: {**t, "usd": _round_usd(t["usd"])} for role, t in totals.items()}


def role_costs(phases: dict[str, list[dict[str, Any]]], source: str | None = None) -> dict[str, dict[str, Any]]:
    """Calls, tokens and dollars per role (by role, not by model: one model may play several roles)."""
    return sum_roles((role_of(phase, row["role"], row["model"], source), row["calls"],
                      row["input_tokens"] + row["output_tokens"], row["usd"])
                     for phase, rows in phases.items() for row in rows)


def _evaluation(ev: Evaluation | None, answer_chars: int = ANSWER_CHARS) -> dict[str, Any] | None:
    if ev is None:
        return None
    return {
        "model": ev.model_id, "split": ev.split, "hard": ev.hard.as_dict(), "soft": ev.soft.as_dict(),
        "scoring": {"profile": ev.scoring, "score": round(ev.profile_score, 4)},
        "stops": ev.stops,
        "tasks": [
            {"task_id": t.task_id, **_cluster(t), "hard": round(t.hard, 4), "soft": round(t.soft, 4),
             "samples": _samples(t, answer_chars)}
            for t in ev.tasks
        ],
    }


def _cluster(task: TaskResult) -> dict[str, str]:
    """A task's `cluster` entry (none for a task that names no cluster, so unclustered reports keep their shape)."""
    return {} if task.cluster is None else {"cluster": task.cluster}


def _samples(task: TaskResult, answer_chars: int = ANSWER_CHARS) -> list[dict[str, Any]]:
    return [{"sample_id": s.sample_id, "hard": s.hard, "soft": round(s.soft, 4), "failed": list(s.failed),
             "stop_reason": s.stop_reason,
             **({"answer": answer_text(s.answer, answer_chars)} if answer_chars else {}),
             **({"rubric": [verdict_json(v) for v in s.rubric]} if s.rubric else {})}
            for s in task.samples]


def answer_text(answer: str, limit: int) -> str:
    """An answer cut to `limit` characters, saying how much was left out."""
    if len(answer) <= limit:
        return answer
    return answer[:limit] + f"\n[... {len(answer) - limit} more characters not kept; --skilltransfer-answer-chars]"


def _averaged(evaluations: list[Evaluation], answer_chars: int = ANSWER_CHARS) -> dict[str, Any]:
    """Several restarts' evaluations of one split as one: per-task means over restarts, two-level intervals."""
    first = evaluations[0]
    hard = [[t.hard for t in ev.tasks] for ev in evaluations]
    soft = [[t.soft for t in ev.tasks] for ev in evaluations]
    clusters = [t.cluster for t in first.tasks]
    return {
        "model": first.model_id, "split": first.split,
        "hard": {**clustered_score(hard, clusters).as_dict(),
                 "restart_means": [round(clustered_score([v], clusters).mean, 4) for v in hard]},
        "soft": clustered_score(soft, clusters).as_dict(),
        "stops": {kind: sum(ev.stops[kind] for ev in evaluations) for kind in first.stops},
        "tasks": [{"task_id": tasks[0].task_id, **_cluster(tasks[0]), "hard": round(mean(h), 4), "soft": round(mean(s), 4),
                   "restarts": [round(v, 4) for v in h],
                   "samples": [sample for task in tasks for sample in _samples(task, answer_chars)]}
                  for tasks, h, s in zip(zip(*(ev.tasks for ev in evaluations)), zip(*hard), zip(*soft))],
    }


def _scores(evaluations: list[Evaluation | None], answer_chars: int = ANSWER_CHARS) -> dict[str, Any] | None:
    """One evaluation's JSON, or the restart average of several."""
    present = [ev for ev in evaluations if ev is not None]
    if not present:
        return None
    return _evaluation(present[0], answer_chars) if len(present) == 1 else _averaged(present, answer_chars)


def _restarts(result: TransferResult) -> list[dict[str, Any]] | None:
    """Per restart (only with R > 1): its split seed, scores, gain and learned skill."""
    runs = result.runs
    if len(runs) == 1:
        return None
    return [{
        "restart": run.restart, "split_seed": run.split_seed,
        "transferred": round(run.transferred.hard.mean, 4),
        "direct": None if run.direct is None else round(run.direct.hard.mean, 4),
        "gain": round(gain, 4), "learned_skill": run.learned.learned_skill,
        "nights": [_night(n) for n in run.learned.nights],
    } for run, gain in zip(runs, result.gain.restart_gains)]


def _night(night: Night, tolerance: float = DEFAULT_TOLERANCE) -> dict[str, Any]:
    listed = {"validation": [_validation(v, tolerance) for v in night.validation],
              "blocked_by": list(night.blocked_by)} if night.validation else {}
    return {
        "night": night.number, "val_before": _round(night.val_before), "val_after": _round(night.val_after),
        "accepted": night.accepted, "applied": [asdict(e) for e in night.applied],
        "unmatched": [{**asdict(e), "reason": why} for e, why in night.unmatched], "note": night.note, **listed,
    }


def _validation(score: ValidationScore, tolerance: float) -> dict[str, Any]:
    """A listed model's validation gate score, each kind of check's pass rate, and the kinds that dropped."""
    return {"model": score.model_id, "before": _round(score.before), "after": _round(score.after),
            "checks": [{"check": c.check, "before": _round(c.before), "after": _round(c.after)} for c in score.checks],
            "dropped_checks": [c.check for c in score.dropped_checks(tolerance)]}


def _optimization(opt: Optimization | None) -> dict[str, Any] | None:
    if opt is None:
        return None
    return {"agent": opt.agent_id, "optimizer": opt.optimizer_id, "learned_skill": opt.learned_skill,
            "nights": [_night(n, opt.tolerance) for n in opt.nights]}


def _profile_scores(result: TransferResult) -> dict[str, Any]:
    """The scoring profile's set scores of the three held-out evaluations (gbrain: mean of soft medians)."""
    baseline, transferred = result.baseline.profile_score, result.transferred.profile_score
    direct = result.direct.profile_score if result.direct else None
    return {"profile": result.config.scoring, "baseline": _round(baseline), "transferred": _round(transferred),
            "direct": _round(direct), "gain": _round(transferred - baseline)}


def result_to_json(result: TransferResult, answer_chars: int = ANSWER_CHARS) -> dict[str, Any]:
    """One result in the report shape (`item_record(...).to_json()`)."""
    return item_record(result, answer_chars).to_json()


def item_record(result: TransferResult, answer_chars: int = ANSWER_CHARS) -> ItemRecord:
    """One result's record; each answer's text is kept up to `answer_chars` characters.

    Its cost is its bill: each answer it used is charged once, and not at all when an earlier result
    of the run paid for it (`TransferResult.billed_costs`); the optimizations' own figures
    (`optimize_source_usd`, `optimize_direct_usd`) are what they cost, whoever paid."""
    phases = result.phase_costs()
    billed = result.billed_costs()
    merged = total_costs(result)
    runs = result.runs
    transferred = _scores([run.transferred for run in runs], answer_chars)
    direct = _scores([run.direct for run in runs], answer_chars) if result.direct else None
    phase_rows = {name: cost_rows(costs) for name, costs in billed.items()}
    record = {
        "seed": result.seed,
        "source": result.source,
        "target": result.target,
        "source_name": result.source_name or result.source,
        "target_name": result.target_name or result.target,
        "baseline_target": _round(result.baseline.hard.mean),
        "direct_target": None if direct is None else _round(direct["hard"]["mean"]),
        "direct_skipped": result.direct_skipped,
        "transferred": _round(transferred["hard"]["mean"]),
        "transfer_gain": _round(result.gain.mean),
        "learned_skill_tail": result.learned.learned_skill[-TAIL_CHARS:],
        "optimizer": result.optimizer,
        "gain": result.gain.as_dict(),
        "sequential": sequential_record(result),
        "outcome": outcome(result.gain.low, result.gain.high),
        "efficiency": _round(result.efficiency),
        "efficiency_ci": None if result.efficiency_estimate is None else result.efficiency_estimate.as_dict(),
        "headroom": None if result.headroom is None else result.headroom.as_dict(),
        "scoring": _profile_scores(result),
        "scores": {
            "baseline": _evaluation(result.baseline, answer_chars),
            "transferred": transferred,
            "direct": direct,
        },
        "restarts": _restarts(result),
        "learned_skill": result.learned.learned_skill,
        "seed_skill": result.learned.initial_skill,
        "optimization": {"source": _optimization(result.learned), "direct": _optimization(result.direct_optimization)},
        "cost": {
            "phases": phase_rows,
            "roles": role_costs(phase_rows, result.source),
            "total_usd": _round_usd(dollars(merged)),
            "reused_usd": _round_usd(reused_dollars(merged)),
            "reused_calls": sum(t.cached for t in merged.values()),
            "optimize_source_usd": _round_usd(dollars(phases["optimize-source"])),
            "optimize_direct_usd": _round_usd(dollars(phases["optimize-direct"])) if "optimize-direct" in phases else None,
            "calls": calls(merged),
            "tokens": tokens(merged),
            "cache_read_tokens": sum(t.usage.cache_read_tokens for t in merged.values()),
            "cache_write_tokens": sum(t.usage.cache_write_tokens for t in merged.values()),
            "cache_saved_usd": _round_usd(cache_saved(merged)),
            "usage_unreported_calls": sum(t.usage.unreported for t in merged.values()),
        },
        "evidence": _evidence(result),
        **({"portable": _portable(result, phases, answer_chars)} if result.portable else {}),
        "config": asdict(result.config),
        **({"judge": judge_json(result)} if result.judge is not None else {}),
        **({"unlearnable": {"checks_never_passed": list(result.never_passed)}} if result.unlearnable else {}),
    }
    item = ItemRecord.from_json(record)
    return replace(item, checks=check_arms(item))


def sequential_record(result: TransferResult) -> dict[str, Any] | None:
    """The held-out design and where it stopped (`evidence.sequential`): its looks and shares of alpha, the
    stopping look, its tasks of all, why it stopped, the level of the item's own interval there, and why the
    fixed design ran where looks were asked for (`note`); None for a result without a recorded stop."""
    from ..evidence.sequential import DESIGNS

    stop = result.stop
    if stop is None:
        return None
    past = {t.task_id: round(t.hard, 4) for t in result.reference.tasks} if result.reference is not None else None
    return {**DESIGNS[stop.design].as_dict(stop.total), **stop.as_dict(), "level": round(stop.level(), 8),
            "note": result.design_note or None, **({"reference": past} if past else {}),
            **({"regression": {"look": result.regression.number, "tasks": result.regression.tasks,
                               "alpha_share": result.regression.share}} if result.regression is not None else {})}


ERRORED_PHASE = "errored"  # the bill of an item that stopped before its result


def errored_cost(costs: Costs, source: str | None = None) -> dict[str, Any]:
    """The cost record of an item that errored (or stopped on the budget) before its result: what its calls
    spent that no result paid, under the phase `errored`, so the run's totals keep it."""
    rows = {ERRORED_PHASE: cost_rows(costs)} if costs else {}
    return {"phases": rows, "roles": role_costs(rows, source), "total_usd": _round_usd(dollars(costs)),
            "calls": calls(costs), "tokens": tokens(costs),
            "usage_unreported_calls": sum(t.usage.unreported for t in costs.values())}


def with_earlier_try(record: ItemRecord, spent: dict[str, Any]) -> ItemRecord:
    """A result whose item errored on an earlier try (pytest-rerunfailures) carries what that try spent
    (`errored_cost`): its rows under the phase `errored`, added to the result's totals, so a rerun keeps
    the whole bill (the answers it reused from that try count as reused, not paid)."""
    return replace(record, cost=CostRecord.from_json(with_spent(record.cost.to_json(), spent, record.source)))


def with_spent(cost: dict[str, Any], spent: dict[str, Any], source: str | None = None) -> dict[str, Any]:
    """A cost record (a result's, or an errored item's `errored_cost`) with what an earlier errored try spent
    added: its rows under the phase `errored`, and its calls, tokens and dollars in the totals."""
    rows = (spent.get("phases") or {}).get(ERRORED_PHASE)
    if not rows:
        return cost
    cost = dict(cost)
    phases = {**cost["phases"], ERRORED_PHASE: [*cost["phases"].get(ERRORED_PHASE, []), *rows]}
    total, extra = cost.get("total_usd"), spent.get("total_usd")
    cost.update(phases=phases, roles=role_costs(phases, source),
                total_usd=None if total is None or extra is None else _round_usd(total + extra),
                calls=cost.get("calls", 0) + spent.get("calls", 0), tokens=cost.get("tokens", 0) + spent.get("tokens", 0))
    return cost


IN_SAMPLE = "in sample: the target was a validation model"


def _portable(result: TransferResult, phases: dict[str, Costs], answer_chars: int) -> dict[str, Any]:
    """The skill optimized against the validation set: its nights, its score on the target, the family of three
    comparisons with the outcome word, and what it cost beyond today's arm (per model)."""
    first = result.portable[0]
    family = result.portability
    assert family is not None
    extra = _merge_phase_costs(phases["optimize-portable"], phases["portable"])
    in_sample = result.target in first.learned.validate_on
    return {
        "validate_on": list(first.learned.validate_on),
        "tolerance": first.learned.tolerance,
        "outcome": IN_SAMPLE if in_sample else family.word,
        "in_sample": in_sample,
        "estimand": ("the mean per-task difference on the target's held-out tasks between the skill optimized with "
                     "the validation set's veto and the one optimized on the source alone; out of sample only on "
                     "a target not in the validation set"),
        "family": family.as_dict(),
        "transferred": _scores([p.transferred for p in result.portable], answer_chars),
        "learned_skill": first.learned.learned_skill,
        "optimization": _optimization(first.learned),
        "restarts": [{"restart": p.restart, "transferred": round(p.transferred.hard.mean, 4),
                      "learned_skill": p.learned.learned_skill, "nights": [_night(n, p.learned.tolerance) for n in p.learned.nights]}
                     for p in result.portable] if len(result.portable) > 1 else None,
        "extra_cost": {"usd": _round_usd(dollars(extra)), "calls": calls(extra), "tokens": tokens(extra),
                       "per_model": _per_model(extra)},
    }


def _merge_phase_costs(*parts: Costs) -> Costs:
    merged: Costs = {}
    for part in parts:
        for key, tally in part.items():
            merged[key] = merged[key].merged(tally) if key in merged else tally
    return merged


def _per_model(costs: Costs) -> list[dict[str, Any]]:
    """Calls, tokens and dollars per model (all roles)."""
    models: dict[str, Costs] = {}
    for (model_id, role), tally in costs.items():
        models.setdefault(model_id, {})[(model_id, role)] = tally
    return [{"model": model_id, "calls": calls(part), "tokens": tokens(part), "usd": _round_usd(dollars(part))}
            for model_id, part in sorted(models.items())]


def _evidence(result: TransferResult) -> dict[str, Any]:
    """The distinct calls the scores were computed from (the held-out evaluations), and one digest over
    them (see `ledger`); what the optimization's calls produced is the learned skill, recorded as text."""
    scored = [result.baseline, *(ev for run in result.runs for ev in (run.transferred, run.direct) if ev is not None)]
    used: frozenset[str] = frozenset().union(*(t.evidence for ev in scored for t in ev.costs.values()))
    return {"calls": len(used), "digest": evidence_digest(used), "answers": answers_digest(result)}


def answers_digest(result: TransferResult) -> str:
    """One digest over what the gain was computed from, without the model's name or wire: the seed, the source and
    optimizer, and every held-out answer and score of the baseline and the transferred skill. Two targets with
    the same digest (one model over two wire protocols) gave byte-identical evidence: one hypothesis."""
    arms = [result.baseline, *(run.transferred for run in result.runs)]
    body = {"seed": result.seed, "source": result.source, "optimizer": result.optimizer,
            "arms": [[(t.task_id, [(s.sample_id, s.hard, s.answer) for s in t.samples]) for t in ev.tasks]
                     for ev in arms]}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode("utf-8")).hexdigest()


def _round_usd(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def run_to_json(results: list[TransferResult]) -> dict[str, Any]:
    """A whole run: upstream's top-level fields plus the results."""
    return run_report([item_record(r) for r in results])


def item_counts(results: list[ItemRecord], errors: list[dict[str, Any]]) -> dict[str, int]:
    """Every transfer item once: passed, failed and inconclusive gates, and errored items (no result)."""
    verdicts = [r.gate.verdict if r.gate is not None else "pass" for r in results]
    return {"passed": verdicts.count("pass"), "failed": verdicts.count("fail"),
            "inconclusive": verdicts.count("inconclusive"), "errored": len(errors)}


def run_report(results: list[ItemRecord], errors: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The whole-run JSON report from the items' records (e.g. gathered from xdist workers).

    `source` and `target` are always lists of model names; tokens and dollars are summed per role
    (agent on the source, agent on the target, optimizer), so a model that is a source in one pair
    and a target in another is counted in each role it played. Dollars are None when a model is unpriced.
    """
    totals = sum_roles((role, part.calls, part.tokens, part.usd)
                       for r in results for role, part in r.cost.roles.items())
    return {
        "experiment": EXPERIMENT,
        "source": sorted({r.source for r in results}),
        "target": sorted({r.target for r in results}),
        "tokens_source": totals["agent_on_source"]["tokens"],
        "tokens_target": totals["agent_on_target"]["tokens"],
        "tokens_optimizer": totals["optimizer"]["tokens"],
        "usd_source": totals["agent_on_source"]["usd"],
        "usd_target": totals["agent_on_target"]["usd"],
        "usd_optimizer": totals["optimizer"]["usd"],
        "summary": summarize(results, errors or []),
        "counts": item_counts(results, errors or []),
        "checks": run_checks(results),
        "errors": list(errors or []),
        "results": [r.to_json() for r in results],
    }
