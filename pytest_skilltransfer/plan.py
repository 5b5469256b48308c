"""What a protocol run can cost at most, before any model is called.

The bound follows the protocol (`protocol`): an evaluation of a split makes tasks x samples x
steps calls (steps = `MAX_TOOL_STEPS` when the seed has a corpus, else 1); an optimization makes
one validation evaluation, then per night a training evaluation, at most two optimizer calls (the
reflection and its one retry) and one validation evaluation of the candidate (later nights reuse the
validation score they start from). An item is the baseline and transferred evaluations on the
target, the optimization on the source and, unless `--no-direct`, the direct optimization and
evaluation on the target. Phases that items of a seed share (a target's baseline, an optimization)
are `Unit`s with the same key, so a total counts them once.

Tokens are estimated from characters at `CHARS_PER_TOKEN`: an agent call's input is the seed's skill,
the task and the tool definitions, plus for each further tool step the previous reply and a tool
result at its largest; its output is the call's `max_tokens`. An optimizer call's input is the
reflection prompt built from every training task as a failure with a reply of `max_tokens`; its
output is its `max_tokens`. The learned skill is taken as long as the seed's. Prompt caching: when the
Anthropic wire would mark a call's shared prefix (`anthropic_wire.caches_prefix`; never with
`prompt_cache` off), that prefix is priced at the cache-write rate on every call, reads never assumed.
So calls, tokens and dollars are upper bounds.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from .agent import ATTEMPT_MAX_TOKENS, MAX_TOOL_STEPS
from .models.anthropic_wire import caches_prefix
from .models.base import Usage
from .prices import cost_usd
from .protocol import ProtocolConfig, capped
from .reflect import Observation, build_reflect_request
from .seeds import Seed, Task
from .tools import MAX_RESULTS, SEARCH_TOOL

CHARS_PER_TOKEN = 4
TOOL_RESULT_CHARS = MAX_RESULTS * 320  # a search result at its largest: rows of slug, title and a 200-character snippet
REFLECT_CALLS = 2  # the reflection, and one retry when its edits do not parse


@dataclass(frozen=True)
class Share:
    """Calls and tokens one model makes in one role within a unit."""

    model_id: str
    role: str
    calls: int
    input_tokens: int
    output_tokens: int
    cache_write_tokens: int = 0  # of input_tokens: a marked prefix, priced as written on every call

    @property
    def usd(self) -> float | None:
        usage = Usage(self.input_tokens, self.output_tokens, cache_write_tokens=self.cache_write_tokens)
        return cost_usd(self.model_id, usage)


@dataclass(frozen=True)
class Unit:
    """One memoized protocol phase (shared by every item whose key matches)."""

    key: tuple[str, ...]
    phase: str
    shares: tuple[Share, ...]

    @property
    def calls(self) -> int:
        return sum(s.calls for s in self.shares)


def _tokens(chars: int) -> int:
    return -(-chars // CHARS_PER_TOKEN)


class Planner:
    """Bounds for one seed under one protocol configuration."""

    def __init__(self, seed: Seed, config: ProtocolConfig, prompt_cache: bool = True) -> None:
        self.seed, self.config, self.prompt_cache = seed, config, prompt_cache
        split_seed = seed.split.seed
        self.splits = {
            "train": capped(seed.train, config.limit_replay, split_seed),
            "val": capped(seed.val, config.limit_holdout, split_seed),
            "test": capped(seed.test, config.limit_holdout, split_seed),
        }
        self.tools = (SEARCH_TOOL,) if seed.corpus_dir else ()
        self.steps = MAX_TOOL_STEPS if self.tools else 1

    def _prefix_chars(self) -> int:
        return len(self.seed.skill) + len(json.dumps([asdict(t) for t in self.tools]))

    def _attempt_input(self, task: Task) -> int:
        first = self._prefix_chars() + len(task.text)
        growth = ATTEMPT_MAX_TOKENS * CHARS_PER_TOKEN + TOOL_RESULT_CHARS
        return sum(_tokens(first + step * growth) for step in range(self.steps))

    def _written(self, model_id: str, prefix_chars: int) -> int:
        """Tokens of a call's prefix priced as a cache write (0 when it is not marked)."""
        return _tokens(prefix_chars) if self.prompt_cache and caches_prefix(model_id, prefix_chars) else 0

    def evaluation(self, model_id: str, split: str) -> Share:
        """An evaluation of a split: every task, sample and tool step."""
        tasks = self.splits[split]
        samples = self.config.samples
        calls = len(tasks) * samples * self.steps
        return Share(model_id, "agent", calls, sum(self._attempt_input(t) for t in tasks) * samples,
                     calls * ATTEMPT_MAX_TOKENS, calls * self._written(model_id, self._prefix_chars()))

    def reflection(self, model_id: str) -> Share:
        """The optimizer calls of one night, every training attempt shown as a failure."""
        answer = "x" * (ATTEMPT_MAX_TOKENS * CHARS_PER_TOKEN)
        failures = [Observation(t.id, t.text, answer, t.judge, ("criterion",)) for t in self.splits["train"]]
        request = build_reflect_request(self.seed.skill, failures * self.config.samples, [], [],
                                        self.config.edit_budget, sample_id=1)
        chars = len(request.system) + sum(len(m.content) for m in request.messages)
        return Share(model_id, "optimizer", REFLECT_CALLS, REFLECT_CALLS * _tokens(chars),
                     REFLECT_CALLS * request.max_tokens, REFLECT_CALLS * self._written(model_id, len(request.system)))

    def optimization(self, agent: str, optimizer: str, phase: str) -> Unit:
        nights = self.config.nights
        val, train, reflect = self.evaluation(agent, "val"), self.evaluation(agent, "train"), self.reflection(optimizer)
        agent_share = Share(agent, "agent", val.calls + nights * (train.calls + val.calls),
                            val.input_tokens + nights * (train.input_tokens + val.input_tokens),
                            val.output_tokens + nights * (train.output_tokens + val.output_tokens),
                            val.cache_write_tokens + nights * (train.cache_write_tokens + val.cache_write_tokens))
        optimizer_share = Share(optimizer, "optimizer", nights * reflect.calls, nights * reflect.input_tokens,
                                nights * reflect.output_tokens, nights * reflect.cache_write_tokens)
        return Unit((self.seed.name, "optimize", agent, optimizer), phase, (agent_share, optimizer_share))

    def item(self, source: str, target: str, source_optimizer: str, target_optimizer: str) -> list[Unit]:
        """The units of one (source, target) item, in protocol order (model ids, not names)."""
        units = [
            Unit((self.seed.name, "baseline", target), "baseline", (self.evaluation(target, "test"),)),
            self.optimization(source, source_optimizer, "optimize-source"),
            Unit((self.seed.name, "transferred", source, source_optimizer, target), "transferred", (self.evaluation(target, "test"),)),
        ]
        if self.config.direct:
            direct = self.optimization(target, target_optimizer, "optimize-direct")
            units += [direct, Unit((self.seed.name, "direct", target, target_optimizer), "direct", (self.evaluation(target, "test"),))]
        return units


def unit_usd(unit: Unit) -> float | None:
    """Dollars at most for a unit; None when a model in it has no price."""
    total = 0.0
    for share in unit.shares:
        usd = share.usd
        if usd is None:
            return None
        total += usd
    return total
