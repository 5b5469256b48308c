"""Transfer gates on one result, each a hypothesis test with outcome pass, fail or inconclusive.

The burden of proof lies on the claim a gate protects:

* `min_gain`, `min_score`, `min_efficiency`: pass only when the whole 95% interval lies at or above
  the threshold, fail when the whole interval lies below it, inconclusive otherwise (`stats.decide`).
  The same rule holds for every sample count. An inconclusive gate says how many held-out tasks
  would decide it if the observed per-task result held.
* `regression_tolerance` (on by default, `DEFAULT_REGRESSION_TOLERANCE`): the transferred per-task
  scores are compared, paired by task, with the committed snapshot's (`stats.regression`); it fails
  only when the change's whole interval lies below -tolerance, i.e. on evidence of a regression.
  It is off while `--snapshot-update` accepts new results.
* `harm_tolerance` (on by default, `DEFAULT_HARM_TOLERANCE` = 0): a guard, not a claim. It fails an
  item whose gain's whole interval lies below -tolerance: the learned skill makes the target worse
  than its own baseline. Off with `off` in seed.toml `[thresholds]`, the ini, a marker or the
  command line (`--transfer-harm-tolerance=off`).
* `noninferiority_margin` (opt in): the burden of proof on safety; pass only when the whole gain
  interval lies at or above -margin, fail when it lies wholly below, inconclusive otherwise.
* `expect` (seed.toml, per pair): the outcome the seed declares it demonstrates (`transfers`,
  `hurts`, `no effect shown`); pass when the measured outcome (`stats.outcome`) matches, fail when it
  does not. A declared outcome takes the harm gate's place (a seed may be meant to show harm).
* Efficiency is undefined without a direct run (the gate is skipped with a note), and inconclusive
  when the direct headroom is not significantly above 0.

With R > 1 restarts (`--restarts`) the gain's interval covers the mean over the population of
optimizations, which a few restarts bound only loosely. More restarts must never weaken a gate, so harm,
min_gain and the regression gate also fail whenever restart 1 alone (exactly the run without restarts:
same split, same sample ids, same exact test at the same level) or the mean of these R skills (the exact
interval over tasks of the restart-averaged gains, with no bound over restarts) fails them (`single_views`);
both are shown beside the population interval. A harmless skill is then failed for harm with probability
at most 2 x 2.5% (two one-sided tests), against 2.5% for one optimization. Likewise with clusters (the tasks,
each its own unit), more samples per task or judge samples (the plain run's reading: restart 1's first sample of
each task, each rubric check by its first judge vote): no option passes what the plain run fails.

With `correction="bonferroni"` (the default) every gate's interval is taken at level 1 - 0.05 / m for the m
distinct transfer items of the run, so the gates that fail a build control the family-wise error over the run's
new evidence (`evidence.run_family`); an item whose evidence is unchanged keeps the m recorded in its snapshot.
`none` tests each item alone at 95%.

A pass never rests on uncertain rubric verdicts (unstable judge samples, judge errors): the gates
are applied again with each of them resolved against the transferred skill (and in the baseline's
favour), and a pass that does not survive this is inconclusive, naming how many there were.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from ..engine.gate_specs import all_gates, claim_gates, family_gates, threshold_gates
from ..engine.seed_data import Thresholds
from ..evidence import stats
from ..evidence.item_record import ArmRecord, GainRecord, ItemRecord, SampleRecord, ScoreRecord
from ..reports.report import pair_text, too_few_clusters, units_text, verdict_label  # noqa: F401  (verdict_label: the plugin labels its records)

EPSILON = 1e-9
DEFAULT_REGRESSION_TOLERANCE = 0.05
DEFAULT_HARM_TOLERANCE = 0.0
POWER_MARGIN = 0.1  # the min_gain power note: tasks to pass the gate at a true gain of min_gain + this
HARM_SIZE = 0.2  # the harm gate's power note: tasks to show a harm this much beyond the tolerance
GUARDS = ("harm_tolerance", "regression_tolerance")  # rule out the worst: an inconclusive guard never passes
CORRECTIONS = ("bonferroni", "none")  # the first is the default (`run_family`)
# What more samples per task can do: a task's value is the mean of its samples, so on a noisy task more samples
# average out moves up and down that are only sampling noise (fewer discordant tasks, a narrower interval); on
# steady tasks they change nothing, and no number of them stands in for more units.
SAMPLES_NOTE = ("narrow it only by averaging out noisy tasks' sampling noise, never past what the units themselves "
                "show")


@dataclass(frozen=True)
class Gate:
    """One gate's decision."""

    name: str
    verdict: str  # pass | fail | inconclusive
    threshold: float
    estimate: float | None
    low: float | None
    high: float | None
    message: str = ""
    tasks_to_decide: int | None = None
    tasks_for_power: int | None = None  # min_gain: tasks to pass it with 80% power at min_gain + 0.1; harm: to show -0.2

    def as_dict(self) -> dict[str, Any]:
        rounded = {k: None if v is None else round(v, 4) for k, v in
                   (("estimate", self.estimate), ("ci_low", self.low), ("ci_high", self.high))}
        return {"gate": self.name, "verdict": self.verdict, "threshold": self.threshold, **rounded,
                "tasks_to_decide": self.tasks_to_decide, "tasks_for_power": self.tasks_for_power,
                "message": self.message}


@dataclass(frozen=True)
class GateOutcome:
    """Every gate's decision; the verdict is fail if any fails, else inconclusive if any is, else pass."""

    gates: tuple[Gate, ...] = ()
    notes: tuple[str, ...] = ()
    level: float = stats.LEVEL
    thresholds: dict[str, float | None] = field(default_factory=dict)

    @property
    def verdict(self) -> str:
        verdicts = {g.verdict for g in self.gates}
        return stats.FAIL if stats.FAIL in verdicts else stats.INCONCLUSIVE if stats.INCONCLUSIVE in verdicts else stats.PASS

    @property
    def failures(self) -> tuple[str, ...]:
        return tuple(g.message for g in self.gates if g.verdict == stats.FAIL)

    @property
    def inconclusive(self) -> tuple[str, ...]:
        return tuple(g.message for g in self.gates if g.verdict == stats.INCONCLUSIVE)

    @property
    def passed(self) -> bool:
        return self.verdict == stats.PASS

    @property
    def claims(self) -> tuple[str, ...]:
        """The claim gates applied (guards, harm and regression, only rule out the worst)."""
        return tuple(g.name for g in self.gates if g.name in claim_gates())

    def as_dict(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "passed": self.passed, "claims": list(self.claims),
                "failures": list(self.failures),
                "inconclusive": list(self.inconclusive), "notes": list(self.notes), "level": round(self.level, 6),
                "gates": [{**g.as_dict(), "level": round(self.level if g.name in family_gates() else stats.LEVEL, 8)}
                          for g in self.gates], "thresholds": self.thresholds}


def item_fails(outcome: GateOutcome, inconclusive: str) -> bool:
    """Whether an item's test fails on its gates: a gate fails, or one is inconclusive and `inconclusive`
    (`--transfer-inconclusive`) is `fail`, or an inconclusive gate is a guard (harm, regression): a guard that can
    fire neither way is not a pass, whatever the option says."""
    if outcome.verdict == stats.FAIL:
        return True
    if outcome.verdict != stats.INCONCLUSIVE:
        return False
    return inconclusive == "fail" or inconclusive_guard(outcome) is not None


def inconclusive_guard(outcome: GateOutcome) -> Gate | None:
    """The first guard gate (harm, regression) that is inconclusive, if any."""
    return next((g for g in outcome.gates if g.name in GUARDS and g.verdict == stats.INCONCLUSIVE), None)


def gate_level(correction: str, family: int, share: float = 1.0) -> float:
    """The interval level of the gates: 95%, or Bonferroni's 1 - 0.05 / m over m items; times the share of the
    item's alpha its stopping look spends (`evidence.sequential`)."""
    if correction == "bonferroni" and family > 1:
        return 1 - (1 - stats.LEVEL) / family * share
    return 1 - (1 - stats.LEVEL) * share


def _decided_text(tasks: int | None, n: int, restarts: int, record: GainRecord | ScoreRecord | None = None,
                  paired: bool = True) -> str:
    """What would decide an inconclusive gate; `record` is the gain's (or score's) record, whose
    `unit` says whether tasks or clusters are counted."""
    few = too_few_clusters(record) if record is not None and paired else None
    if few is not None:
        return few
    if record is not None and record.unit == "cluster":
        if tasks is None:
            return "no number of clusters decides it at this estimate"
        return (f"the same per-cluster result over {tasks} cluster(s) (now {n}) would decide it; more tasks in the "
                f"same clusters or more samples per task {SAMPLES_NOTE}")
    if tasks is None and restarts > 1:
        return (f"no number of held-out tasks decides it: the bound over {restarts} restarts alone spans the "
                "threshold (it assumes nothing about how optimizations vary); more restarts (--restarts) would "
                "narrow it")
    if tasks is None:
        return "no number of held-out tasks decides it at this estimate (it sits on the threshold)"
    return (f"the same per-task result over {tasks} held-out task(s) (now {n}) would decide it; "
            f"more samples per task {SAMPLES_NOTE}")


def _interval_gate(name: str, label: str, estimate: float, n: int, threshold: float, level: float,
                   paired: bool, extra: str = "", restart_values: list[float] | None = None,
                   gain: GainRecord | None = None, record: ScoreRecord | None = None) -> Gate:
    values = restart_values or []
    low, high = stats.gain_bounds_of(gain.as_gain(), level) if gain is not None else stats.bounds(estimate, n, level, paired,
                                                                                         values)
    verdict = stats.decide(low, high, threshold)
    shown = f"{label} {estimate:+.3f} [{low:+.3f}, {high:+.3f}]" if paired else \
        f"{label} {estimate:.3f} [{low:.3f}, {high:.3f}]"
    over = f", {len(values)} restarts" if len(values) > 1 else ""
    counted_in = gain if gain is not None else record
    counted = units_text(counted_in) if counted_in is not None else f"{n} task(s)"
    shown += f" ({level * 100:.6g}% CI, {counted}{over}{extra})"
    sign = "+" if paired else ""
    if verdict == stats.PASS:
        return Gate(name, verdict, threshold, estimate, low, high, f"{shown} is at least {name} {threshold:{sign}.3f}")
    if verdict == stats.FAIL:
        return Gate(name, verdict, threshold, estimate, low, high, f"{shown} is below {name} {threshold:{sign}.3f}")
    tasks = (stats.gain_tasks_to_decide(gain.as_gain(), threshold, level) if gain is not None else
             stats.tasks_to_decide(estimate, n, threshold, level, paired=paired, restart_values=values))
    message = (f"{shown} neither shows {name} {threshold:{sign}.3f} nor rules it out; "
               + _decided_text(tasks, n, len(values), counted_in, paired))
    return Gate(name, verdict, threshold, estimate, low, high, message, tasks)


def _efficiency_gate(result: ItemRecord, threshold: float) -> Gate | str:
    if result.direct_target is None and result.direct_skipped:
        # an option that skips the evidence a gate needs leaves the gate undecided, never passed
        return Gate("min_efficiency", stats.INCONCLUSIVE, threshold, None, None, None,
                    "efficiency is undefined: the direct reference ran on demand and was skipped (the transferred skill "
                    "shows a gain); neither shows min_efficiency nor rules it out: leave "
                    "--transfer-direct-on-demand off for an item gated on efficiency")
    if result.direct_target is None:
        return "min_efficiency gate skipped: efficiency is undefined (no direct run (--no-direct))"
    estimate = result.efficiency_ci
    if estimate is None:
        headroom = result.headroom
        shown = (f" (direct - baseline {headroom.mean:+.3f} [{headroom.ci_low:+.3f}, {headroom.ci_high:+.3f}])"
                 if headroom else "")
        message = ("efficiency is undefined: the direct headroom is not significantly above 0"
                   f"{shown}; neither shows min_efficiency {threshold:.3f} nor rules it out")
        return Gate("min_efficiency", stats.INCONCLUSIVE, threshold, None, None, None, message)
    low, high, mean = estimate.ci_low, estimate.ci_high, estimate.mean
    verdict = stats.decide(low, high, threshold)
    shown = f"efficiency {mean:.3f} [{low:.3f}, {high:.3f}]"
    text = {stats.PASS: f"{shown} is at least min_efficiency {threshold:.3f}",
            stats.FAIL: f"{shown} is below min_efficiency {threshold:.3f}",
            stats.INCONCLUSIVE: f"{shown} neither shows min_efficiency {threshold:.3f} nor rules it out"}[verdict]
    return Gate("min_efficiency", verdict, threshold, mean, low, high, text)


restart_count = stats.restart_count_of


@dataclass(frozen=True)
class View:
    """One reading of a gain's evidence that a restarts run must not be weaker than (`single_views`)."""

    label: str
    mean: float
    low: float
    high: float

    def text(self) -> str:
        return f"{self.label} {self.mean:+.3f} [{self.low:+.3f}, {self.high:+.3f}]"


def single_views(gain: dict[str, Any], level: float) -> tuple[View, ...]:
    """With R > 1 restarts, the readings of the same evidence a gate fails on besides the interval over the
    population of optimizations: the mean over these R skills (exact, no bound over restarts) and restart 1
    alone (the run without --restarts: same split, same sample ids, same test). Empty for one optimization."""
    views = []
    these = stats.these_bounds_of(gain, level)
    if these is not None:
        views.append(View(f"these {restart_count(gain)} skills", gain["mean"], *these))
    first = stats.first_bounds_of(gain, level)
    if first is not None:
        views.append(View("restart 1 alone (the kept skill, as a run without --restarts)", *first))
    return tuple(views)


def _beside(views: tuple[View, ...]) -> str:
    return "".join(f"; {view.text()}" for view in views)


SINGLE_RULE = ("with restarts a gate fails whenever restart 1 alone (the run without --restarts) or the mean of "
               "these skills fails it: more restarts never pass what one optimization fails")


def _failed_view(views: tuple[View, ...], threshold: float) -> View | None:
    """The first view whose whole interval lies below `threshold`."""
    return next((v for v in views if v.high < threshold - EPSILON), None)


def per_task(evaluation: ArmRecord | None) -> dict[str, float]:
    """{task id: hard score} of one evaluation."""
    return {} if evaluation is None else evaluation.per_task()


def per_task_first(evaluation: ArmRecord | None) -> dict[str, float] | None:
    """{task id: restart 1's hard score} of a restart-averaged evaluation; None for one optimization."""
    tasks = () if evaluation is None else evaluation.tasks
    if not tasks or len(tasks[0].restarts or ()) <= 1:
        return None
    return {t.task_id: t.restarts[0] for t in tasks if t.restarts}


def _single_floor(gate: Gate, views: tuple[View, ...], level: float) -> Gate:
    """A claim gate with restarts fails when any single view (`single_views`) lies wholly below its threshold,
    whatever the interval over the population of optimizations says; the views are shown beside it."""
    failed = _failed_view(views, gate.threshold)
    if gate.verdict == stats.FAIL or failed is None:
        return replace(gate, message=gate.message + _beside(views)) if views else gate
    population = f"gain {gate.estimate:+.3f} [{gate.low:+.3f}, {gate.high:+.3f}]"
    return Gate(gate.name, stats.FAIL, gate.threshold, failed.mean, failed.low, failed.high,
                f"{failed.text()} ({level * 100:.6g}% CI) is below {gate.name} {gate.threshold:+.3f} ({SINGLE_RULE}); "
                f"over the population of optimizations {population}{_beside(views)}",
                tasks_for_power=gate.tasks_for_power)


def per_task_clusters(evaluation: ArmRecord | None) -> dict[str, str | None]:
    """{task id: cluster, or None for a task of its own} of one evaluation."""
    return {} if evaluation is None else {t.task_id: t.cluster for t in evaluation.tasks}


def _gain_interval(result: ItemRecord, level: float) -> tuple[float, float, float, int]:
    """The gain's mean, interval at `level` and unit count (tasks, or clusters)."""
    low, high = stats.gain_bounds_of(result.gain.as_gain(), level)
    return result.gain.mean, low, high, result.gain.n


def _shown_gain(mean: float, low: float, high: float, gain: GainRecord, level: float) -> str:
    restarts = restart_count(gain.as_gain())
    over = f", {restarts} restarts" if restarts > 1 else ""
    return f"gain {mean:+.3f} [{low:+.3f}, {high:+.3f}] ({level * 100:.6g}% CI, {units_text(gain)}{over})"


def _harm_gate(result: ItemRecord, tolerance: float, level: float) -> Gate:
    """Fail when the whole gain interval lies below -tolerance: the target is worse than its own baseline."""
    mean, low, high, n = _gain_interval(result, level)
    gain = result.gain.as_gain()
    views = single_views(gain, level)
    shown = _shown_gain(mean, low, high, result.gain, level) + _beside(views)
    worse = result.gain.worsened
    unit = "cluster(s)" if result.gain.unit == "cluster" else "held-out task(s)"
    failed = None if high < -tolerance - EPSILON else _failed_view(views, -tolerance)
    if high < -tolerance - EPSILON or failed is not None:
        count = f"; {worse} of {n} {unit} got worse" if worse is not None else ""
        which = "" if failed is None else f" (the interval of {failed.label} lies below it; {SINGLE_RULE})"
        estimate, low, high = (mean, low, high) if failed is None else (failed.mean, failed.low, failed.high)
        return Gate("harm_tolerance", stats.FAIL, tolerance, estimate, low, high,
                    f"harm: the learned skill makes {result.target} worse than its own baseline: {shown} lies "
                    f"below -{tolerance:.3f}{which}{count} (turn the harm gate off with harm_tolerance = \"off\", "
                    "or declare it with expect = \"hurts\" in seed.toml)")
    few = too_few_clusters(result.gain)
    if few is not None:
        return Gate("harm_tolerance", stats.INCONCLUSIVE, tolerance, mean, low, high,
                    f"harm neither shown nor ruled out: {shown}; {few}")
    size = round(tolerance + HARM_SIZE, 6)
    needed = stats.tasks_for_gain(size, level, restarts=restart_count(gain))
    power = (f"; a harm of -{size:.2f} takes {needed} {unit} to show with 80% power (now {n})"
             if needed is not None else "")
    return Gate("harm_tolerance", stats.PASS, tolerance, mean, low, high,
                f"no harm shown: {shown} does not lie wholly below -{tolerance:.3f}{power}",
                tasks_for_power=needed)


def _plain_hard(sample: SampleRecord) -> float:
    """A sample's hard score as one judge sample would have given it: each rubric verdict by its first vote."""
    rubric = sample.rubric or ()
    if all(len(v["votes"]) <= 1 for v in rubric):
        return sample.hard
    by_vote = {f"rubric={v['criterion']}" for v in rubric if v["votes"][0] != "pass"}
    failed = {f for f in sample.failed if not f.startswith("rubric=")} | by_vote
    return 0.0 if failed else 1.0


def per_task_plain(evaluation: ArmRecord | None) -> dict[str, float] | None:
    """{task id: the plain run's hard score}: restart 1's first sample, each rubric verdict by its first judge vote;
    None when every task has one sample judged once (the per-task score is the plain run's), or samples were not
    kept."""
    tasks = () if evaluation is None else evaluation.tasks
    if not tasks or any(not t.samples for t in tasks):
        return None
    if all(len(t.samples) == 1 and all(len(v["votes"]) <= 1 for v in t.samples[0].rubric or ()) for t in tasks):
        return None
    return {t.task_id: _plain_hard(t.samples[0]) for t in tasks}


def _gain_over(before: dict[str, float], after: dict[str, float] | None, level: float) -> stats.Gain | None:
    """The gain over the tasks both readings score, each task its own unit; None without such tasks."""
    if after is None:
        return None
    common = [task for task in before if task in after]
    if not common:
        return None
    return stats.paired_gain([before[t] for t in common], [after[t] for t in common], level)


def _task_level_gain(result: ItemRecord, level: float, first: bool = False) -> stats.Gain | None:
    """The gain over tasks, each its own unit (the run without clusters), from the per-task scores of a result
    (restart-averaged with restarts, or restart 1's with `first`); None when they are not there."""
    scores = result.scores
    after = per_task_first(scores.transferred) if first else per_task(scores.transferred)
    return _gain_over(per_task(scores.baseline), after, level)


def _plain_gain(result: ItemRecord, level: float) -> stats.Gain | None:
    """The gain of the plain run's reading (`per_task_plain`) of both arms; None when it is the result's own."""
    scores = result.scores
    before, after = per_task_plain(scores.baseline), per_task_plain(scores.transferred)
    if before is None and after is None:
        return None
    return _gain_over(before or per_task(scores.baseline), after or per_task(scores.transferred), level)


TASK_RULE = ("with clusters a gate also fails whenever the tasks, each its own unit (the run without clusters), fail "
             "it: an option never passes what the plain run fails")
PLAIN_RULE = ("with more samples per task or judge samples a gate also fails whenever the plain run's reading of the "
              "same answers (restart 1's first sample of each task, each rubric check by its first judge vote) "
              "fails it: an option never passes what the plain run fails")


def _task_floor(gate: Gate, result: ItemRecord, level: float) -> Gate:
    """A harm or min_gain gate over clusters fails when the same gate over tasks, each its own unit (the run without
    clusters), fails: the interval over clusters is the honest one for a claim, but it must not pass what the plain
    run fails. Likewise with more samples per task or judge samples, when the plain run's reading fails it."""
    if gate.verdict == stats.FAIL:
        return gate
    threshold = -gate.threshold if gate.name == "harm_tolerance" else gate.threshold
    clustered = result.gain.unit == "cluster"
    readings = ((_task_level_gain(result, level), _task_level_gain(result, level, first=True)) if clustered else ())
    rules = [TASK_RULE] * len(readings)
    plain = _plain_gain(result, level)
    if plain is not None:
        readings, rules = (*readings, plain), [*rules, PLAIN_RULE]
    tasks, rule = next(((g, r) for g, r in zip(readings, rules) if g is not None and g.high < threshold - EPSILON),
                       (None, ""))
    if tasks is None:
        return gate
    what = (f"harm: the learned skill makes {result.target} worse than its own baseline over the held-out tasks"
            if gate.name == "harm_tolerance" else f"below {gate.name} {gate.threshold:+.3f} over the held-out tasks")
    over = f"over clusters: {gate.message}" if clustered else gate.message
    return Gate(gate.name, stats.FAIL, gate.threshold, tasks.mean, tasks.low, tasks.high,
                f"{what}: gain {tasks.mean:+.3f} [{tasks.low:+.3f}, {tasks.high:+.3f}] ({level * 100:.6g}% CI, "
                f"{tasks.n} task(s), each its own unit) lies below {threshold:+.3f}; {tasks.worsened} of {tasks.n} "
                f"task(s) got worse; {over} ({rule})", tasks_for_power=gate.tasks_for_power)


def _noninferiority_gate(result: ItemRecord, margin: float, level: float) -> Gate:
    """Pass only when the whole gain interval is at or above -margin (the burden of proof on safety)."""
    mean, low, high, n = _gain_interval(result, level)
    gain = result.gain.as_gain()
    shown = _shown_gain(mean, low, high, result.gain, level)
    verdict = stats.decide(low, high, -margin)
    text = {stats.PASS: f"non-inferior: {shown} lies at or above -{margin:.3f}",
            stats.FAIL: f"inferior: {shown} lies below -{margin:.3f}",
            stats.INCONCLUSIVE: f"{shown} does not show non-inferiority within {margin:.3f} (its lower bound is "
                                f"below -{margin:.3f})"}[verdict]
    tasks = None
    if verdict == stats.INCONCLUSIVE:
        tasks = stats.gain_tasks_to_decide(gain, -margin, level)
        text += "; " + _decided_text(tasks, n, len((result.gain.restarts or {}).get("gains") or []), result.gain)
    return Gate("noninferiority_margin", verdict, margin, mean, low, high, text, tasks)


def _expect_gate(result: ItemRecord, expected: str, level: float = stats.LEVEL) -> Gate:
    """Pass when the measured outcome, at the run family's level, is the one the seed declares for this pair."""
    gain = result.gain.as_gain()
    low, high = stats.gain_bounds_of(gain, level)
    measured = stats.outcome(low, high)
    shown = _shown_gain(gain["mean"], low, high, result.gain, level)
    few = too_few_clusters(result.gain)
    if few is not None:
        return Gate("expect", stats.INCONCLUSIVE, 0.0, gain["mean"], low, high,
                    f"cannot show the declared outcome '{expected}' or any other: {shown}; {few}")
    if measured == expected:
        return Gate("expect", stats.PASS, 0.0, gain["mean"], low, high,
                    f"shows the declared outcome '{expected}': {shown}")
    return Gate("expect", stats.FAIL, 0.0, gain["mean"], low, high,
                f"seed.toml declares '{expected}' for {pair_text(result)} but the run shows "
                f"'{measured}': {shown}; the seed's behaviour changed (fix it, or change its expect)")


def evaluate(result: ItemRecord, thresholds: Thresholds, committed: dict[str, float] | None = None,
             updating: bool = False, correction: str = "none", family: int = 1,
             reference: str | None = None, expected: str | None = None, share: float = 1.0) -> GateOutcome:
    """Apply every configured gate to an item's record (`evidence.item_record.ItemRecord`).

    `expected` is the outcome the seed declares for this pair (seed.toml `expect`); it replaces the
    harm gate.

    `committed` holds the committed snapshot's transferred per-task scores (None: no snapshot);
    `reference` names where they come from when that is not the working tree (e.g. `the snapshot at
    origin/main`), and then a failure asks for a fix rather than for `--snapshot-update`.
    """
    level = gate_level(correction, family, share)
    gates: list[Gate] = []
    notes: list[str] = []
    corrected = f", Bonferroni over {family} items" if level != stats.LEVEL else ""
    if thresholds.min_gain is not None:
        gain = result.gain.as_gain()
        gate = _interval_gate("min_gain", "gain", gain["mean"], gain["n"], thresholds.min_gain, level, True,
                              f", p = {gain['p_value']:.3g}{corrected}", (gain.get("restarts") or {}).get("gains"),
                              gain=result.gain)
        gate = replace(gate, tasks_for_power=stats.tasks_to_pass(thresholds.min_gain, POWER_MARGIN, level,
                                                                  restarts=restart_count(gain)))
        gates.append(_task_floor(_single_floor(gate, single_views(gain, level), level), result, level))
    if thresholds.min_score is not None:
        hard = _transferred(result).hard
        gates.append(_interval_gate("min_score", "transferred score", hard.mean, hard.n, thresholds.min_score,
                                    level, False, corrected, list(hard.restart_means or ()) or None,
                                    record=hard))
    if thresholds.min_efficiency is not None:
        decision = _efficiency_gate(result, thresholds.min_efficiency)
        (notes.append if isinstance(decision, str) else gates.append)(decision)  # type: ignore[arg-type]
    if expected is not None:
        gates.append(_expect_gate(result, expected, level))
    elif thresholds.harm_tolerance is not None:
        gates.append(_task_floor(_harm_gate(result, thresholds.harm_tolerance, level), result, level))
    if thresholds.noninferiority_margin is not None:
        gates.append(_noninferiority_gate(result, thresholds.noninferiority_margin, level))
    if thresholds.regression_tolerance is not None and committed is not None and not updating:
        transferred = _transferred(result)
        scores, at = regression_scores(result), regression_level(result, correction, family, level)
        check = stats.regression(committed, scores, thresholds.regression_tolerance, at,
                                 clusters=per_task_clusters(transferred))
        message = check.message()
        first = per_task_first(transferred)
        if first is not None and check.verdict != stats.FAIL:  # restart 1 alone: the run without --restarts
            alone = stats.regression(committed, first, thresholds.regression_tolerance, at,
                                     clusters=per_task_clusters(transferred))
            if alone.verdict == stats.FAIL:
                check = alone
                message = f"restart 1 alone (the kept skill, as a run without --restarts): {alone.message()} ({SINGLE_RULE})"
        if check.verdict != stats.FAIL and any(per_task_clusters(transferred).values()):
            for scores in (regression_scores(result), first):
                plain = None if scores is None else stats.regression(committed, scores,
                                                                     thresholds.regression_tolerance, at)
                if plain is not None and plain.verdict == stats.FAIL:  # tasks as units: the run without clusters
                    check = plain
                    message = f"over tasks, each its own unit: {plain.message()} ({TASK_RULE})"
                    break
        single = per_task_plain(transferred)
        if check.verdict != stats.FAIL and single is not None:  # one sample, one judge vote: the plain run
            plain = stats.regression(committed, single, thresholds.regression_tolerance, at)
            if plain.verdict == stats.FAIL:
                check = plain
                message = f"the plain run's reading: {plain.message()} ({PLAIN_RULE})"
        short = short_reference(committed, result)
        if short:
            message += f"; {short}"
        if reference is not None:
            message = message.replace("the committed snapshot", reference)
        if check.verdict == stats.FAIL:
            accept = ("this change makes the item worse than its base" if reference is not None
                      else "run with --snapshot-update to accept")
            message = "regression: " + message + "; the drop is beyond the tolerance; " + accept
        gain = check.gain
        gates.append(Gate("regression_tolerance", check.verdict, thresholds.regression_tolerance,
                          None if gain is None else gain.mean, None if gain is None else gain.low,
                          None if gain is None else gain.high, message))
    if expected is not None and thresholds.harm_tolerance is not None:
        notes.append(f"harm gate replaced by the declared outcome '{expected}' (seed.toml expect)")
    for spec in all_gates().values():  # gates registered from outside the package (`gate_specs.register_gate`)
        threshold = thresholds.get(spec.name) if spec.threshold else None
        if spec.check is not None and threshold is not None:
            gates.append(spec.check(result, threshold, level if spec.family else stats.LEVEL))
    recorded = {name: thresholds.get(name) for name in threshold_gates()}
    outcome = GateOutcome(tuple(gates), tuple(notes), level, {**recorded, "expect": expected})
    return _judge_stability(outcome, result, thresholds, committed, updating, correction, family, expected)


def regression_scores(result: ItemRecord) -> dict[str, float]:
    """The transferred per-task scores the regression gate reads: the pair's tasks, and the tasks past the pair's
    stop up to the regression gate's own stopping look when its reference kept the transferred arm looking (never
    the tasks a run scored past that look to write the reference: more tasks never weaken a gate)."""
    scores = per_task(_transferred(result))
    looks = result.sequential
    if looks is None or not looks.regression or not looks.reference:
        return scores
    past = list(looks.reference.items())[: int(looks.regression["tasks"]) - looks.tasks]
    return {**scores, **dict(past)}


def regression_level(result: ItemRecord, correction: str, family: int, level: float) -> float:
    """The regression gate's level: at its own stopping look when past the pair's, else the item's (`level`)."""
    looks = result.sequential
    if looks is None or not looks.regression:
        return level
    return gate_level(correction, family, float(looks.regression["alpha_share"]))


def held_out_total(result: ItemRecord) -> int:
    """The item's held-out tasks: all of them, also where its looks stopped early."""
    transferred = result.scores.transferred
    return result.sequential.of if result.sequential is not None else len(transferred.tasks if transferred else ())


def short_reference(committed: dict[str, float], result: ItemRecord) -> str:
    """What a regression reference that holds fewer than the item's held-out tasks cannot show (it was written by
    a run that stopped early and did not keep the transferred scores past its stop), and what to do; "" when it
    holds every held-out task."""
    total = held_out_total(result)
    if len(committed) >= total:
        return ""
    return (f"the committed snapshot holds {len(committed)} of the {total} held-out tasks, so a regression on the "
            "others cannot be seen: re-make it with --snapshot-update, which scores the transferred skill on every "
            "held-out task")


def _transferred(result: ItemRecord) -> ArmRecord:
    assert result.scores.transferred is not None, "a result always has its transferred arm"
    return result.scores.transferred


def _judge_stability(outcome: GateOutcome, result: ItemRecord, thresholds: Thresholds,
                     committed: dict[str, float] | None, updating: bool, correction: str, family: int,
                     expected: str | None = None) -> GateOutcome:
    """A pass that does not survive its uncertain rubric verdicts resolved against the skill is inconclusive."""
    from ..reports.judge_report import adverse, uncertain_count

    count = uncertain_count(result) if result.judge else 0
    if not count or outcome.verdict != stats.PASS or not outcome.claims:
        return outcome
    worst = evaluate(adverse(result), thresholds, committed, updating, correction, family, expected=expected)
    if worst.verdict == stats.PASS:
        return outcome
    message = (f"the pass rests on {count} uncertain rubric verdict(s) (unstable judge samples or judge errors): "
               f"with them resolved against the skill, {'; '.join(worst.failures + worst.inconclusive)}; "
               "raise --judge-samples or sharpen the criterion")
    gate = Gate("judge_stability", stats.INCONCLUSIVE, 0.0, float(count), None, None, message)
    return replace(outcome, gates=outcome.gates + (gate,))
