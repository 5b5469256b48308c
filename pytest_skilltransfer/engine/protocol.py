"""The optimize-then-transfer protocol for one seed.

1. baseline    = test score of the deficient skill on TARGET;
2. learned     = the skill optimized for N nights with SOURCE as agent (and an optimizer model);
3. transferred = test score of the frozen learned skill on TARGET;
4. direct      = a skill optimized with TARGET as agent, scored on TARGET (optional reference).

One night: score val; replay train; reflect on failures and successes (with the edits rejected
so far); apply at most `edit_budget` edits to the learned block; keep them only when the val gate
score beats the current one by more than `min_delta` (the scoring profile's unless set: 0 by
default, 0.05 for gbrain); stop early once val is perfect.

With a validation set of models (`validators`, `--validate-on`), step 2 runs once more with every
night's candidate also scored on each listed model's validation split (`validation`): the edit is kept
only when the source strictly improves and no listed model drops beyond the tolerance. That portable
skill is scored on TARGET too (`portable`), beside the single-model one.

With `restarts` R > 1, steps 2-4 run R times, each restart with its own train/val split and
optimizer sample ids (`restarts`); every restart scores the same test tasks.

A `SeedSession` memoizes evaluations and optimizations, so items that share a target baseline or
a source optimization compute it once; its call cache makes sure no request is sent twice.

Rubric checks are answered by the seed's judge model (`rubric`), through the same call cache and
the phase's meter under the role `judge`. A seed with a calibration file has its judge measured
once, before its first pair runs; a judge below the seed's threshold fails every pair.
"""

from __future__ import annotations

import contextvars
import hashlib
import threading
from concurrent.futures import Future
from dataclasses import dataclass, replace
from typing import Callable, TypeVar

from ..evidence import sequential
from ..evidence.stats import is_clustered, moves
from ..guards import timed_regex
from ..guards.edits import Edit, apply_edits
from ..models.base import Message, Model, Request
from ..models.sdk_common import current_environment
from ..models.registry import resolve_model
from . import judges, ledger, phases, restarts
from .agent import AgentContext, context_messages, run_task
from .ledger import CallCache, Meter
from .reflect import RETRY_NOTE, EditParseError, Observation, RejectedEdit, build_reflect_request, parse_edits
from .results import (
    Costs,
    Evaluation,
    JudgeSummary,
    Night,
    Optimization,
    PortableRun,
    ProtocolConfig,
    RestartRun,
    SampleResult,
    TaskResult,
    TransferResult,
    checks_never_passed,
    paired_gain,
)
from .rubric import Calibration, JudgeSetup, RubricJudge, calibrate, family_warning
from .scoring import ScoringProfile, scoring_profile
from .seed_data import Seed, Task
from .slots import ModelSlots
from .tools import load_corpus
from .waves_ahead import WaveWatch
from .validation import DEFAULT_TOLERANCE, ValidationScore, blocked_text, check_pass_rates, check_rates, decide

Progress = Callable[[str], None]
Concurrency = Callable[[Model], int]
T = TypeVar("T")

# A phase's rank within a transfer: its place in the sequential order (calibration, baseline, then per
# restart: optimize on the source, transferred, optimize on the target, direct, optimize against the
# validation set, portable).
CALIBRATION_PHASE, BASELINE_PHASE, RESTART_PHASES = 0, 1, 6
# Calls of the optimizations (long chains of nights) get a model's free slot before the final evaluations.
OPTIMIZE_PRIORITY, FINAL_PRIORITY = 0, 1


class CalibrationFailed(Exception):
    """The seed's judge fell below its calibration threshold; the message shows the disagreements."""


class NoJudgeConfigured(ValueError):
    """A seed with rubric checks was run without a judge model."""


def capped(tasks: tuple[Task, ...], limit: int, split_seed: int) -> tuple[Task, ...]:
    """At most `limit` tasks (0 = all): a seeded hash sample, kept in file order."""
    if not limit or len(tasks) <= limit:
        return tasks
    ranked = sorted(tasks, key=lambda t: hashlib.sha256(f"{split_seed}:{t.id}".encode()).hexdigest())
    chosen = {t.id for t in ranked[:limit]}
    return tuple(t for t in tasks if t.id in chosen)


class SeedSession:
    """Runs the protocol for one seed, sharing evaluations, optimizations and answers between pairs."""

    def __init__(self, seed: Seed, config: ProtocolConfig, progress: Progress | None = None,
                 concurrency: Concurrency | None = None, judge: JudgeSetup | None = None,
                 concurrent_phases: bool = True):
        """`concurrency(model)`: how many calls to a model are in flight at once, over every phase (default
        `config.workers`); `judge`: the rubric judge (default: the seed's `[judge]` table);
        `concurrent_phases`: run a transfer's independent phases at the same time (see `phases`)."""
        config.validate()
        judge = judge or seed_judge(seed)
        if judge is None and seed.rubric_origin is not None:
            raise NoJudgeConfigured(
                f"seed {seed.name!r} has rubric checks ({seed.rubric_origin}) but no judge model: pass --judge MODEL "
                f"(ini: skilltransfer_judge) or set [judge] model = \"...\" in {seed.path / 'seed.toml'}")
        self.seed = seed
        self.judge = judge
        self.config = config
        self.concurrency = concurrency or (lambda _model: config.workers)
        self.concurrent_phases = concurrent_phases
        self.cache = CallCache(ModelSlots(self.concurrency))
        self.rubric = RubricJudge(judge, self.cache) if judge is not None else None
        self._calibration: tuple[Calibration | None, Costs] | None = None
        self.progress = progress or (lambda _line: None)
        self.corpus = load_corpus(seed.corpus_dir) if seed.corpus_dir else None
        split_seed = seed.split.seed
        self.splits = {
            "train": capped(seed.train, config.limit_replay, split_seed),
            "val": capped(seed.val, config.limit_holdout, split_seed),
            "test": capped(seed.test, config.limit_test, split_seed),
        }
        self._evaluations: phases.Memo[tuple[str, str, str, int, float | None], tuple[Evaluation, Meter]] = phases.Memo()
        self._optimizations: phases.Memo[tuple[str, str, int, tuple[str, ...], float], tuple[Optimization, Meter]] = phases.Memo()
        self._transfers = 0  # transfers started: the first part of every phase's rank
        self._paid: set[str] = set()  # answers a result's bill has charged (each is paid once)
        self.phase = ""  # the protocol phase that failed (or runs, when one runs), for error messages
        self._watches: dict[str, WaveWatch] = {}  # a held-out wave's split -> its watch (`waves_ahead`)
        self._ahead: dict[str, Future[tuple[list[object], phases.Place]]] = {}  # a wave's split -> that wave, sent early

    def evaluate(self, model: Model, skill: str, split: str, meter: Meter | None = None,
                 rank: tuple[int, ...] = (), first_sample: int = 0, temperature: float | None = None) -> Evaluation:
        """Score `skill` on a split with `model`: memoized (with its own meter ranked `rank`) unless a
        phase's `meter` is given (the meter then sees cache hits as such).

        Each task gets `samples` rollouts with sample ids `first_sample`, `first_sample + 1`, ...;
        another `first_sample` scores the same skill again with requests never sent before. A
        `temperature` is sent with every call (the sampled A/A check); None sends none."""
        if meter is not None:
            return self._evaluate(model, skill, split, meter, first_sample, temperature)
        key = (model.model_id, hashlib.sha256(skill.encode()).hexdigest(), split, first_sample, temperature)
        own = Meter(rank, priority=FINAL_PRIORITY)
        compute = lambda: (self._evaluate(model, skill, split, own, first_sample, temperature), own)  # noqa: E731
        return self._evaluations.get(key, compute, own, _ranked_first(rank))[0]

    def _evaluate(self, model: Model, skill: str, split: str, meter: Meter, first_sample: int = 0,
                  temperature: float | None = None) -> Evaluation:
        ctx = AgentContext(model=model, cache=self.cache, meter=meter, role="agent", corpus=self.corpus,
                           context=context_messages(self.seed.context), max_tokens=self.seed.max_tokens,
                           temperature=temperature)
        tasks = self.splits[split]
        jobs = [(task, first_sample + s) for task in tasks for s in range(self.config.samples)]

        def judge(job: tuple[Task, int]) -> SampleResult:
            task, sample = job
            attempt = run_task(ctx, skill, task, sample)
            grade = self.rubric.grader(task.text, attempt.text, meter) if self.rubric else None
            verdict = judges.score(task.judge, attempt, grade, task.origin)
            watch = self._watches.get(split)
            if watch is not None and watch.model_id == model.model_id:
                watch.scored(skill, task.id, verdict.hard, phases.here())
            return SampleResult(sample, verdict.hard, verdict.soft, verdict.failed, attempt.text, attempt.tools_called,
                                verdict.rubric, attempt.stop_reason)

        # results keep the jobs' order, so any concurrency gives the same evaluation
        results = phases.fan_out(judge, jobs, self.concurrency(model), f"{model.model_id}-call", model.model_id)
        per_task = tuple(
            TaskResult(task.id, tuple(r for (t, _), r in zip(jobs, results) if t is task), task.cluster)
            for task in tasks
        )
        return Evaluation(model.model_id, split, per_task, meter.snapshot(), self.config.gate_weight,
                          self.config.scoring)

    @property
    def gate_profile(self) -> ScoringProfile:
        """The scoring profile, with `min_delta` from the configuration when it sets one."""
        profile = scoring_profile(self.config.scoring)
        return profile if self.config.min_delta is None else replace(profile, min_delta=self.config.min_delta)

    def optimize(self, agent: Model, optimizer: Model, restart: int = 1, rank: tuple[int, ...] = (),
                 validators: tuple[Model, ...] = (), tolerance: float = DEFAULT_TOLERANCE) -> Optimization:
        """Optimize the seed's skill for up to N nights (memoized per agent, optimizer, restart and validation
        set; its meter ranked `rank`). With `validators`, every candidate is also scored on their validation
        split and kept only when none drops beyond `tolerance` (see `validation`)."""
        key = (agent.model_id, optimizer.model_id, restart, tuple(v.model_id for v in validators), tolerance)
        meter = Meter(rank, priority=OPTIMIZE_PRIORITY)
        compute = lambda: (self._optimize(agent, optimizer, restart, meter, validators, tolerance), meter)  # noqa: E731
        return self._optimizations.get(key, compute, meter, _ranked_first(rank))[0]

    def _restart_splits(self, restart: int) -> tuple[str, str]:
        """The session's names of restart `restart`'s train and val splits (created on first use)."""
        train_name, val_name = restarts.split_name("train", restart), restarts.split_name("val", restart)
        if train_name not in self.splits:
            train, val = restarts.train_val(self.seed, restart)
            split_seed = restarts.split_seed(self.seed, restart)
            self.splits[train_name] = capped(train, self.config.limit_replay, split_seed)
            self.splits[val_name] = capped(val, self.config.limit_holdout, split_seed)
        return train_name, val_name

    def _optimize(self, agent: Model, optimizer: Model, restart: int, meter: Meter,
                  validators: tuple[Model, ...] = (), tolerance: float = DEFAULT_TOLERANCE) -> Optimization:
        skill = self.seed.skill
        nights: list[Night] = []
        rejected: list[RejectedEdit] = []
        train_split, val_split = self._restart_splits(restart)
        label = f"{self.seed.name}: optimize on {agent.model_id} (optimizer {optimizer.model_id})"
        label += f", validated on {', '.join(v.model_id for v in validators)}" if validators else ""
        label += f", restart {restart}" if restart > 1 else ""
        for number in range(1, self.config.nights + 1):
            val = self.evaluate(agent, skill, val_split, meter)
            if val.gate_score >= 1.0:
                nights.append(Night(number, val.gate_score, None, False, (), (), "validation already perfect; stopped"))
                self.progress(f"{label}: night {number}: val {val.gate_score:.2f} is perfect, stopping")
                break
            train = self.evaluate(agent, skill, train_split, meter)
            failures, successes = _observations(self.splits[train_split], train)
            if not failures:
                nights.append(Night(number, val.gate_score, None, False, (), (), "no training failures to learn from"))
                self.progress(f"{label}: night {number}: no training failures, stopping")
                break
            request = build_reflect_request(skill, failures, successes, rejected, self.config.edit_budget,
                                            sample_id=restarts.optimizer_sample_id(number, restart))
            with timed_regex.origins_of_patterns(lambda pattern: _pattern_origins(self.splits[train_split], pattern)):
                edits, note = self._reflect(optimizer, request, meter)  # a model reads only the request: name files here
            outcome = apply_edits(skill, edits, self.config.edit_budget)
            if not outcome.applied:
                nights.append(Night(number, val.gate_score, None, False, (), outcome.unmatched, note or "no edit applied"))
                self.progress(f"{label}: night {number}: no edit applied")
                continue
            candidate = self.evaluate(agent, outcome.skill, val_split, meter)
            checks = self._validation_scores(validators, skill, outcome.skill, val_split, meter)
            decision = decide(self.gate_profile, val.gate_score, candidate.gate_score, checks, tolerance)
            accepted = decision.accepted
            nights.append(Night(number, val.gate_score, candidate.gate_score, accepted, outcome.applied, outcome.unmatched,
                                note, checks, decision.blocked_by))
            verb = "accepted" if accepted else "rejected"
            others = "".join(f", {v.model_id} {v.before:.2f} -> {v.after:.2f}" for v in checks if v.after is not None)
            blocked = f" (blocked by {blocked_text(checks, tolerance)})" if decision.blocked_by and not accepted else ""
            self.progress(f"{label}: night {number}: val {val.gate_score:.2f} -> {candidate.gate_score:.2f}{others}, "
                          f"{len(outcome.applied)} edit(s) {verb}{blocked}")
            if accepted:
                skill = outcome.skill
                if candidate.gate_score >= 1.0:
                    break
            else:
                rejected += [RejectedEdit(e, number, val.gate_score, candidate.gate_score) for e in outcome.applied]
        return Optimization(agent.model_id, optimizer.model_id, self.seed.skill, skill, tuple(nights), meter.snapshot(),
                            tuple(v.model_id for v in validators), tolerance)

    def _validation_scores(self, validators: tuple[Model, ...], skill: str, candidate: str, val_split: str,
                           meter: Meter) -> tuple[ValidationScore, ...]:
        """Each listed model's validation gate score of the current skill and of the candidate: the
        validation split only (held-out tasks never reach a listed model)."""
        if val_split.partition("@")[0] != "val":
            raise ValueError(f"listed models are scored on a validation split only, not {val_split!r}")
        checks = [[(c.op, c.label()) for c in task.judge.checks] for task in self.splits[val_split]]
        scores = []
        for model in validators:
            before = self.evaluate(model, skill, val_split, meter)
            after = self.evaluate(model, candidate, val_split, meter)
            rates = check_rates(check_pass_rates(checks, _failures(before)), check_pass_rates(checks, _failures(after)))
            scores.append(ValidationScore(model.model_id, before.gate_score, after.gate_score, rates))
        return tuple(scores)

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

    def calibrate(self) -> tuple[Calibration | None, Costs]:
        """Measure the judge on the seed's calibration file once (None without a judge or a file)."""
        if self._calibration is None:
            if self.rubric is None or not self.seed.calibration:
                self._calibration = (None, {})
            else:
                meter = Meter((self._transfers, CALIBRATION_PHASE))
                self.progress(f"{self.seed.name}: judge calibration on {len(self.seed.calibration)} answers")
                result = calibrate(self.rubric, self.seed.calibration, meter)
                self.progress(f"{self.seed.name}: judge calibration {result.summary()}")
                self._calibration = (result, meter.snapshot())
        return self._calibration

    def judge_summary(self, graded: list[Model]) -> JudgeSummary | None:
        """The judge part of a result; raises CalibrationFailed when the judge is below its threshold."""
        if self.judge is None:
            return None
        self.phase = "judge-calibration"
        calibration, costs = self.calibrate()
        if calibration is not None and not calibration.passed:
            raise CalibrationFailed(calibration.failure_message(self.seed.name))
        return JudgeSummary(self.judge.model.model_id, self.judge.samples, calibration, costs,
                            family_warning(self.judge.model, graded))

    def transfer(self, source: Model, target: Model, optimizer: Model | None = None,
                 validators: tuple[Model, ...] = (), tolerance: float = DEFAULT_TOLERANCE,
                 stopping: sequential.Stopping | None = None) -> TransferResult:
        """Run the whole protocol for one (source, target) pair (after the judge's calibration).

        The baseline, each restart's optimization on the source (then its transferred score) and each
        restart's direct optimization (then its score) run at the same time unless the session was made
        with `concurrent_phases=False`; the result is the same either way (see `phases`). With
        `validators` (the source itself left out), each restart also optimizes against that validation
        set and scores the portable skill on the target.

        Under the group-sequential design (`config.design`, `evidence.sequential`) the held-out tasks are
        scored in waves: the chains above score the first wave; then each further wave scores the baseline,
        transferred and direct skills on its tasks at the same time, until a look stops the pair (`stopping`:
        the item's alpha and its gates' thresholds). The stop depends on the answers alone, so a replay stops
        where the recording did, whatever `-n`. Where a wave holds more calls than the target takes at once, the
        next wave starts as soon as no answer still due can stop the look between them (`waves_ahead`).
        """
        validators = portable_validators(source, validators)
        self._transfers += 1
        number = self._transfers
        judge = self.judge_summary([source, target])
        source_optimizer, direct_optimizer = optimizer or source, optimizer or target
        for restart in range(2, self.config.restarts + 1):
            self._restart_splits(restart)
        # each chain is named (its kind, its restart), so what it returned is found by name
        design, design_note = self.design(validators)
        parts = self._test_parts(design)
        chains: dict[tuple[str, int], Callable[[], object]] = {
            ("baseline", 0): lambda: self._baseline(target, (number, BASELINE_PHASE), parts[0])}
        restart_numbers = range(1, self.config.restarts + 1)

        def first_phase(restart: int) -> int:
            return BASELINE_PHASE + 1 + RESTART_PHASES * (restart - 1)

        def direct_chain(restart: int, waves: tuple[str, ...] = parts[:1]) -> Callable[[], object]:
            return lambda: self._direct(target, direct_optimizer, restart, (number, first_phase(restart) + 2), waves)

        for restart in restart_numbers:
            first = first_phase(restart)
            chains[("transfer", restart)] = lambda r=restart, f=first: self._learn_and_transfer(
                source, target, source_optimizer, r, (number, f), parts[0])
            if self.config.direct and not self.config.direct_on_demand:
                chains[("direct", restart)] = direct_chain(restart)
            if validators:
                chains[("portable", restart)] = lambda r=restart, f=first: self._learn_portable(
                    source, target, source_optimizer, validators, tolerance, r, (number, f + 4))
        stopping = stopping or sequential.Stopping()
        # every arm's evaluations, one per wave scored so far
        waves: dict[tuple[str, int], list[Evaluation]] = {key: [] for key in chains if key[0] in WAVE_ARMS}
        ahead = _Ahead(design, parts, waves, target, number, first_phase, stopping)
        if self._sends_ahead(ahead):
            self._watch_wave(ahead, 0, {key: self.seed.skill if key[0] == "baseline" else None for key in waves})
        self.phase = "baseline"
        self.progress(f"{self.seed.name}: baseline on {target.model_id}")  # first, whatever finishes first
        try:
            done = dict(zip(chains, self._run_chains(list(chains.values()))))
            self._close_watch(parts[0])
            for key in waves:  # the first wave of every arm
                value = done[key]
                if key[0] == "baseline":
                    waves[key].append(value)  # type: ignore[arg-type]
                elif key[0] == "transfer":
                    waves[key].append(value[1])  # type: ignore[index]
                else:
                    waves[key].extend(value[1])  # type: ignore[index]
            stop = self._looks(ahead, done)
        finally:
            self._end_waves_ahead()
        scored = parts[:stop.look]
        if self.config.direct and self.config.direct_on_demand and self.direct_needed(
                _joined(waves[("baseline", 0)]), [_joined(waves[("transfer", r)]) for r in restart_numbers], stop):
            on_demand = {("direct", r): direct_chain(r, scored) for r in restart_numbers}
            done.update(zip(on_demand, self._run_chains(list(on_demand.values()))))
            waves.update({key: list(done[key][1]) for key in on_demand})  # type: ignore[index]
        reference, regression = self._past_the_stop(design, parts, waves, done, target, number, first_phase,
                                                    stopping, stop)
        self.phase = ""
        settled = self._settle_costs(number)
        baseline = _joined([settled(e) for e in waves[("baseline", 0)]])
        runs: list[RestartRun] = []
        portable: list[PortableRun] = []
        for restart in restart_numbers:
            learned = done[("transfer", restart)][0]  # type: ignore[index]
            transferred = _joined([settled(e) for e in waves[("transfer", restart)]])
            direct_opt = done[("direct", restart)][0] if ("direct", restart) in done else None  # type: ignore[index]
            direct = _joined([settled(e) for e in waves[("direct", restart)]]) if direct_opt is not None else None
            runs.append(RestartRun(restart, restarts.split_seed(self.seed, restart), settled(learned),
                                   transferred, settled(direct_opt), direct))
            if validators:
                portable_opt, portable_eval = done[("portable", restart)]  # type: ignore[misc]
                portable.append(PortableRun(restart, settled(portable_opt), settled(portable_eval)))
        first = runs[0]
        result = TransferResult(
            seed=self.seed.name,
            source=source.model_id,
            target=target.model_id,
            optimizer=source_optimizer.model_id,
            config=self.config,
            baseline=baseline,
            learned=first.learned,
            transferred=first.transferred,
            direct_optimization=first.direct_optimization,
            direct=first.direct,
            split_seed=first.split_seed,
            more_runs=tuple(runs[1:]),
            judge=judge,
            portable=tuple(portable),
            direct_skipped=self.config.direct_on_demand and ("direct", 1) not in done,
            stop=stop,
            design_note=design_note,
            reference=_joined([settled(e) for e in reference]) if reference else None,
            regression=regression,
        )
        if result.unlearnable:
            labels = {t.id: tuple(c.label() for c in t.judge.checks) for t in self.splits["test"]}
            arms = [baseline, *(e for run in result.runs for e in (run.transferred, run.direct) if e is not None)]
            result = replace(result, never_passed=checks_never_passed(labels, arms))
        return replace(result, bill=ledger.bill(result.phase_costs(), self._paid))

    def unbilled(self) -> Costs:
        """What this seed's calls spent that no result has paid (an item that stopped before its result),
        charged now so no later result pays it again (`ledger.unbilled`)."""
        return ledger.unbilled(self.cache.answered(), self._paid)

    def _run_chains(self, chains: list[Callable[[], object]]) -> list[object]:
        """Run phase chains (concurrently unless the session says otherwise); a failure names its phase."""
        try:
            return phases.run_chains(chains, self.concurrent_phases, f"{self.seed.name}-phase")
        except phases.ChainFailed as failed:
            self.phase = failed.phase
            raise failed.error from failed.error.__cause__

    def direct_needed(self, baseline: Evaluation, transferred: list[Evaluation],
                      stop: sequential.Stop | None = None) -> bool:
        """With the direct reference on demand: whether it can change what a reader concludes. It cannot
        when the transferred skill already shows a gain on the target (the whole interval above 0, at the
        stopping look's level); otherwise it tells whether the target could learn at all (no gain to
        transfer, or a skill that does not travel)."""
        return not paired_gain(baseline, transferred, stop).low > 0

    def design(self, validators: tuple[Model, ...] = ()) -> tuple[sequential.Design, str]:
        """The design this seed's held-out tasks are scored by, and why it is the fixed one where the
        configuration asked for looks ("" when it is what was asked)."""
        design = sequential.DESIGNS[self.config.design]
        if not design.sequential:
            return design, ""
        if self.config.restarts > 1:
            return sequential.FIXED, "restarts: the interval over restarts has no looks"
        if validators:
            return sequential.FIXED, "a validation set: the portable skill is compared on every task"
        if is_clustered([t.cluster for t in self.splits["test"]]):
            return sequential.FIXED, "clustered tasks: a wave would cut a cluster"
        return design, ""

    def _test_parts(self, design: sequential.Design) -> tuple[str, ...]:
        """The split names of the design's waves over the held-out tasks ("test" itself for one look)."""
        tasks = self.splits["test"]
        looks = design.looks(len(tasks))
        if len(looks) == 1:
            return ("test",)
        names, start = [], 0
        for look in looks:
            name = f"test[{start}:{look.tasks}]"
            self.splits.setdefault(name, tasks[start:look.tasks])
            names.append(name)
            start = look.tasks
        return tuple(names)

    def _looks(self, ahead: "_Ahead", done: dict[tuple[str, int], object]) -> sequential.Stop:
        """Look after each wave (scoring the next wave of every arm at the same time) until the design stops."""
        design, parts, waves, target, stopping = ahead.design, ahead.parts, ahead.waves, ahead.target, ahead.stopping
        total = len(self.splits["test"])
        if not design.sequential:
            return sequential.fixed_stop(total)
        looks = design.looks(total)
        for index, look in enumerate(looks):
            if index > 0:
                self.phase = "held-out wave"
                sent = self._ahead.pop(parts[index], None)
                if sent is not None:  # started before the last look had every answer (`waves_ahead`)
                    results, place = sent.result()
                    phases.advance_path(place)
                else:
                    if index + 1 < len(looks) and self._sends_ahead(ahead):
                        self._watch_wave(ahead, index, {key: self._skill_of(key, done) for key in waves})
                    chain = [self._wave_chain(key, self._skill_of(key, done), target, parts[index], ahead.number,
                                              ahead.first_phase) for key in waves]
                    results = self._run_chains(chain)
                self._close_watch(parts[index])
                for key, evaluation in zip(waves, results):
                    waves[key].append(evaluation)  # type: ignore[arg-type]
            scores = {key: [t.hard for e in evaluations for t in e.tasks] for key, evaluations in waves.items()}
            seen = self._look(ahead, look, scores)
            if seen.action != sequential.CONTINUE:
                self.progress(f"{self.seed.name}: look {look.number} of {len(looks)} at {look.tasks} of {total} "
                              f"held-out tasks on {target.model_id}: {seen.action}, stop")
                return sequential.Stop(design.name, look.number, len(looks), look.tasks, total, look.share, seen.action)
            self.progress(f"{self.seed.name}: look {look.number} of {len(looks)} at {look.tasks} of {total} "
                          f"held-out tasks on {target.model_id}: go on")
        raise AssertionError("the last look always stops")  # pragma: no cover

    def _look(self, ahead: "_Ahead", look: sequential.Look,
              scores: dict[tuple[str, int], list[float]]) -> sequential.LookResult:
        """One look at the arms' per-task hard scores so far: the pair's decision (transferred against baseline),
        kept going while `min_score` or `min_efficiency` is open (`sequential.gates_look`)."""
        design, stopping, total = ahead.design, ahead.stopping, len(self.splits["test"])
        before, after, direct = scores[("baseline", 0)], scores[("transfer", 1)], scores.get(("direct", 1))
        up, down = moves([a - b for b, a in zip(before, after)])
        seen = sequential.judge_look(design, total, look, up, down, stopping.thresholds, stopping.alpha)
        if sequential.gates_look(design, total, look, after, before, direct, stopping, stopping.alpha) \
                == sequential.CONTINUE:
            return replace(seen, action=sequential.CONTINUE)  # min_score or min_efficiency is open: look on
        return seen

    def _sends_ahead(self, ahead: "_Ahead") -> bool:
        """Whether watching a wave can start the next one sooner (`waves_ahead`): phases run at the same time,
        another look follows, a wave holds more calls than the target takes at once, and its answers take time
        (live calls over HTTP; not a replay, not the in-process simulator)."""
        target = ahead.target
        if not (ahead.design.sequential and self.concurrent_phases and len(ahead.parts) > 1):
            return False
        env = current_environment()
        if not getattr(target, "records_http", False) or (env is not None and env.replay_only(target.model_id)):
            return False
        return len(ahead.waves) * len(self.splits[ahead.parts[0]]) * self.config.samples > self.concurrency(target)

    def _watch_wave(self, ahead: "_Ahead", index: int, skills: dict[tuple[str, int], str | None]) -> None:
        """Watch wave `index`'s answers; once the look after it is sure to go on, start wave `index + 1` (and
        watch that one too)."""
        total = len(self.splits["test"])
        look = ahead.design.looks(total)[index]
        part, following = ahead.parts[index], ahead.parts[index + 1]
        keys = list(ahead.waves)

        def continues(scores: dict[str, list[float]]) -> bool:
            if any(len(ahead.waves[key]) < index for key in keys):
                return False  # an earlier wave is still out (this one was sent ahead of its look)
            earlier = {key: [t.hard for e in ahead.waves[key][:index] for t in e.tasks] for key in keys}
            return self._look(ahead, look, {key: earlier[key] + scores[key[0]] for key in keys}).action \
                == sequential.CONTINUE

        context = contextvars.copy_context()

        def start(ready: dict[str, str]) -> None:
            skills_now = {key: ready[key[0]] for key in keys}
            if index + 2 < len(ahead.parts):
                self._watch_wave(ahead, index + 1, dict(skills_now))
            chains = [self._wave_chain(key, skills_now[key], ahead.target, following, ahead.number, ahead.first_phase)
                      for key in keys]
            sent: Future[tuple[list[object], phases.Place]] = Future()
            self._ahead[following] = sent

            def run() -> None:
                phases.advance_path(watch.place)
                try:
                    sent.set_result((self._run_chains(chains), phases.here()))
                except BaseException as exc:  # noqa: BLE001 - raised where the look takes the wave
                    sent.set_exception(exc)
            threading.Thread(target=context.run, args=(run,), name=f"{self.seed.name}-wave-ahead",
                             daemon=True).start()

        watch = WaveWatch(ahead.target.model_id, [t.id for t in self.splits[part]], self.config.samples,
                          {key[0]: skill for key, skill in skills.items()}, continues, start)
        self._watches[part] = watch

    def _close_watch(self, part: str) -> None:
        """Wave `part` is done: its watch starts nothing more (what it started is in `_ahead`)."""
        watch = self._watches.pop(part, None)
        if watch is not None:
            watch.close()

    def _end_waves_ahead(self) -> None:
        """Close the watches and wait for any wave still running that was sent ahead (a failed wave's neighbour,
        or one a look did not take): none of its calls outlives the transfer."""
        while self._watches or self._ahead:  # a start under way as its watch closed may leave one more of each
            for part in list(self._watches):
                self._close_watch(part)
            for part in list(self._ahead):
                try:
                    self._ahead.pop(part).result()
                except BaseException:  # noqa: BLE001 - the transfer's own error is the one raised
                    pass

    def _past_the_stop(self, design: sequential.Design, parts: tuple[str, ...],
                       waves: dict[tuple[str, int], list[Evaluation]], done: dict[tuple[str, int], object],
                       target: Model, number: int, first_phase: Callable[[int], int], stopping: sequential.Stopping,
                       stop: sequential.Stop) -> tuple[list[Evaluation], sequential.Look | None]:
        """The transferred skill alone past the pair's stop: wave by wave while the regression gate, whose reference
        lies outside the item (the committed snapshot or `--compare-to`'s), is open and its last look would likely
        decide it (its own looks, `sequential.reference_look`); then, when the run writes the reference
        (`Stopping.full_reference`), on every remaining task at once. Returns those evaluations and the look the
        regression gate stopped at when past the pair's (None otherwise). The pair's stop never depends on the
        reference, so the item's snapshot is the same whichever reference a run compares with."""
        total = len(self.splits["test"])
        if not design.sequential or not stop.early:
            return [], None
        looks = design.looks(total)
        scores = [(t.task_id, t.hard) for e in waves[("transfer", 1)] for t in e.tasks]
        evaluations: list[Evaluation] = []
        index = stop.look - 1
        while sequential.reference_look(design, total, looks[index], scores, stopping,
                                        stopping.alpha) == sequential.CONTINUE:
            index += 1
            self.phase = "held-out wave"
            self.progress(f"{self.seed.name}: the regression gate is open at {looks[index - 1].tasks} of {total} "
                          f"held-out tasks: the transferred skill alone on the next wave on {target.model_id}")
            chain = self._wave_chain(("transfer", 1), self._skill_of(("transfer", 1), done), target, parts[index],
                                     number, first_phase)
            evaluation = self._run_chains([chain])[0]
            evaluations.append(evaluation)  # type: ignore[arg-type]
            scores += [(t.task_id, t.hard) for t in evaluation.tasks]  # type: ignore[attr-defined]
        regression = looks[index] if index > stop.look - 1 else None
        rest = parts[index + 1:] if stopping.full_reference else ()
        if rest:
            tasks = sum(len(self.splits[part]) for part in rest)
            self.phase = "held-out reference"
            self.progress(f"{self.seed.name}: transferred skill on the {tasks} held-out task(s) past the stop on "
                          f"{target.model_id}: the regression gate's reference, not in the verdict")
            skill = self._skill_of(("transfer", 1), done)
            chains = [self._wave_chain(("transfer", 1), skill, target, part, number, first_phase) for part in rest]
            evaluations += self._run_chains(chains)  # type: ignore[arg-type]
        return evaluations, regression

    def _skill_of(self, key: tuple[str, int], done: dict[tuple[str, int], object]) -> str:
        """The skill an arm scores: the seed's for the baseline, else what its optimization learned."""
        return self.seed.skill if key[0] == "baseline" else done[key][0].learned_skill  # type: ignore[index]

    def _wave_chain(self, key: tuple[str, int], skill: str, target: Model, part: str,
                    number: int, first_phase: Callable[[int], int]) -> Callable[[], Evaluation]:
        """Score one arm's skill on one wave of held-out tasks (ranked as that arm's phase)."""
        kind, restart = key
        if kind == "baseline":
            return lambda: self._baseline(target, (number, BASELINE_PHASE), part)
        offset = 1 if kind == "transfer" else 3
        phase = "transferred" if kind == "transfer" else "direct"

        def score() -> Evaluation:
            phases.enter_phase(phase)
            return self.evaluate(target, skill, part, rank=(number, first_phase(restart) + offset))
        return score

    def _baseline(self, target: Model, rank: tuple[int, ...], part: str = "test") -> Evaluation:
        phases.enter_phase("baseline")
        return self.evaluate(target, self.seed.skill, part, rank=rank)

    def _learn_and_transfer(self, source: Model, target: Model, optimizer: Model, restart: int,
                            rank: tuple[int, int], part: str = "test") -> tuple[Optimization, Evaluation]:
        """Optimize on the source, then score the learned skill on the target (its first wave of tasks)."""
        phases.enter_phase("optimize-source")
        learned = self.optimize(source, optimizer, restart, rank)
        self._bind(part, "transfer", learned.learned_skill)
        phases.enter_phase("transferred")
        suffix = f" (restart {restart})" if restart > 1 else ""
        self.progress(f"{self.seed.name}: transferred skill on {target.model_id}{suffix}")
        return learned, self.evaluate(target, learned.learned_skill, part, rank=(rank[0], rank[1] + 1))

    def _learn_portable(self, source: Model, target: Model, optimizer: Model, validators: tuple[Model, ...],
                        tolerance: float, restart: int, rank: tuple[int, int]) -> tuple[Optimization, Evaluation]:
        """Optimize on the source against the validation set, then score that skill on the target."""
        phases.enter_phase("optimize-portable")
        learned = self.optimize(source, optimizer, restart, rank, validators, tolerance)
        phases.enter_phase("portable")
        suffix = f" (restart {restart})" if restart > 1 else ""
        self.progress(f"{self.seed.name}: portable skill on {target.model_id}{suffix}")
        return learned, self.evaluate(target, learned.learned_skill, "test", rank=(rank[0], rank[1] + 1))

    def _direct(self, target: Model, optimizer: Model, restart: int, rank: tuple[int, int],
                parts: tuple[str, ...] = ("test",)) -> tuple[Optimization, list[Evaluation]]:
        """The direct reference: optimize on the target, then score that skill on the target (on `parts`, the
        waves of held-out tasks it is scored on here, all at once)."""
        phases.enter_phase("optimize-direct")
        direct_opt = self.optimize(target, optimizer, restart, rank)
        phases.enter_phase("direct")
        skill, at = direct_opt.learned_skill, (rank[0], rank[1] + 1)
        for part in parts:
            self._bind(part, "direct", skill)
        return direct_opt, list(phases.fan_out(lambda part: self.evaluate(target, skill, part, rank=at), parts,
                                               len(parts), f"{self.seed.name}-direct"))

    def _bind(self, part: str, arm: str, skill: str) -> None:
        """`arm`'s skill is known: the watch of wave `part`, if any, can now try its look ahead."""
        watch = self._watches.get(part)
        if watch is not None:
            watch.bind(arm, skill)

    def _settle_costs(self, number: int) -> Callable[[T], T]:
        """Recount the costs of the phases transfer `number` computed, now that every phase ranked before
        them is done; returns the map from a phase's result to its settled copy (others unchanged)."""
        settled: dict[int, object] = {}
        for memo in (self._evaluations, self._optimizations):
            for key, (value, meter) in memo.items():
                if meter.rank[0] == number:
                    fresh = replace(value, costs=meter.snapshot())
                    memo.replace(key, (fresh, meter))
                    settled[id(value)] = fresh
        return lambda value: settled.get(id(value), value)  # type: ignore[return-value]


WAVE_ARMS = ("baseline", "transfer", "direct")  # the arms a look compares (restart 1 under the design)


@dataclass(frozen=True)
class _Ahead:
    """What one transfer's looks and its waves sent ahead share."""

    design: sequential.Design
    parts: tuple[str, ...]
    waves: dict[tuple[str, int], list[Evaluation]]
    target: Model
    number: int
    first_phase: Callable[[int], int]
    stopping: sequential.Stopping


def _joined(evaluations: list[Evaluation]) -> Evaluation:
    """One evaluation of the held-out tasks from its waves (their tasks in order, their costs merged)."""
    if len(evaluations) == 1:
        return evaluations[0]
    first = evaluations[0]
    costs: dict = {}
    for evaluation in evaluations:
        for key, tally in evaluation.costs.items():
            costs[key] = costs[key].merged(tally) if key in costs else tally
    return Evaluation(first.model_id, "test", tuple(t for e in evaluations for t in e.tasks), dict(sorted(costs.items())),
                      first.gate_weight, first.scoring)


def portable_validators(source: Model, validators: tuple[Model, ...]) -> tuple[Model, ...]:
    """The listed models a transfer validates on: each once, in order, the source left out (it is scored anyway)."""
    chosen: list[Model] = []
    for model in validators:
        if model.model_id != source.model_id and all(model.model_id != m.model_id for m in chosen):
            chosen.append(model)
    return tuple(chosen)


def _ranked_first(rank: tuple[int, ...]) -> Callable[[object], None]:
    """What a phase ranked `rank` does when it shares a phase (being computed, or computed by a phase that
    ran ahead of it): rank that phase's meter first of the two. A phase of an earlier transfer ranks
    first anyway; its costs are settled and stay."""
    return lambda meter: meter.rank_first(rank)  # type: ignore[attr-defined]


def seed_judge(seed: Seed) -> JudgeSetup | None:
    """The judge a seed's `[judge]` table names (1 sample and the default threshold unless it says otherwise)."""
    settings = seed.judge
    if settings.model is None:
        return None
    defaults = JudgeSetup(model=resolve_model(settings.model))
    return JudgeSetup(defaults.model, settings.samples or defaults.samples,
                      defaults.min_accuracy if settings.min_accuracy is None else settings.min_accuracy)


def _failures(evaluation: Evaluation) -> list[list[tuple[str, ...]]]:
    """Per task, per sample: the checks the sample failed."""
    return [[s.failed for s in t.samples] for t in evaluation.tasks]


def _pattern_origins(tasks: tuple[Task, ...], pattern: str) -> list[str]:
    """The `file:line` of each task whose checks use `pattern`."""
    return [t.origin for t in tasks if t.origin and any(c.arg == pattern for c in t.judge.checks)]


def _observations(tasks: tuple[Task, ...], evaluation: Evaluation) -> tuple[list[Observation], list[Observation]]:
    """Split a train evaluation into failing and passing observations (one per task and sample), with the
    judge's reasons for failed rubric checks (train only: val and test never reach the optimizer)."""
    failures, successes = [], []
    for task, result in zip(tasks, evaluation.tasks):
        for sample in result.samples:
            reasons = tuple(f'"{v.criterion}": {v.reason}' for v in sample.rubric if not v.passed)
            obs = Observation(task.id, task.text, sample.answer, task.judge, sample.failed, sample.tools_called, reasons)
            (successes if sample.hard >= 1.0 else failures).append(obs)
    return failures, successes


