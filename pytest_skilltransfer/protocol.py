"""The optimize-then-transfer protocol for one seed.

1. baseline    = test score of the deficient skill on TARGET;
2. learned     = the skill optimized for N nights with SOURCE as agent (and an optimizer model);
3. transferred = test score of the frozen learned skill on TARGET;
4. direct      = a skill optimized with TARGET as agent, scored on TARGET (optional reference).

One night: score val; replay train; reflect on failures and successes (with the edits rejected
so far); apply at most `edit_budget` edits to the learned block; keep them only when the val gate
score strictly improves; stop early once val is perfect.

A `SeedSession` memoizes evaluations and optimizations, so items that share a target baseline or
a source optimization compute it once; its call cache makes sure no request is sent twice.
"""

from __future__ import annotations

import hashlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable

from . import judges
from .agent import AgentContext, run_task
from .edits import Edit, apply_edits
from .ledger import CallCache, Meter, Tally
from .models.base import Message, Model, Request
from .reflect import RETRY_NOTE, EditParseError, Observation, RejectedEdit, build_reflect_request, parse_edits
from .seeds import Seed, Task
from .stats import Estimate, bootstrap, paired_gain
from .tools import load_corpus

Progress = Callable[[str], None]
Costs = dict[tuple[str, str], Tally]
Concurrency = Callable[[Model], int]


@dataclass(frozen=True)
class ProtocolConfig:
    """Protocol settings; defaults mirror the upstream transfer experiment."""

    nights: int = 2
    edit_budget: int = 4
    limit_replay: int = 3
    limit_holdout: int = 3
    samples: int = 1
    direct: bool = True
    gate_weight: float = 0.5
    workers: int = 1

    def validate(self) -> None:
        """Raise ValueError naming the first bad setting."""
        for name in ("nights", "edit_budget", "samples", "workers"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        for name in ("limit_replay", "limit_holdout"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be 0 (no cap) or positive, got {getattr(self, name)}")
        if not 0 <= self.gate_weight <= 1:
            raise ValueError(f"gate_weight must be within [0, 1], got {self.gate_weight}")


@dataclass(frozen=True)
class SampleResult:
    """One judged rollout."""

    sample_id: int
    hard: float
    soft: float
    failed: tuple[str, ...]
    answer: str
    tools_called: tuple[str, ...]


@dataclass(frozen=True)
class TaskResult:
    """A task's samples and their means."""

    task_id: str
    samples: tuple[SampleResult, ...]

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

    @property
    def hard(self) -> Estimate:
        return bootstrap([t.hard for t in self.tasks])

    @property
    def soft(self) -> Estimate:
        return bootstrap([t.soft for t in self.tasks])

    @property
    def gate_score(self) -> float:
        """The mixed metric (1-w)*hard + w*soft used by the validation gate."""
        w = self.gate_weight
        return (1 - w) * self.hard.mean + w * self.soft.mean


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


@dataclass(frozen=True)
class Optimization:
    """A skill optimized with one agent model and one optimizer model."""

    agent_id: str
    optimizer_id: str
    initial_skill: str
    learned_skill: str
    nights: tuple[Night, ...]
    costs: Costs


@dataclass(frozen=True)
class TransferResult:
    """Everything one seed x (source, target) run produced."""

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

    @property
    def gain(self) -> Estimate:
        """Paired per-task gain transferred - baseline (hard), with a bootstrap interval."""
        return paired_gain([t.hard for t in self.baseline.tasks], [t.hard for t in self.transferred.tasks])

    @property
    def efficiency(self) -> float | None:
        """(transferred - baseline) / (direct - baseline), defined when direct beat the baseline."""
        if self.direct is None:
            return None
        headroom = self.direct.hard.mean - self.baseline.hard.mean
        if headroom <= 0:
            return None
        return (self.transferred.hard.mean - self.baseline.hard.mean) / headroom

    def phase_costs(self) -> dict[str, Costs]:
        """Calls and tokens per protocol phase, keyed by (model id, role)."""
        phases = {
            "baseline": self.baseline.costs,
            "optimize-source": self.learned.costs,
            "transferred": self.transferred.costs,
        }
        if self.direct_optimization is not None and self.direct is not None:
            phases["optimize-direct"] = self.direct_optimization.costs
            phases["direct"] = self.direct.costs
        return phases


def capped(tasks: tuple[Task, ...], limit: int, split_seed: int) -> tuple[Task, ...]:
    """At most `limit` tasks (0 = all): a seeded hash sample, kept in file order."""
    if not limit or len(tasks) <= limit:
        return tasks
    ranked = sorted(tasks, key=lambda t: hashlib.sha256(f"{split_seed}:{t.id}".encode()).hexdigest())
    chosen = {t.id for t in ranked[:limit]}
    return tuple(t for t in tasks if t.id in chosen)


def _merge_costs(*parts: Costs) -> Costs:
    merged: Costs = {}
    for part in parts:
        for key, tally in part.items():
            merged[key] = merged[key].merged(tally) if key in merged else tally
    return dict(sorted(merged.items()))


class SeedSession:
    """Runs the protocol for one seed, sharing evaluations, optimizations and answers between pairs."""

    def __init__(self, seed: Seed, config: ProtocolConfig, progress: Progress | None = None,
                 concurrency: Concurrency | None = None):
        """`concurrency(model)`: how many of an evaluation's attempts run at once (default `config.workers`)."""
        config.validate()
        self.seed = seed
        self.config = config
        self.concurrency = concurrency or (lambda _model: config.workers)
        self.cache = CallCache()
        self.progress = progress or (lambda _line: None)
        self.corpus = load_corpus(seed.corpus_dir) if seed.corpus_dir else None
        split_seed = seed.split.seed
        self.splits = {
            "train": capped(seed.train, config.limit_replay, split_seed),
            "val": capped(seed.val, config.limit_holdout, split_seed),
            "test": capped(seed.test, config.limit_holdout, split_seed),
        }
        self._evaluations: dict[tuple[str, str, str], Evaluation] = {}
        self._optimizations: dict[tuple[str, str], Optimization] = {}
        self.phase = ""  # the protocol phase running now, for error messages

    def evaluate(self, model: Model, skill: str, split: str, meter: Meter | None = None) -> Evaluation:
        """Score `skill` on a split with `model` (memoized; the meter sees cache hits as such)."""
        key = (model.model_id, hashlib.sha256(skill.encode()).hexdigest(), split)
        own_meter = meter or Meter()
        if key in self._evaluations and meter is None:
            return self._evaluations[key]
        ctx = AgentContext(model=model, cache=self.cache, meter=own_meter, role="agent", corpus=self.corpus)
        tasks = self.splits[split]
        jobs = [(task, sample) for task in tasks for sample in range(self.config.samples)]

        def judge(job: tuple[Task, int]) -> SampleResult:
            task, sample = job
            attempt = run_task(ctx, skill, task, sample)
            verdict = judges.score(task.judge, attempt)
            return SampleResult(sample, verdict.hard, verdict.soft, verdict.failed, attempt.text, attempt.tools_called)

        workers = min(self.concurrency(model), len(jobs))
        if workers > 1:  # results keep the jobs' order, so any concurrency gives the same evaluation
            with ThreadPoolExecutor(max_workers=workers, thread_name_prefix=f"{model.model_id}-call") as pool:
                results = list(pool.map(judge, jobs))
        else:
            results = [judge(job) for job in jobs]
        per_task = tuple(
            TaskResult(task.id, tuple(r for (t, _), r in zip(jobs, results) if t is task)) for task in tasks
        )
        evaluation = Evaluation(model.model_id, split, per_task, own_meter.snapshot(), self.config.gate_weight)
        if meter is None:
            self._evaluations[key] = evaluation
        return evaluation

    def optimize(self, agent: Model, optimizer: Model) -> Optimization:
        """Optimize the seed's skill for up to N nights (memoized per agent and optimizer)."""
        key = (agent.model_id, optimizer.model_id)
        if key not in self._optimizations:
            self._optimizations[key] = self._optimize(agent, optimizer)
        return self._optimizations[key]

    def _optimize(self, agent: Model, optimizer: Model) -> Optimization:
        meter = Meter()
        skill = self.seed.skill
        nights: list[Night] = []
        rejected: list[RejectedEdit] = []
        label = f"{self.seed.name}: optimize on {agent.model_id} (optimizer {optimizer.model_id})"
        for number in range(1, self.config.nights + 1):
            val = self.evaluate(agent, skill, "val", meter)
            if val.gate_score >= 1.0:
                nights.append(Night(number, val.gate_score, None, False, (), (), "validation already perfect; stopped"))
                self.progress(f"{label}: night {number}: val {val.gate_score:.2f} is perfect, stopping")
                break
            train = self.evaluate(agent, skill, "train", meter)
            failures, successes = _observations(self.splits["train"], train)
            if not failures:
                nights.append(Night(number, val.gate_score, None, False, (), (), "no training failures to learn from"))
                self.progress(f"{label}: night {number}: no training failures, stopping")
                break
            request = build_reflect_request(skill, failures, successes, rejected, self.config.edit_budget, sample_id=number)
            edits, note = self._reflect(optimizer, request, meter)
            outcome = apply_edits(skill, edits, self.config.edit_budget)
            if not outcome.applied:
                nights.append(Night(number, val.gate_score, None, False, (), outcome.unmatched, note or "no edit applied"))
                self.progress(f"{label}: night {number}: no edit applied")
                continue
            candidate = self.evaluate(agent, outcome.skill, "val", meter)
            accepted = candidate.gate_score > val.gate_score
            nights.append(Night(number, val.gate_score, candidate.gate_score, accepted, outcome.applied, outcome.unmatched, note))
            verb = "accepted" if accepted else "rejected"
            self.progress(f"{label}: night {number}: val {val.gate_score:.2f} -> {candidate.gate_score:.2f}, "
                          f"{len(outcome.applied)} edit(s) {verb}")
            if accepted:
                skill = outcome.skill
                if candidate.gate_score >= 1.0:
                    break
            else:
                rejected += [RejectedEdit(e, number, val.gate_score, candidate.gate_score) for e in outcome.applied]
        return Optimization(agent.model_id, optimizer.model_id, self.seed.skill, skill, tuple(nights), meter.snapshot())

    def _reflect(self, optimizer: Model, request: Request, meter: Meter) -> tuple[list[Edit], str]:
        reply = self.cache.call(optimizer, request, meter, "optimizer")
        try:
            edits = parse_edits(reply.text)
            return edits, "" if edits else "the optimizer proposed no edit"
        except EditParseError:
            retry = Request(
                system=request.system,
                messages=request.messages + (Message("assistant", reply.text), Message("user", RETRY_NOTE)),
                max_tokens=request.max_tokens,
                sample_id=request.sample_id,
            )
            second = self.cache.call(optimizer, retry, meter, "optimizer")
            try:
                return parse_edits(second.text), "optimizer reply parsed on retry"
            except EditParseError as exc:
                return [], f"optimizer reply unusable after one retry: {exc}"

    def transfer(self, source: Model, target: Model, optimizer: Model | None = None) -> TransferResult:
        """Run the whole protocol for one (source, target) pair."""
        source_optimizer = optimizer or source
        self.phase = "baseline"
        self.progress(f"{self.seed.name}: baseline on {target.model_id}")
        baseline = self.evaluate(target, self.seed.skill, "test")
        self.phase = "optimize-source"
        learned = self.optimize(source, source_optimizer)
        self.phase = "transferred"
        self.progress(f"{self.seed.name}: transferred skill on {target.model_id}")
        transferred = self.evaluate(target, learned.learned_skill, "test")
        direct_opt = direct = None
        if self.config.direct:
            self.phase = "optimize-direct"
            direct_opt = self.optimize(target, optimizer or target)
            self.phase = "direct"
            direct = self.evaluate(target, direct_opt.learned_skill, "test")
        self.phase = ""
        return TransferResult(
            seed=self.seed.name,
            source=source.model_id,
            target=target.model_id,
            optimizer=source_optimizer.model_id,
            config=self.config,
            baseline=baseline,
            learned=learned,
            transferred=transferred,
            direct_optimization=direct_opt,
            direct=direct,
        )


def _observations(tasks: tuple[Task, ...], evaluation: Evaluation) -> tuple[list[Observation], list[Observation]]:
    """Split a train evaluation into failing and passing observations (one per task and sample)."""
    failures, successes = [], []
    for task, result in zip(tasks, evaluation.tasks):
        for sample in result.samples:
            obs = Observation(task.id, task.text, sample.answer, task.judge, sample.failed, sample.tools_called)
            (successes if sample.hard >= 1.0 else failures).append(obs)
    return failures, successes


def total_costs(result: TransferResult) -> Costs:
    """All phases' calls and tokens of a result, merged per (model id, role)."""
    return _merge_costs(*result.phase_costs().values())
