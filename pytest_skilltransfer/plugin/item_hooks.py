"""The per-item hooks of an engaged run: after a transfer test's body, gate its result (`gating`),
compare its snapshot and raise the diagnosis on failure; attach the result to the report xdist
carries to the controller; close a seed's cassette after its last item; one short-summary line per
failure. Registered by `_engage` only, so a suite without seeds pays nothing per test."""

from __future__ import annotations

import gc
import json
import warnings
from dataclasses import replace
from typing import Any, Generator

import pytest

from ..evidence.item_record import AnswersCollapse, ConstantAnswerRecord, FamilyRecord, GateRecord, ItemRecord
from ..evidence.run_family import ALPHA, RunFamily, record as family_record, word
from ..evidence.sequential import Stopping
from ..guards.terminal import safe
from .reporting import ERROR_ATTRIBUTE, FIX, REPORT_ATTRIBUTE, is_worker, plain_nodeid
from .state import ERROR_COST, RUN, RUNNER, SPEC, ItemRun, runner_of, settings_of


def junit_properties(record: ItemRecord) -> list[tuple[str, object]]:
    """Scores and cost as (name, value) pairs, as `record_property` makes them, for JUnit XML."""
    gain, ci = record.gain, record.efficiency_ci
    values = {
        "pair": f"{record.source}->{record.target}",
        "baseline": record.baseline_target,
        "transferred": record.transferred,
        "direct": record.direct_target,
        "gain": gain.mean,
        "gain_ci_low": gain.ci_low,
        "gain_ci_high": gain.ci_high,
        "gain_p_value": gain.p_value,
        "gain_method": gain.method,
        "mdg": gain.mdg,
        "restarts": len(record.restarts or []) or None,
        "restart_gain_sd": (gain.restarts or {}).get("sd"),
        "tasks": gain.tasks or gain.n,
        "clusters": gain.clusters,  # with clusters only (the gain's units), and their design effect
        "design_effect": gain.design_effect,
        "efficiency": record.efficiency,
        "efficiency_ci_low": ci.ci_low if ci else None,
        "efficiency_ci_high": ci.ci_high if ci else None,
        "calls": record.cost.calls,
        "tokens": record.cost.tokens,
        "usd": record.cost.total_usd,
    }
    judge = record.judge
    if judge:
        calibration = judge["calibration"] or {}
        values.update({"judge": judge["model"], "judge_agreement": judge["agreement"],
                       "judge_unstable": len(judge["unstable"]), "judge_errors": judge["errors"],
                       "judge_calibration_accuracy": calibration.get("accuracy")})
    portable = record.portable
    if portable:  # --validate-on: the multi-model skill and its comparison with today's
        between = next(c for c in portable["family"]["comparisons"] if c["name"] == "multi_vs_single")
        values.update({"validate_on": ",".join(portable["validate_on"]),
                       "portable": portable["transferred"]["hard"]["mean"],
                       "portable_vs_single": between["mean"], "portable_vs_single_ci_low": between["ci_low"],
                       "portable_vs_single_ci_high": between["ci_high"], "portable_p_holm": between["p_holm"],
                       "portable_outcome": portable["outcome"], "portable_extra_usd": portable["extra_cost"]["usd"]})
    return [(f"skilltransfer_{name}", value) for name, value in values.items() if value is not None]


def _runtest_call(item: pytest.Item) -> Generator[None, Any, Any]:
    """After a transfer test's body passes: gates, snapshot, and the diagnosis on failure."""
    outcome = yield
    run = item.stash.get(RUN, None)
    if run is not None:
        _gate(item, run)
    return outcome


_FAMILY_SIZE = pytest.StashKey[int]()


def family_size(item: pytest.Item) -> int:
    """The run's distinct transfer items (seed, pair, optimizer): a hand-written test of a matrix item's seed and
    pair is the same hypothesis. The same on every xdist worker (each collects every item)."""
    config = item.config
    if _FAMILY_SIZE not in config.stash:
        keys = {(str(spec.seed_path), spec.source, spec.target, spec.optimizer or "")
                for spec in (other.stash.get(SPEC, None) for other in item.session.items) if spec is not None}
        config.stash[_FAMILY_SIZE] = max(len(keys), 1)
    return config.stash[_FAMILY_SIZE]


def run_family(item: pytest.Item, run: ItemRun) -> RunFamily:
    """The family this item is judged in: the one its committed snapshot records when its evidence is unchanged
    (so it keeps its verdict and words), else Bonferroni over the run's distinct items (`evidence.run_family`)."""
    from . import snapshots

    stop = run.record.sequential
    looks = {"share": stop.alpha_share, "futile": stop.reason == "futile"} if stop is not None else {}
    if settings_of(item.config).correction == "none":
        return RunFamily(1, method="none", **looks)
    recorded = snapshots.recorded_family(run.snapshot, run.record)
    if recorded is not None:
        return RunFamily(recorded[1], method=recorded[0], recorded=True, **looks)
    return RunFamily(family_size(item), **looks)


def stopping(item: pytest.Item, seed: Any, spec: Any, snapshot: Any) -> Stopping:
    """What the item's looks test (`evidence.sequential`): its share of the run family's alpha, and the thresholds
    of the gates that read the gain (0 for the outcome and `expect`, -harm tolerance, `min_gain`, -non-inferiority
    margin), and those of the gates that only keep it looking (regression, `min_score`, `min_efficiency`). The
    family size is the one the item's committed snapshot records when it records one, so a replay stops where its
    recording did whatever else the run collects (`-k`, another seed added); else the run's. A run that writes
    snapshots makes the regression gate's reference: it scores the transferred skill on every held-out task."""
    from . import snapshots

    settings = settings_of(item.config)
    gates = settings.thresholds(seed.thresholds, spec.thresholds)
    values = {0.0}
    for value, sign in ((gates.harm_tolerance, -1.0), (gates.min_gain, 1.0), (gates.noninferiority_margin, -1.0)):
        if value is not None:
            values.add(round(sign * value, 9) + 0.0)
    size = 1 if settings.correction == "none" else (snapshots.recorded_size(snapshot) or family_size(item))
    return Stopping(ALPHA / size, tuple(sorted(values)), *_regression_reference(item, snapshot, gates),
                    min_score=gates.min_score, min_efficiency=gates.min_efficiency,
                    full_reference=snapshots.writes_reference(item.config))


def _regression_reference(item: pytest.Item, snapshot: Any, gates: Any) -> tuple[tuple[tuple[str, float], ...], float]:
    """What the regression gate will compare the transferred skill with (the snapshot at `--compare-to`'s base, or
    the committed one unless it is being updated), so the looks go on until that comparison is decided too."""
    from . import compare_to, snapshots

    if gates.regression_tolerance is None:
        return (), 0.0
    path = snapshots.location(snapshot.use_extension(snapshots.TransferSnapshotExtension))
    base = compare_to.before(item.config, path)
    if base is not None:
        committed = base.committed(snapshots.parse_per_task)
    elif not snapshot.update_snapshots and path.is_file():
        committed = snapshots.parse_per_task(path.read_text(encoding="utf-8"))
    else:
        committed = None
    return tuple(sorted((committed or {}).items())), -gates.regression_tolerance


def _gaming(run: ItemRun) -> None:
    """The constant-answer share of the seed's held-out checks and the transferred arm's collapse, from the run's own
    answers (`engine.constant_answer`); no model call."""
    from ..engine.constant_answer import collapse, constant_answer, regex_patterns

    result = run.result
    arms = [result.baseline, *(r.transferred for r in result.runs), *(r.direct for r in result.runs if r.direct)]
    answers = [s.answer for ev in arms for t in ev.tasks for s in t.samples]
    found_constant = ConstantAnswerRecord.from_json(constant_answer(run.seed.test, answers).as_dict())
    transferred = [s.answer for r in result.runs for t in r.transferred.tasks for s in t.samples]
    base = [s.answer for t in result.baseline.tasks for s in t.samples]
    found = collapse(base, transferred, len(result.baseline.tasks), regex_patterns(run.seed.test))
    run.record = replace(run.record, constant_answer=found_constant, answers_collapse=AnswersCollapse(
        **found.as_dict(), text=found.text() if found.collapsed else None),
        context_chosen=run.seed.context_chosen or None)  # a fixed context picked by trying candidates: say how


def _gate(item: pytest.Item, run: ItemRun) -> None:
    from ..reports.report import failure_reason
    from . import compare_to, gating, snapshots
    from .diagnosis import TransferFailed, diagnose

    settings = settings_of(item.config)
    thresholds = settings.thresholds(run.seed.thresholds, run.spec.thresholds)
    committed = snapshots.committed_per_task(run.snapshot, run.record)
    updating = bool(run.snapshot.update_snapshots)
    base = compare_to.before(item.config, snapshots.location(run.snapshot))
    if base is not None:  # --compare-to: the snapshot committed at the base ref, also while updating
        committed, updating = base.committed(snapshots.parse_per_task), False
    _gaming(run)
    family = run_family(item, run)
    gain = run.record.gain.as_gain()
    run.record = replace(run.record, outcome=word(gain, family), family=FamilyRecord.from_json(family_record(gain, family)))
    runner = runner_of(item.config)
    outcome = gating.evaluate(run.record, thresholds, committed, updating=updating,
                              correction=family.method if family.size > 1 else "none", family=family.size,
                              reference=base.reference if base is not None else None, share=family.share,
                              expected=run.seed.expected_outcome(runner.ref(run.spec.source), runner.ref(run.spec.target)))
    if base is not None:
        run.record = replace(run.record, compare=base.record(run.record, outcome.as_dict(), run.spec.seed_path))
    elif committed is not None and not updating:  # a regression against the snapshot on disk: its cause too
        change = compare_to.snapshot_change(item.config, snapshots.location(run.snapshot), run.spec.seed_path,
                                         committed, run.record, outcome.as_dict())
        if change is not None:
            run.record = replace(run.record, snapshot_change=change)
    mismatch = snapshots.compare(run.snapshot, run.record) if settings.compare_snapshots else []
    verdict = "fail" if mismatch else outcome.verdict
    written = "updated" if run.snapshot.update_snapshots else "ok"
    gate = GateRecord.from_json({**outcome.as_dict(), "verdict": verdict, "passed": verdict == "pass", "snapshot":
                                 mismatch[0] if mismatch else written if settings.compare_snapshots else "not compared"})
    run.record = replace(run.record, gate=replace(gate, label=gating.verdict_label(gate)))
    for gate in outcome.gates:
        item.user_properties.append((f"skilltransfer_gate_{gate.name}", gate.verdict))
        if gate.tasks_for_power is not None:
            name = "min_gain" if gate.name == "min_gain" else "harm"
            item.user_properties.append((f"skilltransfer_tasks_for_{name}", gate.tasks_for_power))
    item.user_properties.append(("skilltransfer_outcome", run.record.outcome))
    item.user_properties.append(("skilltransfer_verdict", run.record.gate.label))
    guard = gating.inconclusive_guard(outcome)
    if verdict == "inconclusive" and guard is not None and settings.inconclusive != "fail":
        warnings.warn(pytest.PytestWarning(safe(f"{item.nodeid}: --transfer-inconclusive={settings.inconclusive} does "
                                                f"not apply to the {guard.name} guard: {guard.message}")), stacklevel=1)
    if verdict == "fail" or gating.item_fails(outcome, settings.inconclusive):
        texts = {task.id: task.text for task in run.seed.test}
        raise TransferFailed(diagnose(replace(run.record, item=plain_nodeid(item.nodeid)), outcome, run.seed.skill,
                                      texts, mismatch),
                             failure_reason(run.record))
    if verdict == "inconclusive":
        reason = "inconclusive: " + "; ".join(outcome.inconclusive)
        if settings.inconclusive == "xfail":
            pytest.xfail(safe(reason))
        warnings.warn(pytest.PytestWarning(safe(f"{item.nodeid}: {reason}")), stacklevel=1)


def _runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """Close a seed's cassette once the next item belongs to another seed (or there is none)."""
    spec = item.stash.get(SPEC, None)
    following = nextitem.stash.get(SPEC, None) if nextitem is not None else None
    if spec is not None and (following is None or following.seed_path != spec.seed_path):
        from .pruning import seed_key, spared_files

        runner = runner_of(item.config)
        configured, shared = runner.prune_scope(spec.seed_path)
        spared = spared_files(item, seed_key(spec), lambda other: other.stash.get(SPEC, None),
                              lambda other: RUN in other.stash, configured, shared, runner.model_files)
        from ..models.base import ModelCallError

        try:
            runner.stop_recording(spare=spared)
        except ModelCallError as exc:  # a save that failed (disk full, ...): its message says what was kept
            pytest.fail(safe(str(exc)), pytrace=False)


def _deselected(items: list[pytest.Item]) -> None:
    """A seed with a deselected item is not re-recorded completely: its cassette is not pruned."""
    specs = [item for item in items if SPEC in item.stash]
    if specs:
        from .pruning import note_deselected

        note_deselected(specs[0].config, [item.stash[SPEC] for item in specs])


def _sessionfinish(session: pytest.Session) -> None:
    runner = session.config.stash.get(RUNNER, None)
    if runner is None:
        return
    runner.stop_recording()
    if runner.recorded:
        from ..cassettes.model_lock import pin

        try:
            pin(runner.settings.cassette_dir, sorted(runner.models_used()))
        except OSError as err:  # a full disk: the recordings are kept, only the pins are not written
            warnings.warn(pytest.PytestWarning(safe(
                f"{runner.settings.cassette_dir / 'models.lock'} could not be written ({err.strerror or err}): the "
                "model ids of this recording are not pinned; free disk space and run again")), stacklevel=1)
    runner.stop_local_server()
    if runner.budget is not None and is_worker(session.config):
        runner.budget.ledger.close()


def _runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    """Attach the result to the call report, which xdist carries to the controller: as JSON text, one string
    for execnet to send (its serializer walks a nested result 4x slower than `json` writes and reads it),
    and the same value in-process, so `-n` cannot change what the reports read."""
    report = yield
    if SPEC in item.stash:
        _short_summary(report, call)
    run = item.stash.get(RUN, None)
    if run is not None and report.when == "call":
        setattr(report, REPORT_ATTRIBUTE, json.dumps(replace(run.record, item=plain_nodeid(report.nodeid)).to_json()))
    spec = item.stash.get(SPEC, None)
    if run is None and spec is not None and report.failed:  # errored before a result: counted in every report
        reason = str(getattr(call.excinfo, "value", "") or report.longreprtext).strip().splitlines()
        setattr(report, ERROR_ATTRIBUTE, {"item": plain_nodeid(report.nodeid), "seed": spec.seed_path.name,
                                          "source": spec.source, "target": spec.target, "when": report.when,
                                          "reason": reason[0] if reason else "error",
                                          **({"cost": item.stash[ERROR_COST]} if ERROR_COST in item.stash else {})})
        if FIX in item.stash:  # the exact command that fixes it, for the reports to print
            getattr(report, ERROR_ATTRIBUTE)["command"] = item.stash[FIX]
    return report


def _freeze_collected(session: pytest.Session) -> None:
    """Move what collection left alive (the seeds, their tasks and judges, the item tree, the imported
    modules) to the garbage collector's permanent generation: it lives until the run ends anyway, and
    every full collection would walk it again (pytest runs several at exit; a run of 200 seeds spent
    more on them than on collecting its items). The young generations are collected first, so
    collection's own garbage is freed rather than kept; objects made later are collected as before.
    A run inside another one's process (pytester's inline runs) is left alone: the heap is the outer
    run's, and pytest makes no collection at its exit."""
    try:
        from _pytest.unraisableexception import gc_collect_iterations_key
    except ImportError:  # another pytest: its inline runs cannot be told apart, so freeze nothing
        return
    if session.config.stash.get(gc_collect_iterations_key, 1) == 0:
        return
    gc.collect(1)
    gc.freeze()


class ItemHooks:
    """The per-item hooks, registered only in an engaged run (`_engage`): a foreign suite pays nothing per test."""

    pytest_collection_finish = staticmethod(pytest.hookimpl(trylast=True)(_freeze_collected))

    pytest_runtest_call = staticmethod(pytest.hookimpl(wrapper=True)(_runtest_call))
    pytest_runtest_teardown = staticmethod(_runtest_teardown)
    pytest_runtest_makereport = staticmethod(pytest.hookimpl(wrapper=True)(_runtest_makereport))
    pytest_deselected = staticmethod(_deselected)
    pytest_sessionfinish = staticmethod(_sessionfinish)


def _short_summary(report: pytest.TestReport, call: pytest.CallInfo[None]) -> None:
    """One line in pytest's short test summary for a transfer failure (the reason first); the item's
    report (longrepr) keeps the whole diagnosis."""
    from .diagnosis import TransferFailed

    crash = getattr(report.longrepr, "reprcrash", None)
    error = getattr(call.excinfo, "value", None)
    if crash is None or not isinstance(error, pytest.fail.Exception) or error.pytrace:
        return
    if isinstance(error, TransferFailed):
        crash.message = error.summary
    elif error.msg and "\n" in error.msg:
        crash.message = error.msg.strip().splitlines()[0]
