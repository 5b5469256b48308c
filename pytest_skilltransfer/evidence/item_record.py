"""One transfer item's result as the report carries it: a typed, versioned record.

`reports.result_json` writes it from a `TransferResult`; the plugin adds what it decides per item (the
constant-answer check, the family, the gate, the node id); the gating, the run summary, the frontier,
the snapshots, the diagnosis, the renderers and the `merge` command read it. `ItemRecord.to_json()` is
the JSON report's shape, key for key and in the same order, and `ItemRecord.from_json()` reads it back,
including reports written by earlier versions (a key they lack takes its default; a key this version
does not know is kept in `extra` and written back).

Adding a key to every item is one line: a field of `ItemRecord` (or of the part it belongs to), placed
where the key goes in the JSON, with `optional()` when only some items carry it. `RECORD_VERSION` counts
changes of shape that an older reader cannot follow (a key renamed, removed or changing meaning); version 1,
the shape every report so far has, writes no version key, and a later version writes `record_version`.

The parts the gates, the statistics and the tables read are typed. Kept as their JSON values (`Any`, read by
key) are the open-ended parts whose shape one producer owns: the optimization's nights and edits
(`optimization`, `restarts`: `reports.result_json`), the protocol settings (`config`: `engine.results`), the
rubric judge and a sample's rubric verdicts (`judge`, `rubric`: `reports.judge_report`), the validation-set
skill (`portable`: `reports.result_json`), the per-check rows (`checks`: `reports.why`), the base-ref
comparison (`compare`, `snapshot_change`: `plugin.compare_to`), and a gain's restarts (`evidence.gains`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .json_record import JsonRecord, RecordError, optional, present_with

RECORD_VERSION = 1
VERSION_KEY = "record_version"


@dataclass(frozen=True)
class GainRecord(JsonRecord):
    """A paired gain (or the direct headroom): `evidence.gains.Gain.as_dict`."""

    mean: float
    ci_low: float
    ci_high: float
    n: int
    p_value: float
    improved: int | None = None
    worsened: int | None = None
    tied: int | None = None
    mdg: float | None = None
    method: str | None = None
    up: float | None = None
    down: float | None = None
    restarts: Mapping[str, Any] | None = optional()  # with R > 1 restarts: their gains, spread and views
    unit: str | None = optional()  # with clusters: "cluster", and the keys that come with it
    clusters: int | None = present_with("unit")
    tasks: int | None = present_with("unit")
    design_effect: float | None = present_with("unit")
    task_mean: float | None = present_with("unit")

    def as_gain(self) -> dict[str, Any]:
        """The JSON the statistics of `evidence.stats` read (`gain_bounds_of`, `word`, ...)."""
        return self.to_json()


@dataclass(frozen=True)
class Interval(JsonRecord):
    """An estimate with its interval (the efficiency ratio)."""

    mean: float
    ci_low: float
    ci_high: float


@dataclass(frozen=True)
class ScoreRecord(JsonRecord):
    """A held-out score's mean and interval (`evidence.score_intervals.Estimate.as_dict`)."""

    mean: float
    ci_low: float
    ci_high: float
    n: int
    method: str | None = None
    unit: str | None = optional()
    clusters: int | None = optional()
    tasks: int | None = optional()
    restart_means: tuple[float, ...] | None = optional()  # with restarts: each restart's mean


@dataclass(frozen=True)
class SampleRecord(JsonRecord):
    """One answer to one held-out task: its scores, the checks it missed, its stop and (cut) text."""

    sample_id: int
    hard: float
    soft: float
    failed: tuple[str, ...] = ()
    stop_reason: str | None = None
    answer: str | None = optional()
    rubric: tuple[Any, ...] | None = optional()  # the rubric's verdicts (`reports.judge_report.verdict_json`)


@dataclass(frozen=True)
class TaskRecord(JsonRecord):
    """One held-out task of an arm: its mean scores over samples (and restarts) and the samples."""

    task_id: str
    cluster: str | None = optional()
    hard: float = 0.0
    soft: float = 0.0
    restarts: tuple[float, ...] | None = optional()
    samples: tuple[SampleRecord, ...] = ()


@dataclass(frozen=True)
class ArmScoring(JsonRecord):
    profile: str
    score: float


@dataclass(frozen=True, kw_only=True)
class ArmRecord(JsonRecord):
    """One arm's held-out evaluation (baseline, transferred or direct), averaged over restarts when there are any."""

    model: str | None = None
    split: str | None = None
    hard: ScoreRecord
    soft: ScoreRecord
    scoring: ArmScoring | None = optional()
    stops: Mapping[str, int] = field(default_factory=dict)
    tasks: tuple[TaskRecord, ...] = ()

    def per_task(self) -> dict[str, float]:
        """{task id: hard score}."""
        return {t.task_id: t.hard for t in self.tasks}


@dataclass(frozen=True)
class ArmScores(JsonRecord):
    baseline: ArmRecord | None = None
    transferred: ArmRecord | None = None
    direct: ArmRecord | None = None


@dataclass(frozen=True)
class ProfileScores(JsonRecord):
    """The scoring profile's set scores of the three held-out evaluations."""

    profile: str | None = None
    baseline: float | None = None
    transferred: float | None = None
    direct: float | None = None
    gain: float | None = None


@dataclass(frozen=True)
class CostRow(JsonRecord):
    """What one model in one role spent in one phase (`reports.result_json.cost_rows`)."""

    model: str
    role: str
    lane: str | None = None
    lanes: Mapping[str, float | None] | None = optional()
    calls: int = 0
    cached: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_write_tokens: int = 0
    cache_read_tokens: int = 0
    usage_unreported: int = 0
    usd: float | None = None
    reused_usd: float | None = None
    cache_saved_usd: float | None = None


@dataclass(frozen=True)
class RoleCost(JsonRecord):
    calls: int = 0
    tokens: int = 0
    usd: float | None = None


@dataclass(frozen=True)
class CostRecord(JsonRecord):
    """An item's bill: per phase and role, and its totals."""

    phases: Mapping[str, tuple[CostRow, ...]] = field(default_factory=dict)
    roles: Mapping[str, RoleCost] = field(default_factory=dict)
    total_usd: float | None = None
    reused_usd: float | None = None
    reused_calls: int = 0
    optimize_source_usd: float | None = None
    optimize_direct_usd: float | None = None
    calls: int = 0
    tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cache_saved_usd: float | None = None
    usage_unreported_calls: int = 0


@dataclass(frozen=True)
class EvidenceDigest(JsonRecord):
    """The distinct calls the scores came from, their digest, and the digest of the answers themselves."""

    calls: int = 0
    digest: str | None = None
    answers: str | None = None


@dataclass(frozen=True)
class Unlearnable(JsonRecord):
    checks_never_passed: tuple[str, ...] = ()


@dataclass(frozen=True)
class ConstantAnswerRecord(JsonRecord):
    """The share of held-out tasks one recorded answer passes (`engine.constant_answer.ConstantAnswer`)."""

    passes: int
    tasks: int
    share: float
    flagged: bool
    answer: str = ""
    rubric_left_out: int = 0
    text: str = ""
    checks: str = ""


@dataclass(frozen=True)
class AnswersCollapse(JsonRecord):
    """Distinct answers of the baseline and the transferred arm (`engine.constant_answer.Collapse`)."""

    baseline: int
    transferred: int
    tasks: int
    collapsed: bool
    text: str | None = optional()


@dataclass(frozen=True)
class Unadjusted(JsonRecord):
    """The item's own 95% reading beside its family's."""

    level: float
    p_value: float
    ci_low: float
    ci_high: float
    outcome: str


@dataclass(frozen=True)
class SequentialRecord(JsonRecord):
    """The held-out design and where the item stopped (`evidence.sequential`, `result_json.sequential_record`)."""

    design: str
    looks: tuple[int, ...]
    alpha_shares: tuple[float, ...]
    futility: str
    futility_below: float | None
    look: int
    tasks: int
    of: int
    alpha_share: float
    reason: str
    level: float
    note: str | None = None
    # the transferred skill's hard score per held-out task past the pair's stop ({task id: score}): the waves the
    # regression gate kept it looking, then every remaining task when the run wrote the regression gate's reference
    # (its snapshot); only the regression gate reads them, up to its own look
    reference: Mapping[str, float] | None = optional()
    # the regression gate's own stopping look when it went past the pair's (`look`, `tasks`, `alpha_share`)
    regression: Mapping[str, Any] | None = optional()


@dataclass(frozen=True)
class FamilyRecord(JsonRecord):
    """The family the item was judged in (`evidence.run_family.family_record`)."""

    method: str
    alpha: float
    size: int
    alpha_share: float | None = optional()  # with looks: the share of the item's alpha its stopping look spent
    futile: bool | None = optional()  # the item stopped for futility
    level: float = field(kw_only=True)  # required; after the optional keys, as the JSON lists them
    p_adjusted: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    unadjusted: Unadjusted | None = None
    decidable: bool | None = None


@dataclass(frozen=True)
class GateDecision(JsonRecord):
    """One gate's decision on the item (`plugin.gating.Gate.as_dict`)."""

    gate: str
    verdict: str
    threshold: float
    estimate: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    tasks_to_decide: int | None = None
    tasks_for_power: int | None = None
    message: str = ""
    level: float | None = None


@dataclass(frozen=True)
class GateRecord(JsonRecord):
    """Every gate's decision on the item, its verdict, the snapshot comparison and the row's label."""

    verdict: str
    passed: bool
    claims: tuple[str, ...] = ()
    failures: tuple[str, ...] = ()
    inconclusive: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    level: float | None = None
    gates: tuple[GateDecision, ...] = ()
    thresholds: Mapping[str, Any] = field(default_factory=dict)
    snapshot: str | None = optional()
    label: str | None = optional()


@dataclass(frozen=True, kw_only=True)
class ItemRecord(JsonRecord):
    """One transfer item (seed x source -> target) as the JSON report carries it; see the module docstring."""

    seed: str
    source: str
    target: str
    source_name: str | None = None
    target_name: str | None = None
    baseline_target: float
    direct_target: float | None = None
    direct_skipped: bool = False
    transferred: float
    transfer_gain: float | None = None
    learned_skill_tail: str = ""
    optimizer: str | None = None
    gain: GainRecord
    sequential: SequentialRecord | None = None
    outcome: str | None = None
    efficiency: float | None = None
    efficiency_ci: Interval | None = None
    headroom: GainRecord | None = None
    scoring: ProfileScores | None = None
    scores: ArmScores = field(default_factory=ArmScores)
    restarts: Any = None  # per restart with R > 1: split seed, scores, gain, learned skill, nights
    learned_skill: str = ""
    seed_skill: str | None = None
    optimization: Any = None  # the source's and the direct optimization's nights
    cost: CostRecord = field(default_factory=CostRecord)
    evidence: EvidenceDigest | None = None
    portable: Any = optional()
    config: Any = None  # the run settings the item ran with (`engine.results` settings)
    judge: Any = optional()
    unlearnable: Unlearnable | None = optional()
    checks: Any = optional()
    prompt_cache: str | None = optional()
    constant_answer: ConstantAnswerRecord | None = optional()
    answers_collapse: AnswersCollapse | None = optional()
    context_chosen: str | None = optional()  # a fixed context picked from candidates: how (seed.toml)
    family: FamilyRecord | None = optional()
    compare: Any = optional()
    snapshot_change: Any = optional()
    gate: GateRecord | None = optional()
    item: str | None = optional()

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ItemRecord:
        """An item of a JSON report (this version's or an earlier one's); a newer shape is a clear error."""
        version = data.get(VERSION_KEY, 1) if isinstance(data, Mapping) else 1
        if not isinstance(version, int) or version > RECORD_VERSION:
            raise RecordError(f"a result of {data.get('seed', '?')!r} has record_version {version!r}; this version "
                              f"of pytest-skilltransfer reads up to {RECORD_VERSION}: upgrade it to read the report")
        return super().from_json(data)

    @property
    def key(self) -> tuple[str, str, str, str]:
        """(seed, source, target, optimizer): one hypothesis."""
        return self.seed, self.source, self.target, self.optimizer or ""


def records(results: Iterable[Mapping[str, Any]]) -> list[ItemRecord]:
    """The records of a JSON report's `results`."""
    return [ItemRecord.from_json(r) for r in results]

