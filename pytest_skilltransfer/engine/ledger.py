"""Every model call goes through one cache, and every protocol phase carries a meter.

A call whose answer is already known (same model, same request, same sample id) is answered from
the cache and costs nothing; failed calls raise and are never cached. Each phase (baseline,
optimization, transferred, ...) meters its own calls and tokens per model and role, so a result
can price the optimization on the source against the direct optimization on the target.

Every call a phase used, sent or answered from the cache, leaves its fingerprint (`evidence`: a
hash of the request and the whole reply) in the phase's tally, so a result can name the exact
answers it was computed from (a cassette whose answers were edited gives another digest).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import threading
from concurrent.futures import Future
from dataclasses import dataclass, field

from ..models.base import Model, Reply, Request, Usage
from . import phases
from .slots import ModelSlots


@dataclass
class Tally:
    """Calls, cache hits and tokens for one (model, role).

    `answers` holds every distinct answer the tally used (its request key -> its usage and how often
    it was used), so a bill can charge each answer once however many phases used it (`bill`);
    `reused` is the usage of the uses a bill did not charge (answers paid for once already)."""

    calls: int = 0
    cached: int = 0
    usage: Usage = field(default_factory=Usage)
    evidence: frozenset[str] = frozenset()  # fingerprints of the calls used (see `fingerprint`)
    answers: dict[str, tuple[Usage, int]] = field(default_factory=dict)
    reused: Usage = field(default_factory=Usage)

    def merged(self, other: "Tally") -> "Tally":
        answers = dict(self.answers)
        for key, (usage, uses) in other.answers.items():
            answers[key] = (usage, answers[key][1] + uses) if key in answers else (usage, uses)
        return Tally(self.calls + other.calls, self.cached + other.cached, self.usage + other.usage,
                     self.evidence | other.evidence, answers, self.reused + other.reused)


def bill(phases: dict[str, dict[tuple[str, str], Tally]], paid: set[str]) -> dict[str, dict[tuple[str, str], Tally]]:
    """The phases' tallies as a bill: each distinct answer is charged once, to the first phase (in the
    mapping's order) that used it, unless it is in `paid` (charged to an earlier result already);
    every other use is counted as reused (`cached`, and its tokens in `reused`). `paid` is updated.

    A phase whose requests equal another's (a transferred skill equal to the baseline's, a phase two
    items share) is computed once and served from memory; its answers are paid once and the bill says so.
    """
    billed: dict[str, dict[tuple[str, str], Tally]] = {}
    for phase, costs in phases.items():
        rows = billed[phase] = {}
        for key, tally in costs.items():
            if not tally.answers:  # a tally made without its answers (by hand): charged as it stands
                rows[key] = tally
                continue
            row = Tally(evidence=tally.evidence, answers=tally.answers)
            for answer, (usage, uses) in sorted(tally.answers.items()):
                reused = uses
                if answer not in paid:
                    paid.add(answer)
                    row.calls += 1
                    row.usage = row.usage + usage
                    reused -= 1
                row.cached += reused
                for _ in range(reused):
                    row.reused = row.reused + usage
            rows[key] = row
    return billed


def unbilled(answered: dict[str, tuple[str, str, Usage]], paid: set[str]) -> dict[tuple[str, str], Tally]:
    """The answers no bill has charged yet (`CallCache.answered` less `paid`), per (model id, role): what an
    item that stopped before its result (an error, a budget stop) spent. `paid` is updated, so a later
    result that uses them counts them as reused."""
    costs: dict[tuple[str, str], Tally] = {}
    for key, (model_id, role, usage) in sorted(answered.items()):
        if key in paid:
            continue
        paid.add(key)
        tally = costs.setdefault((model_id, role), Tally())
        tally.calls += 1
        tally.usage = tally.usage + usage
    return costs


def fingerprint(request_key: str, reply: Reply) -> str:
    """A call's identity as evidence: its request key and every field of its reply (as
    `dataclasses.asdict` gives them, built field by field)."""
    u = reply.usage
    plain = {
        "text": reply.text,
        "tool_calls": [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in reply.tool_calls],
        "usage": {"input_tokens": u.input_tokens, "output_tokens": u.output_tokens,
                  "cache_write_tokens": u.cache_write_tokens, "cache_read_tokens": u.cache_read_tokens,
                  "unreported": u.unreported},
        "model": reply.model, "stop_reason": reply.stop_reason, "refusal": reply.refusal,
    }
    blob = json.dumps({"request": request_key, "reply": plain}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def evidence_digest(fingerprints: frozenset[str] | set[str]) -> str:
    """One digest over a set of call fingerprints (order-free)."""
    return hashlib.sha256("\n".join(sorted(fingerprints)).encode("ascii")).hexdigest()


class Meter:
    """Tallies per (model id, role) for one phase; thread-safe.

    A meter has a `rank`, the place of its phase in the protocol's sequential order. When several
    phases use the same answer, the one ranked first is charged the call and the others count a
    cache hit, whichever of them really sent it: phases that run at the same time get the same
    tallies as phases run one after another (once every phase ranked before them is done).
    """

    _created = itertools.count()

    def __init__(self, rank: tuple[int, ...] = (), priority: int = 0) -> None:
        self.rank = (*rank, next(Meter._created))  # ties: the meter created first
        self.priority = priority  # lower first when calls wait for a model's slot
        self._uses: dict[tuple[str, str], dict[str, _Use]] = {}
        self._lock = threading.Lock()

    def record(self, model_id: str, role: str, key: str, reply: Reply, evidence: str, users: list["Meter"]) -> None:
        """Count one use of an answer; `users` is the cache's (shared) list of the meters that used it."""
        with self._lock:
            uses = self._uses.setdefault((model_id, role), {})
            use = uses.get(key)
            if use is None:
                uses[key] = _Use(1, reply.usage, evidence, users)
            else:
                use.count += 1

    def rank_first(self, rank: tuple[int, ...]) -> None:
        """Move the meter's phase earlier (a phase ranked before it shares its result)."""
        with self._lock:
            self.rank = min(self.rank, (*rank, self.rank[-1]))

    def snapshot(self) -> dict[tuple[str, str], Tally]:
        """The tallies, charging each call to the first-ranked phase that used it."""
        with self._lock:
            items = sorted((k, list(v.values())) for k, v in self._uses.items())
            keys_of = {k: list(v) for k, v in self._uses.items()}
        tallies = {}
        for key, uses in items:
            tally = Tally()
            usage = Usage()
            for use in uses:
                if min(use.users, key=_rank) is self:
                    tally.calls += 1
                    tally.cached += use.count - 1
                    usage = usage + use.usage
                else:
                    tally.cached += use.count
            tally.usage = usage
            tally.evidence = frozenset(use.evidence for use in uses)
            tally.answers = {answer: (use.usage, use.count) for answer, use in zip(keys_of[key], uses)}
            tallies[key] = tally
        return tallies


@dataclass
class _Use:
    """One answer a meter used: how often, its tokens, its fingerprint, and every meter that used it."""

    count: int
    usage: Usage
    evidence: str
    users: list[Meter]


def _rank(meter: Meter) -> tuple[int, ...]:
    return meter.rank


class CallCache:
    """Answers known requests from memory; shared by every phase of a seed's protocol runs.

    Thread-safe: when several threads ask the same request at once, one sends it and the others
    wait for its reply (counted as cache hits), so no request is ever sent twice. A sent call holds
    one of its model's slots (`slots`, by the meter's priority) while it is answered.
    """

    def __init__(self, slots: ModelSlots | None = None) -> None:
        self._replies: dict[str, tuple[Reply, phases.Place]] = {}  # key -> (reply, its place on the path clock)
        self._fingerprints: dict[str, str] = {}
        self._pending: dict[str, Future[tuple[Reply, phases.Place]]] = {}
        self._users: dict[str, list[Meter]] = {}
        self._answered: dict[str, tuple[str, str, Usage]] = {}  # key -> (model id, role, usage), as answered
        self._lock = threading.Lock()
        self.slots = slots

    def call(self, model: Model, request: Request, meter: Meter, role: str) -> Reply:
        """Answer `request` through `model` unless the answer is known; meter it either way."""
        key = request.key(model.model_id)
        with self._lock:
            known = self._replies.get(key)
            waiting = self._pending.get(key) if known is None else None
            if known is None and waiting is None:
                mine = self._pending[key] = Future()
        if known is not None or waiting is not None:
            if known is not None:
                reply = known[0]  # answered before: costs no time on the path
            else:
                reply, place = waiting.result()  # type: ignore[union-attr]
                phases.advance_path(place)  # in flight: this path waits for it
            self._record(meter, model.model_id, role, key, reply)
            return reply
        try:
            phases.check_halted()
            if self.slots is None:
                reply = model.complete(request)
            else:
                with self.slots.of(model).hold(meter.priority):
                    phases.check_halted()
                    reply = model.complete(request)
        except BaseException as exc:
            with self._lock:
                del self._pending[key]
            mine.set_exception(exc)
            raise
        place = phases.sent(model.model_id)
        phases.advance_path(place)
        with self._lock:
            self._replies[key] = (reply, place)
            self._answered[key] = (model.model_id, role, reply.usage)
            del self._pending[key]
        mine.set_result((reply, place))
        self._record(meter, model.model_id, role, key, reply)
        return reply

    def answered(self) -> dict[str, tuple[str, str, Usage]]:
        """Every answer this cache obtained (request key -> model id, the role that asked first, usage)."""
        with self._lock:
            return dict(self._answered)

    def _record(self, meter: Meter, model_id: str, role: str, key: str, reply: Reply) -> None:
        with self._lock:
            users = self._users.setdefault(key, [])
            if meter not in users:
                users.append(meter)
            evidence = self._fingerprints.get(key)
        if evidence is None:
            evidence = fingerprint(key, reply)
            with self._lock:
                self._fingerprints[key] = evidence
        meter.record(model_id, role, key, reply, evidence, users)
