"""Running a seed's independent phases at the same time, with the result of running them in order.

The protocol's phases form chains (baseline; optimize on the source, then score the learned skill
on the target; optimize on the target, then score it) that depend on nothing but the seed. `run_chains`
runs them together, each in its own thread, and `fan_out` runs an evaluation's attempts together.

What stays as in a sequential run:
- results: each chain computes the same values, and `Memo` computes a shared phase once;
- the ledger: meters charge a shared call to the phase ranked first (`ledger.Meter`);
- errors: when a chain fails, the chains after it (in sequential order) stop before their next call
  (`Halted`), the chains before it run on, and the first chain's error in order is raised, as the
  sequential run would have raised it.

Every thread of a chain carries the chain and a *path clock* (contextvars): the clock counts the
calls sent on the longest dependency path so far, so a run can state its critical path in calls
(`calls_on_path`), independent of latency, caps and load. A second clock counts the same path in
*rounds* of the per-model cap (`rounds_on_path`): an evaluation whose jobs send J calls to a model
that takes at most W at a time lasts at least ceil(J / W) calls' latencies, however it is scheduled,
so with a fixed latency `rounds_on_path() x latency` is a lower bound on a run's wall at that cap.
"""

from __future__ import annotations

import contextvars
import math
import threading
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Generic, NamedTuple, TypeVar

T = TypeVar("T")
R = TypeVar("R")


class Halted(Exception):
    """A chain stopped because a chain before it failed (never raised to the caller of `run_chains`)."""


class _Chain:
    """One chain of a `run_chains` call: its place, the phase it is in, and whether it must stop."""

    def __init__(self, index: int, group: "_Group") -> None:
        self.index = index
        self.group = group
        self.phase = ""

    def halted(self) -> bool:
        return self.group.failed_at < self.index


class _Group:
    def __init__(self) -> None:
        self.failed_at = 1 << 30
        self.lock = threading.Lock()

    def failed(self, index: int) -> None:
        with self.lock:
            self.failed_at = min(self.failed_at, index)


class Place(NamedTuple):
    """A point on the path clock: calls on the longest path to it, and the same path in rounds of the cap."""

    calls: int = 0
    rounds: int = 0


_CHAIN: contextvars.ContextVar[_Chain | None] = contextvars.ContextVar("skilltransfer_chain", default=None)
_PATH: contextvars.ContextVar[Place] = contextvars.ContextVar("skilltransfer_calls_on_path", default=Place())
_SENT: contextvars.ContextVar[set[str] | None] = contextvars.ContextVar("skilltransfer_sent", default=None)


def check_halted() -> None:
    """Raise `Halted` when this thread's chain must stop (called before every call is sent)."""
    chain = _CHAIN.get()
    if chain is not None and chain.halted():
        raise Halted(f"stopped: an earlier phase failed ({chain.phase or 'chain'} {chain.index + 1})")


def enter_phase(name: str) -> None:
    """Name the phase this thread's chain runs now (for error messages)."""
    chain = _CHAIN.get()
    if chain is not None:
        chain.phase = name


def here() -> Place:
    """The place on the path clock this thread's work has reached."""
    return _PATH.get()


def calls_on_path() -> int:
    """Calls sent on the longest dependency path leading here."""
    return _PATH.get().calls


def rounds_on_path() -> int:
    """The longest dependency path leading here in rounds of the per-model cap (see the module docstring)."""
    return _PATH.get().rounds


_furthest = [0]  # the furthest answer on this process's path clock (its items run one after another)


def sent(model_id: str) -> Place:
    """A call to `model_id` was sent from here: the place of its answer (one further on both clocks)."""
    here = _PATH.get()
    models = _SENT.get()
    if models is not None:
        models.add(model_id)
    if here.calls + 1 > _furthest[0]:
        _furthest[0] = here.calls + 1
    return Place(here.calls + 1, here.rounds + 1)


def furthest_on_path() -> int:
    """The round trips this process's critical path has covered so far: the furthest answer on the path clock
    (its items run one after another, so the clock runs on from one item to the next)."""
    return _furthest[0]


def advance_path(to: Place) -> None:
    """The path now includes an answer at place `to` (each clock keeps the longer path)."""
    here = _PATH.get()
    if to.calls > here.calls or to.rounds > here.rounds:
        _PATH.set(Place(max(here.calls, to.calls), max(here.rounds, to.rounds)))


def _latest(places: Sequence[Place]) -> Place:
    return Place(max((p.calls for p in places), default=0), max((p.rounds for p in places), default=0))


class ChainFailed(Exception):
    """The first failing chain's error and the phase it failed in (`__cause__` is the error)."""

    def __init__(self, phase: str, error: BaseException) -> None:
        super().__init__(phase)
        self.phase = phase
        self.error = error


def run_chains(chains: Sequence[Callable[[], T]], concurrent: bool, name: str = "phase") -> list[T]:
    """Run the chains (together, or one after another) and return their results in order.

    Raises `ChainFailed` for the first chain (in order) that failed; each chain names its phase with
    `enter_phase`.
    """
    group = _Group()
    states = [_Chain(i, group) for i in range(len(chains))]
    outcomes: list[tuple[bool, object]] = [(False, None)] * len(chains)
    contexts = [contextvars.copy_context() for _ in chains]

    def run(i: int) -> None:
        _CHAIN.set(states[i])
        try:
            outcomes[i] = (True, chains[i]())
        except BaseException as exc:  # noqa: BLE001 - handed to the caller below
            if not isinstance(exc, Halted):
                group.failed(i)
            outcomes[i] = (False, exc)

    if concurrent and len(chains) > 1:
        threads = [threading.Thread(target=contexts[i].run, args=(run, i), name=f"{name}-{i + 1}", daemon=True)
                   for i in range(len(chains))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    else:
        for i in range(len(chains)):
            if group.failed_at < i:
                break
            contexts[i].run(run, i)
    advance_path(_latest([ctx.get(_PATH, Place()) for ctx in contexts]))
    for i, (ok, value) in enumerate(outcomes):
        if not ok and value is not None and not isinstance(value, Halted):
            raise ChainFailed(states[i].phase, value) from value  # type: ignore[arg-type]
    if any(not ok for ok, _ in outcomes):  # only halted chains: cannot happen without a failure
        raise RuntimeError("a phase stopped without an error")
    return [value for _, value in outcomes]  # type: ignore[misc]


def fan_out(fn: Callable[[T], R], jobs: Sequence[T], workers: int, name: str, model_id: str | None = None) -> list[R]:
    """`fn` over the jobs, `workers` at a time, results in the jobs' order; each job runs in a copy of
    the caller's context (its chain and path clock), and the caller's clock ends at the longest job's.

    With `model_id` (the model the jobs call, `workers` its cap), the round clock also counts the
    rounds that model needs: ceil(jobs that sent it a call / workers) after the start."""
    if not jobs:
        return []
    start = _PATH.get()
    contexts = [contextvars.copy_context() for _ in jobs]  # the jobs are independent, even one at a time
    models: list[set[str]] = [set() for _ in jobs]
    for ctx, box in zip(contexts, models):
        ctx.run(_SENT.set, box)
    if workers <= 1 or len(jobs) <= 1:
        results = [ctx.run(fn, job) for ctx, job in zip(contexts, jobs)]
    else:
        with ThreadPoolExecutor(max_workers=min(workers, len(jobs)), thread_name_prefix=name) as pool:
            results = list(pool.map(lambda pair: pair[0].run(fn, pair[1]), zip(contexts, jobs)))
    end = _latest([ctx.get(_PATH, Place()) for ctx in contexts])
    if model_id is not None:
        senders = sum(model_id in box for box in models)
        end = Place(end.calls, max(end.rounds, start.rounds + math.ceil(senders / max(workers, 1))))
    advance_path(end)
    return results


K = TypeVar("K", bound=Hashable)


class Memo(Generic[K, T]):
    """Values computed once per key, also when several threads ask at the same time; a failed
    computation is forgotten (the next asker computes again)."""

    def __init__(self) -> None:
        self._done: dict[K, T] = {}
        self._tags: dict[K, object] = {}
        self._pending: dict[K, tuple[Future[tuple[T, Place]], object]] = {}
        self._lock = threading.Lock()

    def get(self, key: K, compute: Callable[[], T], tag: object = None,
            joined: Callable[[object], None] | None = None) -> T:
        """The key's value, computed here (by `compute`, known by `tag`) unless known or being computed;
        then `joined(tag of that computation)` is called (and this thread waits for it while it runs)."""
        with self._lock:
            if key in self._done:
                if joined is not None:
                    joined(self._tags[key])
                return self._done[key]
            waiting = self._pending.get(key)
            if waiting is None:
                mine: Future[tuple[T, Place]] = Future()
                self._pending[key] = (mine, tag)
            elif joined is not None:
                joined(waiting[1])
        if waiting is not None:
            value, at = waiting[0].result()
            advance_path(at)
            return value
        try:
            value = compute()
        except BaseException as exc:
            with self._lock:
                del self._pending[key]
            mine.set_exception(exc)
            raise
        with self._lock:
            self._done[key] = value
            self._tags[key] = tag
            del self._pending[key]
        mine.set_result((value, _PATH.get()))
        return value

    def replace(self, key: K, value: T) -> None:
        """Swap a computed value for an equal one (its costs settled)."""
        with self._lock:
            self._done[key] = value

    def items(self) -> list[tuple[K, T]]:
        with self._lock:
            return list(self._done.items())
