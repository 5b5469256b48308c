"""The protocol's data: its settings (ProtocolConfig) and what a run yields, from one sample's scores through
task results, evaluations, nights and optimizations to the TransferResult a report is made from, and what
each phase cost. `protocol.SeedSession` produces them; reports read them."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property

from ..evidence.portability import Portability, portability
from ..evidence.sequential import DESIGNS, Look, Stop
from ..evidence.stats import Estimate, Gain, Ratio, clustered_gain, clustered_score, efficiency_ratio
from ..guards.bounds import over_maximum
from ..guards.edits import Edit
from ..models.stops import problem_counts
from . import judges, ledger, restarts
from .ledger import Tally
from .rubric import Calibration
from .scoring import scoring_profile
from .validation import DEFAULT_TOLERANCE, ValidationScore

Costs = dict[tuple[str, str], Tally]


@dataclass(frozen=True)
class ProtocolConfig:
    """Protocol settings; defaults mirror the upstream transfer experiment."""

    nights: int = 2
    edit_budget: int = 4
    limit_replay: int = 3
    limit_holdout: int = 3
    limit_test: int = 0
    samples: int = 1
    direct: bool = True
    gate_weight: float = 0.5
    workers: int = 1
    restarts: int = 1  # independent optimizations per (agent, optimizer); see `restarts`
    direct_on_demand: bool = False  # the direct reference only when the transferred skill shows no gain
    min_delta: float | None = None  # the val gate keeps edits beating the current score by more than this
    #                                 (None: the scoring profile's, 0 by default)
    scoring: str = "default"  # a scoring profile (pytest_skilltransfer.engine.scoring): "default" or "gbrain"
    design: str = "group-sequential"  # how held-out tasks are scored: in waves with looks, or "fixed" (all at once)

    def validate(self) -> None:
        """Raise ValueError naming the first bad setting."""
        for name in ("nights", "edit_budget", "samples", "workers", "restarts"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        for name in ("nights", "edit_budget", "samples", "restarts"):
            too_many = over_maximum(name, getattr(self, name))
            if too_many:
                raise ValueError(f"{name} {too_many}")
        for name in ("limit_replay", "limit_holdout", "limit_test"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be 0 (no cap) or positive, got {getattr(self, name)}")
        if not 0 <= self.gate_weight <= 1:
            raise ValueError(f"gate_weight must be within [0, 1], got {self.gate_weight}")
        if self.min_delta is not None and not 0 <= self.min_delta <= 1:
            raise ValueError(f"min_delta must be within [0, 1], got {self.min_delta}")
        if self.nights >= restarts.SAMPLE_STRIDE:
            raise ValueError(f"nights must be below {restarts.SAMPLE_STRIDE}, got {self.nights}")
        scoring_profile(self.scoring)
        if self.design not in DESIGNS:
            raise ValueError(f"unknown design {self.design!r}; designs: {', '.join(DESIGNS)}")


@dataclass(frozen=True)
class SampleResult:
    """One judged rollout."""

    sample_id: int
    hard: float
    soft: float
    failed: tuple[str, ...]
    answer: str
    tools_called: tuple[str, ...]
    rubric: tuple[judges.RubricVerdict, ...] = ()
    stop_reason: str = ""  # the provider's, for the final reply of the attempt


def checks_never_passed(labels: dict[str, tuple[str, ...]], evaluations: list["Evaluation"]) -> tuple[str, ...]:
    """The check labels (per task id, `labels`) that no sample of any of `evaluations` passed, in first-seen
    order (a check that timed out counts as failed)."""
    passed: set[str] = set()
    for evaluation in evaluations:
        for task in evaluation.tasks:
            for sample in task.samples:
                missed = {label.split(" (timed out", 1)[0] for label in sample.failed}
                passed |= set(labels.get(task.task_id, ())) - missed
    return tuple(label for label in dict.fromkeys(x for ls in labels.values() for x in ls) if label not in passed)


@dataclass(frozen=True)
class TaskResult:
    """A task's samples and their means, and the task's cluster (None: a cluster of its own)."""

    task_id: str
    samples: tuple[SampleResult, ...]
    cluster: str | None = None

    @property
    def hard(self) -> float:
        return sum(s.hard for s in self.samples) / len(self.samples)

    @property
    def soft(self) -> float:
        return sum(s.soft for s in self.samples) / len(self.samples)


@dataclass(frozen=True)
class Evaluation:
    """A skill scored on a task split by one model."""

    model_id: str
    split: str
    tasks: tuple[TaskResult, ...]
    costs: Costs
    gate_weight: float = 0.5
    scoring: str = "default"

    @cached_property
    def hard(self) -> Estimate:
        """Mean hard score over tasks (over clusters when tasks share any) with its exact interval (computed once)."""
        return clustered_score([[t.hard for t in self.tasks]], [t.cluster for t in self.tasks])

    @cached_property
    def soft(self) -> Estimate:
        return clustered_score([[t.soft for t in self.tasks]], [t.cluster for t in self.tasks])

    def _rollouts(self) -> list[list[tuple[float, float]]]:
        return [[(s.hard, s.soft) for s in t.samples] for t in self.tasks]

    @property
    def stops(self) -> dict[str, int]:
        """How many samples ended truncated, refused, content-filtered or empty (see `models.stops`)."""
        return problem_counts([(s.stop_reason, s.answer) for t in self.tasks for s in t.samples])

    @property
    def gate_score(self) -> float:
        """The number the validation gate compares, as the scoring profile defines it."""
        return scoring_profile(self.scoring).gate_score(self._rollouts(), self.gate_weight)

    @property
    def profile_score(self) -> float:
        """The scoring profile's set score (default: mean hard; gbrain: mean of per-task soft medians)."""
        return scoring_profile(self.scoring).set_score(self._rollouts())


@dataclass(frozen=True)
class Night:
    """What one night of optimization did."""

    number: int
    val_before: float
    val_after: float | None
    accepted: bool
    applied: tuple[Edit, ...]
    unmatched: tuple[tuple[Edit, str], ...]
    note: str = ""
    validation: tuple[ValidationScore, ...] = ()  # each listed model's val score before / with the edits
    blocked_by: tuple[str, ...] = ()  # the listed models the edits lowered beyond the tolerance


@dataclass(frozen=True)
class Optimization:
    """A skill optimized with one agent model and one optimizer model."""

    agent_id: str
    optimizer_id: str
    initial_skill: str
    learned_skill: str
    nights: tuple[Night, ...]
    costs: Costs
    validate_on: tuple[str, ...] = ()  # the listed models every candidate was also scored on
    tolerance: float = DEFAULT_TOLERANCE


@dataclass(frozen=True)
class PortableRun:
    """One restart's skill optimized against the validation set, and its test score on the target."""

    restart: int
    learned: Optimization
    transferred: Evaluation


@dataclass(frozen=True)
class RestartRun:
    """One optimization restart of a transfer: its split seed, optimizations and test scores."""

    restart: int
    split_seed: int
    learned: Optimization
    transferred: Evaluation
    direct_optimization: Optimization | None
    direct: Evaluation | None


def _hard(evaluation: Evaluation) -> list[float]:
    return [t.hard for t in evaluation.tasks]


def _clusters(evaluation: Evaluation) -> list[str | None]:
    return [t.cluster for t in evaluation.tasks]


def paired_gain(before: Evaluation, after: list[Evaluation], stop: Stop | None = None) -> Gain:
    """The paired gain of `after` (one evaluation per restart) over `before` (hard), with clusters of tasks
    as the units when the seed names any. With a `stop` of the group-sequential design: the interval at the
    stopping look's level and the p-value over its share of alpha (p <= 0.05 exactly when it excludes 0)."""
    if stop is None or stop.share >= 1.0:
        return clustered_gain(_hard(before), [_hard(a) for a in after], _clusters(before))
    gain = clustered_gain(_hard(before), [_hard(a) for a in after], _clusters(before), stop.level())
    return replace(gain, p_value=min(1.0, gain.p_value / stop.share) if stop.share > 0 else 1.0)


@dataclass(frozen=True)
class TransferResult:
    """Everything one seed x (source, target) run produced; `learned` ... `direct` are restart 1's."""

    seed: str
    source: str
    target: str
    optimizer: str
    config: ProtocolConfig
    baseline: Evaluation
    learned: Optimization
    transferred: Evaluation
    direct_optimization: Optimization | None
    direct: Evaluation | None
    judge: "JudgeSummary | None" = None
    split_seed: int = 0  # restart 1's train/val split seed
    more_runs: tuple[RestartRun, ...] = ()  # restarts 2..R
    bill: dict[str, Costs] | None = None  # what this result paid per phase (`ledger.bill`); None: `phase_costs`
    portable: tuple[PortableRun, ...] = ()  # with a validation set: every restart's portable skill
    direct_skipped: bool = False  # the direct reference was on demand and could not change the reading
    source_name: str = ""  # the name the run gave the source (an alias of `source`, the id); "" = the id
    target_name: str = ""  # likewise for the target
    never_passed: tuple[str, ...] = ()  # checks of the held-out tasks that no sample of any arm passed
    stop: Stop | None = None  # where the held-out design stopped (evidence.sequential); None: not recorded
    design_note: str = ""  # why the fixed design ran where the configuration asked for looks ("" otherwise)
    # the transferred skill alone on held-out tasks past the pair's stop: the waves the regression gate kept it
    # looking, then, when the run (re)makes the regression gate's reference (`Stopping.full_reference`), every
    # remaining task; only the regression gate reads it, up to `regression`; None when none was scored
    reference: Evaluation | None = None
    # the look the regression gate stopped at when its reference kept the transferred arm looking past the pair's
    # stop (it reads the transferred scores up to that look, at that look's level); None: the pair's stop
    regression: Look | None = None

    @property
    def unlearnable(self) -> bool:
        """Whether even the direct optimization on the target gained nothing over a baseline with room to grow (and
        neither did the transfer): the skill could not be taught these checks here. False without a direct run
        (nothing to say) and at a baseline of 1 (nothing to teach)."""
        return (self.headroom is not None and self.baseline.hard.mean < 1 and self.headroom.mean <= 0
                and self.gain.mean <= 0)

    @property
    def runs(self) -> tuple[RestartRun, ...]:
        """Every restart, restart 1 first."""
        first = RestartRun(1, self.split_seed, self.learned, self.transferred, self.direct_optimization, self.direct)
        return (first, *self.more_runs)

    @cached_property
    def gain(self) -> Gain:
        """Paired gain transferred - baseline (hard), over every restart, with clusters of tasks as the
        units when the seed names any (computed once)."""
        return paired_gain(self.baseline, [run.transferred for run in self.runs], self.stop)

    @cached_property
    def portability(self) -> Portability | None:
        """With a validation set: the single-model and portable skills on the target, against the baseline
        and each other, one exact family with Holm over it (computed once); None without one."""
        if not self.portable:
            return None
        return portability(_hard(self.baseline), [_hard(run.transferred) for run in self.runs],
                           [_hard(p.transferred) for p in self.portable], _clusters(self.baseline))

    @cached_property
    def headroom(self) -> Gain | None:
        """Paired per-task gain direct - baseline (hard), over every restart; None without a direct run."""
        if self.direct is None:
            return None
        return paired_gain(self.baseline, [run.direct for run in self.runs if run.direct], self.stop)

    @cached_property
    def efficiency_estimate(self) -> Ratio | None:
        """gain / headroom with an interval; None unless the direct headroom is significantly above 0."""
        return efficiency_ratio(self.gain, self.headroom) if self.headroom is not None else None

    @property
    def efficiency(self) -> float | None:
        """(transferred - baseline) / (direct - baseline), shown only when the headroom is significant."""
        estimate = self.efficiency_estimate
        return None if estimate is None else estimate.mean

    def _portable_eval_costs(self, run: PortableRun) -> Costs:
        """A portable skill's test costs; when an earlier phase scored the very same skill on the target (the
        baseline, or this restart's transferred or direct skill), the shared evaluation is a cache hit here."""
        skill = run.learned.learned_skill
        same = next((r for r in self.runs if r.restart == run.restart), None)
        earlier = [self.learned.initial_skill]
        if same is not None:
            earlier += [same.learned.learned_skill]
            earlier += [same.direct_optimization.learned_skill] if same.direct_optimization else []
        return _as_cached(run.transferred.costs) if skill in earlier else run.transferred.costs

    def phase_costs(self) -> dict[str, Costs]:
        """Calls and tokens per protocol phase (every restart's), keyed by (model id, role), in the
        protocol's order (the judge's calibration first): what each phase used, shared or not."""
        runs = self.runs
        phases: dict[str, Costs] = {}
        if self.judge is not None and self.judge.calibration_costs:
            phases["judge-calibration"] = self.judge.calibration_costs
        phases |= {
            "baseline": self.baseline.costs,
            "optimize-source": _merge_costs(*(run.learned.costs for run in runs)),
            "transferred": _merge_costs(*(run.transferred.costs for run in runs),
                                        *((self.reference.costs,) if self.reference is not None else ())),
        }
        if self.direct_optimization is not None and self.direct is not None:
            phases["optimize-direct"] = _merge_costs(*(r.direct_optimization.costs for r in runs if r.direct_optimization))
            phases["direct"] = _merge_costs(*(run.direct.costs for run in runs if run.direct))
        if self.portable:
            phases["optimize-portable"] = _merge_costs(*(p.learned.costs for p in self.portable))
            phases["portable"] = _merge_costs(*(self._portable_eval_costs(p) for p in self.portable))
        return phases

    def billed_costs(self) -> dict[str, Costs]:
        """What this result paid per phase: each answer once, none that an earlier result paid (`ledger.bill`)."""
        return self.bill if self.bill is not None else ledger.bill(self.phase_costs(), set())


@dataclass(frozen=True)
class JudgeSummary:
    """The judge of a result: model, samples, calibration and a same-family warning."""

    model_id: str
    samples: int
    calibration: Calibration | None
    calibration_costs: Costs
    warning: str | None = None


def _as_cached(costs: Costs) -> Costs:
    """The same calls seen as cache hits: no call sent, no token paid."""
    return {key: Tally(0, t.calls + t.cached, evidence=t.evidence, answers=t.answers) for key, t in costs.items()}


def _merge_costs(*parts: Costs) -> Costs:
    merged: Costs = {}
    for part in parts:
        for key, tally in part.items():
            merged[key] = merged[key].merged(tally) if key in merged else tally
    return dict(sorted(merged.items()))


def total_costs(result: TransferResult) -> Costs:
    """What a result paid, all phases merged per (model id, role) (see `TransferResult.billed_costs`)."""
    return _merge_costs(*result.billed_costs().values())
