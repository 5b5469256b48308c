"""What a protocol run can cost at most, and what it is expected to cost, before any model is called.

Calls follow the protocol (`protocol`) at its longest. An evaluation of a split makes, per task and
sample, `MAX_TOOL_STEPS` agent calls when the seed has a corpus (else 1) and, per rubric check of the
task, `judge samples` votes of at most two judge calls each (a verdict and its one retry). An
optimization (per restart, on that restart's own train/val split) scores val once, then per night
the training split, at most two optimizer calls (the reflection and its one retry) and the
candidate on val. An item is the target's baseline, and per restart the optimization on the source,
the transferred evaluation and, unless `--no-direct`, the direct optimization and evaluation on the
target; with a validation set of models (`--validate-on`), the portable optimization (the source's
optimization plus, per night, the current skill and the candidate on each listed model's val split)
and the portable skill's evaluation on the target; a seed with a calibration file has its judge measured once. A seed's fixed
context (`context.jsonl`) is part of every agent call's prompt, each turn with its `MESSAGE_OVERHEAD`. Phases that items share (a
target's baseline, an optimization, the calibration) are `Unit`s with the same key, counted once in
a total. Held-out splits are capped as the protocol caps them (`--limit-holdout` for val,
`--limit-test` for test, `--limit-replay` for train).

Token bounds: a prompt's tokens are at most its UTF-8 bytes (each token of the providers' byte-level
tokenizers covers at least one byte), plus `REQUEST_OVERHEAD` per call, `MESSAGE_OVERHEAD` per turn
and `TOOL_PROMPT` when tools or a reply schema are offered (the providers' own tool prompt; Anthropic
documents at most 346 tokens). Text a model wrote that is sent back (a reply in the tool loop, an
answer shown to the judge, rejected edits, learned rules) counts as its `max_tokens` plus 10% and,
for learned rules, twice that (continuation lines are indented), and a learned skill never exceeds its
body plus the learned block's cap (`edits.max_skill_bytes`). Replies count at their `max_tokens` (the
agent's is the seed's `max_tokens`, `ANSWER_MAX_TOKENS` unless seed.toml lowers or raises it).
Every prompt token is priced at the model's highest prompt rate (a cache write may cost more than an
uncached input token). So calls, tokens and dollars are upper bounds.

Expected figures assume what typically happens: a corpus seed's attempt takes `EXPECTED_STEPS` calls (a search
call of `EXPECTED_TOOL_CALL_TOKENS`, sent back with half a page of results, then the answer),
no reply needs a retry, replies are `EXPECTED_REPLY` of their `max_tokens` (the optimizer's: `EXPECTED_EDITS` of
its edit budget, each a rule of `EXPECTED_RULE_TOKENS` with `EDIT_OVERHEAD_TOKENS` of JSON and rationale), a prompt
has a token per `CHARS_PER_TOKEN` characters; a night keeps its candidate with probability
`EXPECTED_NIGHTS_ACCEPTED`, which adds `EXPECTED_EDITS` of the edit budget in rules of `EXPECTED_RULE_TOKENS` to
the skill (the simulator's runs of the project seeds add 0-135 tokens over two nights); after a night that kept an
edit the next runs with probability `EXPECTED_GO_ON_AFTER_KEPT` (the small validation split is then usually
perfect, which ends the optimization), after one that kept nothing it runs and pays only its reflection and its
candidate's validation (the skill is unchanged, so its validation and training scores are answered by the run's
cache; `night_counts`) — so with probability (1 - `EXPECTED_NIGHTS_ACCEPTED`) ** nights an optimization keeps
nothing, and the test of its skill on the target equals the baseline's and is answered from the run's
cache (`learned_test`) — a skill that kept an edit shows a gain on the target with probability
`EXPECTED_GAIN_SHOWN`, so the direct reference on demand runs with probability `direct_chance` — under the
group-sequential design a held-out evaluation scores `sequential.expected_share` of its tasks (its expected stop
over `sequential.EXPECTED_MIXTURE` at the item's share of the run family's alpha; the bounds count every look) —
and when the model caches prompts (an Anthropic prefix marked by the
wire, with `--prompt-cache` on; an OpenAI prefix of at least `OPENAI_CACHE_MIN_TOKENS`) the first call
of an evaluation writes its shared prefix and every later call reads it.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, replace

from ..engine.agent import MAX_TOOL_STEPS
from ..engine.judges import has_rubric
from ..engine.protocol import capped
from ..engine.reflect import (
    EXCERPT_CHARS,
    MAX_FAILURES_SHOWN,
    MAX_SUCCESSES_SHOWN,
    REFLECT_MAX_TOKENS,
    REFLECT_SYSTEM,
    RETRY_NOTE,
)
from ..engine.restarts import split_seed, train_val
from ..engine.results import ProtocolConfig
from ..engine.rubric import JUDGE_MAX_TOKENS, JUDGE_SYSTEM, REASON_CHARS, VERDICT_SCHEMA
from ..engine.rubric import RETRY_NOTE as JUDGE_RETRY_NOTE
from ..engine.seed_data import Seed, Task
from ..guards.edits import max_skill_bytes
from ..engine.tools import MAX_RESULTS, SEARCH_TOOL
from ..models.anthropic_wire import cache_min_tokens, caches_prefix
from ..models.base import Usage
from ..evidence.sequential import ALPHA, DESIGNS, expected_share
from ..evidence.stats import is_clustered
from ..pricing.prices import cost_usd, lane_of, rates_of

CHARS_PER_TOKEN = 4
TOOL_RESULT_CHARS = MAX_RESULTS * 320  # a search result at its largest: rows of slug, title and a 200-character snippet
REFLECT_CALLS = 2  # the reflection, and one retry when its edits do not parse
JUDGE_CALLS = 2  # a verdict, and one retry when it cannot be read
REQUEST_OVERHEAD = 64
MESSAGE_OVERHEAD = 8
TOOL_PROMPT = 512
EXPECTED_STEPS = 2
EXPECTED_TOOL_CALL_TOKENS = 40  # a search call (the tool's name, a short query): every step of an attempt but its answer
EXPECTED_REPLY = {"agent": 0.4, "optimizer": 0.5, "judge": 0.25}
EXPECTED_RULE_TOKENS = 50  # a learned rule: the optimizer is asked for short, general rules
EXPECTED_EDITS = 0.5  # of the edit budget: the edits a reflection proposes, and a kept night adds
EDIT_OVERHEAD_TOKENS = 30  # an edit's JSON keys, anchor and one-line rationale in the optimizer's reply
EXPECTED_NIGHTS_ACCEPTED = 0.5  # the strict val gate keeps about half the nights' edits
EXPECTED_GO_ON_AFTER_KEPT = 0.25  # a kept edit usually leaves the small val split perfect, which ends the optimization
EXPECTED_FIELDS = ("expected_calls", "expected_input", "expected_output", "expected_cache_write", "expected_cache_read")
EXPECTED_GAIN_SHOWN = 0.5  # of learned skills that kept an edit, the share whose transfer shows a gain on the target
OPENAI_CACHE_MIN_TOKENS = 1024


def _bytes(text: str) -> int:
    return len(text.encode("utf-8"))


def _chars_tokens(chars: int) -> int:
    return -(-chars // CHARS_PER_TOKEN)


def model_text(max_tokens: int) -> int:
    """Tokens at most of a model's reply when it is sent back in a prompt."""
    return math.ceil(max_tokens * 1.1) + 16


def expected_reply(role: str, max_tokens: int) -> int:
    return math.ceil(max_tokens * EXPECTED_REPLY[role])


def night_counts(nights: int) -> tuple[float, float]:
    """Expected (training scorings, nights run) of one optimization of `nights` nights at most: night 1 scores
    val, train and its candidate; a later night runs after a kept edit with probability `EXPECTED_GO_ON_AFTER_KEPT`
    (a new skill: its train is scored again, its val was its candidate's) and always after a night that kept
    nothing (the same skill: only the reflection and the candidate are new). Every night run scores a candidate."""
    accepted = EXPECTED_NIGHTS_ACCEPTED
    train = run = 1.0 if nights else 0.0
    last = run
    for _ in range(2, nights + 1):
        after_kept, after_rejected = last * accepted * EXPECTED_GO_ON_AFTER_KEPT, last * (1 - accepted)
        last = after_kept + after_rejected
        train, run = train + after_kept, run + last
    return train, run


def _runs(shares: tuple[Share, ...], bound: int, expected: float) -> list[Share]:
    """Shares of an evaluation run `bound` times at most and `expected` times expected."""
    return [replace(s.times(bound), **{f: round(getattr(s, f) * expected) for f in EXPECTED_FIELDS}) for s in shares]


def priced_lane(model_id: str, lane: str | None) -> str:
    """The lane a model's calls are priced in when the run is priced in `lane`: flex falls back to standard
    for a model flex is not offered for (its calls would run there); None: the lane the model runs in."""
    lane = lane or lane_of(model_id)
    if lane == "flex" and rates_of(model_id, "flex") is None:
        return "standard"
    return lane


def caches(model_id: str, prefix_tokens: int, prompt_cache: bool) -> bool:
    """Whether the model is expected to read a shared prefix of this size from its prompt cache."""
    if cache_min_tokens(model_id) is not None:
        return prompt_cache and caches_prefix(model_id, prefix_tokens * CHARS_PER_TOKEN)
    return model_id.startswith(("gpt-", "o1", "o3", "o4")) and prefix_tokens >= OPENAI_CACHE_MIN_TOKENS


@dataclass(frozen=True)
class Share:
    """Calls and tokens one model makes in one role within a unit: bounds, and expected figures."""

    model_id: str
    role: str
    calls: int
    input_tokens: int
    output_tokens: int
    expected_calls: int = 0
    expected_input: int = 0
    expected_output: int = 0
    expected_cache_write: int = 0  # of expected_input
    expected_cache_read: int = 0  # of expected_input

    def __add__(self, other: "Share") -> "Share":
        fields = ("calls", "input_tokens", "output_tokens", "expected_calls", "expected_input", "expected_output",
                  "expected_cache_write", "expected_cache_read")
        return Share(self.model_id, self.role, *(getattr(self, f) + getattr(other, f) for f in fields))

    def times(self, n: int) -> "Share":
        fields = ("calls", "input_tokens", "output_tokens", "expected_calls", "expected_input", "expected_output",
                  "expected_cache_write", "expected_cache_read")
        return Share(self.model_id, self.role, *(getattr(self, f) * n for f in fields))

    def expected_times(self, factor: float) -> "Share":
        """The same bounds, with the expected figures scaled by `factor` (a probability)."""
        return replace(self, **{f: round(getattr(self, f) * factor) for f in (
            "expected_calls", "expected_input", "expected_output", "expected_cache_write", "expected_cache_read")})

    def bound_usd(self, lane: str | None = None) -> float | None:
        """Dollars at most (every prompt token at the highest prompt rate)."""
        rates = rates_of(self.model_id, priced_lane(self.model_id, lane))
        if rates is None:
            return None
        return (self.input_tokens * rates.worst_input + self.output_tokens * rates.output) / 1_000_000

    def expected_usd(self, lane: str | None = None, cache_reads: bool = True) -> float | None:
        """Expected dollars, with or without the expected prompt-cache writes and reads."""
        usage = Usage(self.expected_input, self.expected_output,
                      cache_write_tokens=self.expected_cache_write if cache_reads else 0,
                      cache_read_tokens=self.expected_cache_read if cache_reads else 0)
        return cost_usd(self.model_id, usage, priced_lane(self.model_id, lane))

    @property
    def usd(self) -> float | None:
        return self.bound_usd()


@dataclass(frozen=True)
class Unit:
    """One memoized protocol phase (shared by every item whose key matches)."""

    key: tuple[str, ...]
    phase: str
    shares: tuple[Share, ...]
    on_demand: bool = False  # runs only when the run's outcome asks for it (the direct reference on demand)
    chance: float = 1.0  # the probability it runs: the expected figures are weighted by it, the bound is not
    scored: float = 1.0  # a held-out evaluation: the expected share of its tasks the design scores (in the
    #                      expected figures already; the bound counts every look)

    @property
    def calls(self) -> int:
        return sum(s.calls for s in self.shares)


@dataclass(frozen=True)
class Skill:
    """A skill's size in a prompt: tokens at most, expected tokens."""

    bound: int
    expected: int


def _merge(shares: list[Share]) -> tuple[Share, ...]:
    merged: dict[tuple[str, str], Share] = {}
    for share in shares:
        key = (share.model_id, share.role)
        merged[key] = merged[key] + share if key in merged else share
    return tuple(merged.values())


def _rubric_checks(task: Task) -> int:
    return sum(1 for c in task.judge.checks if c.op == "rubric") if has_rubric(task.judge) else 0


class Planner:
    """Bounds for one seed under one protocol configuration (see module docstring)."""

    def __init__(self, seed: Seed, config: ProtocolConfig, prompt_cache: bool = True,
                 judge: tuple[str, int] | None = None, alpha: float = ALPHA, full_reference: bool = False,
                 bounds_only: bool = False) -> None:
        """`judge`: the judge's (model id, samples per rubric check), when the seed has one; `alpha`: an item's
        share of the run family's error (0.05 / m), which the group-sequential design's looks spend;
        `full_reference`: the run writes snapshots, so the transferred skill is scored on every held-out task (the
        regression gate's reference) wherever the pair stops; `bounds_only`: the caller reads the bounds alone, so
        the design's expected stop is not computed (the held-out evaluations are expected at every task)."""
        self.seed, self.config, self.prompt_cache, self.judge = seed, config, prompt_cache, judge
        self.alpha, self.full_reference, self.bounds_only = alpha, full_reference, bounds_only
        self.test = capped(seed.test, config.limit_test, seed.split.seed)
        self.tools = (SEARCH_TOOL,) if seed.corpus_dir else ()
        self.steps = MAX_TOOL_STEPS if self.tools else 1
        self.expected_steps = min(EXPECTED_STEPS, self.steps)
        tools_json = json.dumps([asdict(t) for t in self.tools])
        self.tools_bound = _bytes(tools_json) + (TOOL_PROMPT if self.tools else 0)
        self.tools_expected = _chars_tokens(len(tools_json))
        self.seed_skill = Skill(_bytes(seed.skill), _chars_tokens(len(seed.skill)))
        # the seed's fixed context: its turns precede every task in every agent call
        self.context_bound = sum(_bytes(t.content) + MESSAGE_OVERHEAD for t in seed.context)
        self.context_expected = sum(_chars_tokens(len(t.content)) for t in seed.context)
        growth = 2 * model_text(REFLECT_MAX_TOKENS) + 64
        nights = config.nights
        self.kept_growth = math.ceil(EXPECTED_EDITS * config.edit_budget * EXPECTED_RULE_TOKENS)  # a night that kept
        bound = min(self.seed_skill.bound + nights * growth, max_skill_bytes(seed.skill))
        # a learned skill that kept an edit: the nights that kept one, given one did
        kept_nights = sum(EXPECTED_NIGHTS_ACCEPTED * r for r in self._nights_run()) / max(self.kept_chance(), 1e-9)
        self.learned_skill = Skill(bound, self.seed_skill.expected + math.ceil(kept_nights * self.kept_growth))

    def splits(self, restart: int) -> tuple[tuple[Task, ...], tuple[Task, ...]]:
        """Restart `restart`'s (train, val), capped as the protocol caps them."""
        train, val = train_val(self.seed, restart)
        seed = split_seed(self.seed, restart)
        return capped(train, self.config.limit_replay, seed), capped(val, self.config.limit_holdout, seed)

    # -- one evaluation -------------------------------------------------------------------------

    def _attempt(self, model_id: str, skill: Skill, task: Task) -> Share:
        """One attempt (one sample of one task): its agent calls."""
        first = (REQUEST_OVERHEAD + MESSAGE_OVERHEAD + skill.bound + self.tools_bound + self.context_bound
                 + _bytes(task.text))
        growth = model_text(self.seed.max_tokens) + _bytes("x" * TOOL_RESULT_CHARS) + 2 * MESSAGE_OVERHEAD
        bound_input = sum(first + step * growth for step in range(self.steps))
        prefix = skill.expected + self.tools_expected + self.context_expected
        first_expected = prefix + _chars_tokens(len(task.text))
        # every step but the last is a search call, sent back with half a page of results before the answer
        step_expected = EXPECTED_TOOL_CALL_TOKENS + _chars_tokens(TOOL_RESULT_CHARS // 2)
        expected_input = sum(first_expected + step * step_expected for step in range(self.expected_steps))
        expected_output = ((self.expected_steps - 1) * EXPECTED_TOOL_CALL_TOKENS
                           + expected_reply("agent", self.seed.max_tokens))
        return Share(model_id, "agent", self.steps, bound_input, self.steps * self.seed.max_tokens,
                     self.expected_steps, expected_input, expected_output)

    def _verdicts(self, task_text: str, answer: Skill, criterion: str, votes: int) -> Share:
        """`votes` judge votes on one criterion, each a verdict and its retry at most."""
        assert self.judge is not None
        schema = _bytes(json.dumps(VERDICT_SCHEMA.schema))
        first = (REQUEST_OVERHEAD + 2 * MESSAGE_OVERHEAD + TOOL_PROMPT + schema + _bytes(JUDGE_SYSTEM)
                 + _bytes(task_text) + answer.bound + _bytes(criterion) + 32)
        retry = first + model_text(JUDGE_MAX_TOKENS) + _bytes(JUDGE_RETRY_NOTE) + 2 * MESSAGE_OVERHEAD
        expected_input = (_chars_tokens(len(JUDGE_SYSTEM) + len(task_text) + len(criterion) + 200)
                          + _chars_tokens(len(json.dumps(VERDICT_SCHEMA.schema))) + answer.expected)
        one = Share(self.judge[0], "judge", JUDGE_CALLS, first + retry, JUDGE_CALLS * JUDGE_MAX_TOKENS,
                    1, expected_input, expected_reply("judge", JUDGE_MAX_TOKENS))
        return one.times(votes)

    def _nights_run(self) -> list[float]:
        """The chance each night runs (`night_counts`)."""
        return [night_counts(k)[1] - night_counts(k - 1)[1] for k in range(1, self.config.nights + 1)]

    def kept_chance(self) -> float:
        """The probability that an optimization keeps an edit on at least one of its nights."""
        return 1 - (1 - EXPECTED_NIGHTS_ACCEPTED) ** self.config.nights

    def direct_chance(self) -> float:
        """The probability that the direct reference on demand runs: the transfer shows no gain, because the
        optimization kept nothing or because what it kept shows none on the target."""
        return 1 - self.kept_chance() * EXPECTED_GAIN_SHOWN

    def learned_test(self, model_id: str) -> tuple[Share, ...]:
        """The test split on `model_id` with a learned skill: bounded in full, expected only when the
        optimization kept an edit (a skill equal to the seed's asks what the baseline asked)."""
        kept = self.kept_chance()
        return tuple(s.expected_times(kept) for s in self.evaluation(model_id, self.test, self.learned_skill))

    def evaluation(self, model_id: str, tasks: tuple[Task, ...], skill: Skill) -> tuple[Share, ...]:
        """An evaluation of a split: every task, sample and tool step, and the judge's votes."""
        samples = self.config.samples
        shares = [self._attempt(model_id, skill, task).times(samples) for task in tasks]
        if self.judge is not None:
            answer = Skill(self.steps * model_text(self.seed.max_tokens), expected_reply("agent", self.seed.max_tokens))
            for task in tasks:
                for check in (c for c in task.judge.checks if c.op == "rubric"):
                    shares.append(self._verdicts(task.text, answer, str(check.arg), samples * self.judge[1]))
        merged = _merge(shares)
        return tuple(self._with_cache_reads(s, skill) for s in merged)

    def _with_cache_reads(self, share: Share, skill: Skill) -> Share:
        """The expected cache writes and reads of an evaluation's calls (first writes, the others read)."""
        prefix = (skill.expected + self.tools_expected if share.role == "agent"  # the cached prefix: no context
                  else _chars_tokens(len(JUDGE_SYSTEM)) if share.role == "judge"
                  else _chars_tokens(len(REFLECT_SYSTEM)))
        if share.expected_calls == 0 or not caches(share.model_id, prefix, self.prompt_cache):
            return share
        return Share(share.model_id, share.role, share.calls, share.input_tokens, share.output_tokens,
                     share.expected_calls, share.expected_input, share.expected_output, prefix,
                     prefix * (share.expected_calls - 1))

    # -- phases ---------------------------------------------------------------------------------

    def reflection(self, model_id: str, train: tuple[Task, ...]) -> Share:
        """The optimizer calls of one night: the reflection and its retry, every attempt shown as failing."""
        shown = min(len(train) * self.config.samples, MAX_FAILURES_SHOWN + MAX_SUCCESSES_SHOWN)
        rubric = max((_rubric_checks(t) for t in train), default=0)
        excerpt = min(4 * EXCERPT_CHARS, self.steps * model_text(self.seed.max_tokens))  # model text, cut at 400 chars
        per_obs = max((_bytes(t.text) for t in train), default=0) + excerpt + 200 + MAX_TOOL_STEPS * 16
        per_obs += rubric * (4 * REASON_CHARS + 200)
        criteria = sum(len(t.judge.checks) for t in train) * 300 + 200
        rejected = max(0, self.config.nights - 1) * model_text(REFLECT_MAX_TOKENS)
        first = (REQUEST_OVERHEAD + 2 * MESSAGE_OVERHEAD + _bytes(REFLECT_SYSTEM) + self.learned_skill.bound
                 + shown * per_obs + criteria + rejected + 400)
        retry = first + model_text(REFLECT_MAX_TOKENS) + _bytes(RETRY_NOTE) + 2 * MESSAGE_OVERHEAD
        shown_expected = min(len(train) * self.config.samples, MAX_FAILURES_SHOWN)
        expected_input = (_chars_tokens(len(REFLECT_SYSTEM)) + self.seed_skill.expected
                          + shown_expected * _chars_tokens(EXCERPT_CHARS + 200 + max((len(t.text) for t in train),
                                                                                     default=0)))
        reply = min(expected_reply("optimizer", REFLECT_MAX_TOKENS),
                    math.ceil(EXPECTED_EDITS * self.config.edit_budget) * (EXPECTED_RULE_TOKENS + EDIT_OVERHEAD_TOKENS))
        share = Share(model_id, "optimizer", REFLECT_CALLS, first + retry, REFLECT_CALLS * REFLECT_MAX_TOKENS,
                      1, expected_input, reply)
        return self._with_cache_reads(share, self.seed_skill)

    def optimization(self, agent: str, optimizer: str, phase: str, restart: int = 1,
                     validators: tuple[str, ...] = ()) -> Unit:
        """An optimization; with `validators` (model ids), each night also scores the current skill and the
        candidate on every listed model's validation split (never a held-out task)."""
        nights = self.config.nights
        train, val = self.splits(restart)
        trained, run = night_counts(nights)
        bound = self.learned_skill.bound  # bounds: every night run, at the learned skill's largest
        current = Skill(bound, self.seed_skill.expected)  # expected: the skill a night starts from, as the seed's
        candidate = Skill(bound, self.seed_skill.expected + self.kept_growth)
        shares = _runs(self.evaluation(agent, val, current), 1 + nights, 1)
        shares += _runs(self.evaluation(agent, val, candidate), 0, run)
        shares += _runs(self.evaluation(agent, train, current), nights, trained)
        shares += _runs((self.reflection(optimizer, train),), nights, run)
        for model_id in validators:
            shares += _runs(self.evaluation(model_id, val, current), nights, 1)
            shares += _runs(self.evaluation(model_id, val, candidate), nights, run)
        listed = ("validate-on", *validators) if validators else ()
        return Unit((self.seed.name, "optimize", agent, optimizer, str(restart), *listed), phase, _merge(shares))

    def calibration(self) -> Unit | None:
        """The judge's calibration, once per seed (None without a judge or a calibration file)."""
        if self.judge is None or not self.seed.calibration:
            return None
        shares = [self._verdicts(item.task, Skill(_bytes(item.answer), _chars_tokens(len(item.answer))),
                                 item.criterion, self.judge[1]) for item in self.seed.calibration]
        return Unit((self.seed.name, "calibration", self.judge[0]), "judge-calibration", _merge(shares))

    def held_out_share(self, validators: tuple[str, ...] = ()) -> float:
        """The expected share of the held-out tasks an item's evaluations score: under the group-sequential design
        its expected stop over `sequential.EXPECTED_MIXTURE` at the item's alpha (an assumption about the items,
        stated there); 1 for the fixed design and where the design falls back to it (restarts, a validation set,
        clustered tasks), as `SeedSession.design` decides."""
        if (self.bounds_only or self.config.restarts > 1 or validators or not DESIGNS[self.config.design].sequential
                or is_clustered([t.cluster for t in self.test])):
            return 1.0
        return expected_share(self.config.design, len(self.test), self.alpha)

    def item(self, source: str, target: str, source_optimizer: str, target_optimizer: str,
             validators: tuple[str, ...] = ()) -> list[Unit]:
        """The units of one (source, target) item, in protocol order (model ids, not names); with `validators`
        (the validation set, `--validate-on`), each restart's portable optimization and its test on the target.
        The held-out evaluations (baseline, transferred, direct) are expected at `held_out_share` of their tasks
        and bounded at all of them."""
        validators = tuple(dict.fromkeys(v for v in validators if v != source))
        name = self.seed.name
        share = self.held_out_share(validators)

        def scored(shares: tuple[Share, ...], share: float = share) -> tuple[Share, ...]:
            return tuple(s.expected_times(share) for s in shares) if share < 1 else shares

        reference = 1.0 if self.full_reference else share  # the transferred skill on every task when writing it

        calibration = self.calibration()
        units = [calibration] if calibration is not None else []
        units.append(Unit((name, "baseline", target), "baseline",
                          scored(self.evaluation(target, self.test, self.seed_skill)), scored=share))
        for restart in range(1, self.config.restarts + 1):
            units += [
                self.optimization(source, source_optimizer, "optimize-source", restart),
                Unit((name, "transferred", source, source_optimizer, target, str(restart)), "transferred",
                     scored(self.learned_test(target), reference), scored=reference),
            ]
            if self.config.direct:
                optimized = self.optimization(target, target_optimizer, "optimize-direct", restart)
                on_demand = self.config.direct_on_demand
                chance = self.direct_chance() if on_demand else 1.0
                units += [replace(optimized, on_demand=on_demand, chance=chance),
                          Unit((name, "direct", target, target_optimizer, str(restart)), "direct",
                               scored(self.learned_test(target)), on_demand, chance, scored=share)]
            if validators:
                units += [self.optimization(source, source_optimizer, "optimize-portable", restart, validators),
                          Unit((name, "portable", source, source_optimizer, target, str(restart), *validators),
                               "portable", self.learned_test(target))]
        return units


    def aa_check(self, source: str, source_optimizer: str, target: str, sampled: bool = False) -> Unit:
        """A hand-written test's A/A check (`transfer_aa`): the transferred skill scored on the target once more,
        with new sample ids (its first scoring is the item's own `transferred` unit); `sampled` (at a temperature):
        scored twice, neither scoring shared with the item's."""
        scoring = self.evaluation(target, self.test, self.learned_skill)
        return Unit((self.seed.name, "aa-check", source, source_optimizer, target, *(["sampled"] if sampled else [])),
                    "aa-check", _merge([*scoring, *scoring]) if sampled else scoring)
