"""The batch lane: calls that miss the cassette are parked and sent together as one provider batch.

A recording call reaches the lane only when vcrpy found no recording for it (the lane is the
"network" of a batch client's transport). The call's thread parks its request and waits. A
collector thread flushes every parked request of a model as one batch once no new request has been
parked for `gather_s` (all calls of a protocol step park within milliseconds of each other), polls
the batches every `poll_s`, and hands each result back to its waiting thread, which returns it to
the SDK as the HTTP answer a synchronous call would have had: vcrpy records it like any other.

Per request: a complete answer is delivered (and recorded); a refusal of the request itself is
delivered as the error status the synchronous call would have got (never recorded); an item that
errored on the provider's side, was canceled or expired is sent again in the next batch, or
synchronously with fallback `sync`, at most `max_attempts` times.

Pay once: before each create the manifest records the submission (`manifest`); a request whose
custom id is in a known batch re-adopts that batch; an uncertain submission (no batch id: the
process died during create) is looked up at the provider first and abandoned only if absent.

Under a budget (`--max-cost`) a step is reserved as a whole when it is flushed (`spend_gate.reserve_step`:
every request's worst case at batch prices, all or none): a step that does not fit yet waits, parked, for
the batches in flight to settle, and one that cannot fit at all fails whole, naming the budget; it is
never trickled out as single requests (each batch is a provider round trip of minutes to hours). A
request already in a batch (a resumed run adopts it) sends nothing; it reserves on its own, so its
answer is charged when it arrives.

A stopped run (`halt`: SIGINT or SIGTERM) ends the wait at once: the waiting calls fail with `RunStopped`,
nothing more is submitted or polled, and the batches stay at the provider and in the manifest for the
next run to collect (or, with `pending="cancel"`, to cancel), as after kill -9.

`max_wait_s` bounds the wait: past it every waiting call fails with `BatchWaitExceeded`, the
batches stay at the provider and in the manifest, and the same command later collects them.

A look-up or status check that keeps failing is tried again with a doubling pause, at most
`max_checks` times; then the calls waiting on it fail with an error naming the manifest line, what
may be at the provider and the `batches` command that resolves it (they are never sent again blindly).

Collect only (`submit=False`, every recording run without `--transfer-batch`): no batch is created;
a request that sits in a batch of the manifest is answered from that batch (finished ones are
collected, in-flight ones waited for, or with `pending="cancel"` canceled at the provider first),
and every other request, or one its batch did not answer, is sent synchronously (`SendSynchronously`).
"""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..base import ModelCallError
from ..halt import RunStopped, halted
from .apis import BatchApi, Item, Outcome
from .manifest import Manifest, Submission

Progress = Callable[[str], None]
Cost = Callable[[str, str, bytes], float]  # (provider, model id, answer body) -> dollars at batch prices


class BatchLaneError(ModelCallError):
    """A parked call could not be answered through the batch lane."""


class BatchWaitExceeded(BatchLaneError):
    """The configured wait ceiling passed with batches still at the provider."""


class SendSynchronously(Exception):
    """Fallback `sync`: this request is to be sent by the ordinary synchronous call."""


@dataclass(frozen=True)
class BatchSettings:
    """How the lane batches, waits and retries."""

    fallback: str = "batch"  # what a failed item does: "batch" (the next batch) or "sync"
    gather_s: float = 2.0  # quiet period after the last parked request before a flush
    poll_s: float = 30.0  # between two status checks of one batch
    max_wait_s: float = 26 * 3600.0  # the run stops cleanly after waiting this long (batches expire at 24 h)
    max_attempts: int = 3  # submissions per request at most
    every_model: bool = True  # False: only the models whose own lane is batch (`lane = "batch"`) use it
    submit: bool = True  # False: collect only (see module docstring)
    pending: str = "wait"  # batches of earlier runs still in flight: "wait" for them or "cancel" them
    max_checks: int = 6  # failed look-ups or status checks in a row before their calls fail


@dataclass(frozen=True)
class Group:
    """Requests that can share a batch: one provider endpoint, model and key."""

    provider: str
    base_url: str
    model_id: str
    api_key: str = field(repr=False)

    @property
    def name(self) -> str:
        """The manifest's name for the group (never the key)."""
        return f"{self.provider}:{self.model_id}@{self.base_url}"


@dataclass(eq=False)
class Parked:
    """One waiting call."""

    group: Group
    item: Item
    raw: bytes = b""  # the request body as the SDK built it (its worst case is reserved from it)
    reservation: Any = None  # its budget reservation, once its step was reserved (`spend_gate.Reservation`)
    done: threading.Event = field(default_factory=threading.Event)
    outcome: Outcome | None = None
    error: BaseException | None = None
    failures: int = 0
    reasons: list[str] = field(default_factory=list)
    collect_only: bool = False  # its model does not go to the batch lane: only collected from a batch


@dataclass
class InFlight:
    """A batch being waited for."""

    batch_id: str
    group: Group
    submission: str
    waiting: dict[str, list[Parked]] = field(default_factory=dict)
    next_poll: float = 0.0
    since: float = field(default_factory=time.monotonic)  # when this process started waiting for it
    state: str = "submitted"
    done: int = 0
    total: int = 0
    adopted: bool = False  # made by an earlier run (`pending="cancel"` cancels only these)
    cancel_sent: bool = False


class BatchLane:
    """One process's collector (see module docstring)."""

    def __init__(self, settings: BatchSettings, folder: Path, api_for: Callable[[Group], BatchApi],
                 progress: Progress | None = None, cost: Cost | None = None) -> None:
        self.settings = settings
        self.manifest = Manifest.open(folder)
        self.api_for = api_for
        self.progress = progress or (lambda _line: None)
        self.cost = cost
        self._cond = threading.Condition()
        self._queue: dict[Group, dict[str, list[Parked]]] = {}
        self._uncertain: dict[str, tuple[Group, Submission, dict[str, list[Parked]]]] = {}
        self._in_flight: dict[str, InFlight] = {}
        self._results: dict[str, dict[str, Outcome]] = {}  # finished batches' outcomes, by batch id
        self._next_lookup: dict[str, float] = {}
        self._failed_checks: dict[str, int] = {}  # submission or batch id -> failed look-ups / status checks in a row
        self._last_park = 0.0
        self._started: float | None = None
        self._stopped: str | None = None
        self._thread: threading.Thread | None = None
        self._closing = False
        self.round_trips = 0  # flushes: steps of the run that waited for a batch answer
        self.batches_created = 0
        self.batches_adopted = 0
        self.batches_finished = 0
        self.requests_total = 0
        self.requests_done = 0  # answered (a stored answer, or the provider's refusal of the request)
        self.requests_failed = 0  # given up, or stopped by the wait ceiling
        self.dollars = 0.0
        self._shown: tuple[Any, ...] = ()
        self._turnarounds: list[float] = []  # seconds from create (or adoption) to results, per finished batch

    # -- the calling threads -------------------------------------------------------------------

    def collects_only(self, collect_only: bool) -> bool:
        """Whether a request is only collected from earlier batches (its model's lane is another, or
        this lane does not submit), never put in a new one."""
        return collect_only or not self.settings.submit

    def may_take(self, group: Group, collect_only: bool) -> bool:
        """False when a request of `group` is certain to be sent synchronously (it is only collected and
        no live batch of its group exists), so a caller need not build it for the lane."""
        return not self.collects_only(collect_only) or self.manifest.live(group.name)

    def answer(self, group: Group, item: Item, raw: bytes = b"", collect_only: bool = False) -> tuple[Outcome, Any]:
        """Park one request until its outcome is known: (outcome, its budget reservation or None, for the
        caller to settle); raises BatchLaneError or SendSynchronously (its reservation released).
        `collect_only`: the request's model does not go to the batch lane (its own lane is another, or
        this lane only collects): it is collected from a batch of an earlier run that holds it, never
        put in a new one."""
        collect_only = self.collects_only(collect_only)
        known = self.manifest.known(group.name, item.custom_id)
        if collect_only and known is None:
            raise SendSynchronously()  # not in any batch, so an ordinary call
        parked = Parked(group, item, raw, collect_only=collect_only)
        if known is not None:
            from ..spend_gate import reserve_request

            parked.reservation = reserve_request(raw, "batch", item.path)  # already in a batch: charged when it answers
        with self._cond:
            if halted() is not None:
                parked.error = RunStopped(str(halted()))
                parked.done.set()
            elif self._stopped:
                parked.error = BatchWaitExceeded(self._stopped)
                parked.done.set()
            else:
                self._start_locked()
                self.requests_total += 1
                self._place_locked(parked)
                self._last_park = time.monotonic()
                self._cond.notify_all()
        parked.done.wait()
        if parked.error is not None:
            if parked.reservation is not None:
                parked.reservation.release()  # nothing of it was charged (or it is sent another way)
            raise parked.error
        assert parked.outcome is not None
        return parked.outcome, parked.reservation

    def _place_locked(self, parked: Parked) -> None:
        """Queue a request for the next batch, or attach it to the batch that already holds it."""
        cid, group = parked.item.custom_id, parked.group
        sub = self.manifest.known(group.name, cid) if parked.failures == 0 else None
        if sub is not None and sub.batch_id is not None:
            finished = self._results.get(sub.batch_id)
            if finished is not None and cid in finished:
                self._settle_locked(parked, finished[cid], sub.batch_id)
                return
            if finished is None:
                self._adopt_locked(sub.batch_id, group, sub.submission).waiting.setdefault(cid, []).append(parked)
                return
        elif sub is not None:
            entry = self._uncertain.setdefault(sub.submission, (group, sub, {}))
            entry[2].setdefault(cid, []).append(parked)
            return
        self._requeue_locked(parked)

    def _adopt_locked(self, batch_id: str, group: Group, submission: str) -> InFlight:
        """The in-flight record of a batch an earlier run (or an interrupted create) made."""
        flight = self._in_flight.get(batch_id)
        if flight is None:
            flight = self._in_flight[batch_id] = InFlight(batch_id, group, submission, adopted=True)
            self.batches_adopted += 1
        return flight

    def _requeue_locked(self, parked: Parked) -> None:
        """Into the next batch; collect only: back to its caller, to be sent synchronously."""
        if parked.collect_only:
            parked.error = SendSynchronously()
            self.requests_done += 1
            parked.done.set()
            return
        self._queue.setdefault(parked.group, {}).setdefault(parked.item.custom_id, []).append(parked)
        self._last_park = time.monotonic()

    # -- the collector thread ------------------------------------------------------------------

    def _start_locked(self) -> None:
        if self._started is None:
            self._started = time.monotonic()
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="skilltransfer-batches", daemon=True)
            self._thread.start()

    def summary(self) -> str | None:
        """What the lane did in this process, or None when nothing went through it."""
        if not self.requests_total:
            return None
        if not self.settings.submit:
            return (f"batch lane (collect only): {self.requests_total} request(s) found in {self.batches_adopted} "
                    f"batch(es) of earlier runs; {self.requests_done} answered or sent on, {self.requests_failed} "
                    f"failed; ${self.dollars:.4f} at batch prices")
        return (f"batch lane: {self.requests_total} request(s) in {self.round_trips} round trip(s); "
                f"{self.batches_created} batch(es) created, {self.batches_adopted} adopted; "
                f"{self.requests_done} answered, {self.requests_failed} failed; ${self.dollars:.4f} at batch prices")

    def close(self) -> None:
        """Stop the collector (waiting calls fail; batches stay in the manifest)."""
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while True:
            with self._cond:
                stopped = halted()
                if stopped is not None:  # the run was stopped: nothing more is submitted, polled or waited for
                    self._fail_all_locked(RunStopped(stopped))
                    self._thread = None
                    return
                if self._closing:
                    self._fail_all_locked(BatchLaneError("the run ended while requests waited for their batch; "
                                                         "run the same command again to collect them"))
                    return
                work = self._due_locked()
                if not any(work):
                    self._cond.wait(timeout=self._tick())
                    continue
            flushes, polls, lookups = work
            if flushes:
                self.round_trips += 1
            for group, entries in flushes:
                try:
                    self._submit(group, entries)
                except _Uncertain:
                    pass  # its requests wait for the look-up
                except Exception as exc:  # noqa: BLE001 - SDK and transport errors alike
                    self._refused(group, entries, exc)
            with self._cond:
                self._show_locked()
            for flight in polls:
                try:
                    self._poll(flight)
                    self._failed_checks.pop(flight.batch_id, None)
                except Exception as exc:  # noqa: BLE001
                    self._check_failed(flight.batch_id, flight.submission, exc)
            for name in lookups:
                try:
                    self._look_up(name)
                    self._failed_checks.pop(name, None)
                except Exception as exc:  # noqa: BLE001
                    self._check_failed(name, name, exc)
            with self._cond:
                self._check_ceiling_locked()
                self._show_locked()

    def _tick(self) -> float:
        return max(0.01, min(self.settings.gather_s, self.settings.poll_s) / 4)

    def _due_locked(self) -> tuple[list[tuple[Group, dict[str, list[Parked]]]], list[InFlight], list[str]]:
        now = time.monotonic()
        flushes: list[tuple[Group, dict[str, list[Parked]]]] = []
        if self._queue and now - self._last_park >= self.settings.gather_s:
            waiting: dict[Group, dict[str, list[Parked]]] = {}
            for group, entries in self._queue.items():
                if self._reserve_step_locked(group, entries):
                    flushes.append((group, entries))
                elif any(not p.done.is_set() for ps in entries.values() for p in ps):
                    waiting[group] = entries  # does not fit yet: waits whole for the batches in flight
            self._queue = waiting
        polls = [f for f in self._in_flight.values() if f.next_poll <= now]
        for flight in polls:
            flight.next_poll = now + self.settings.poll_s
        lookups = [name for name in self._uncertain if self._next_lookup.get(name, 0.0) <= now]
        for name in lookups:
            self._next_lookup[name] = now + self.settings.poll_s
        return flushes, polls, lookups

    def _reserve_step_locked(self, group: Group, entries: dict[str, list[Parked]]) -> bool:
        """Reserve a step's requests as a whole (see module docstring): True when it can be sent (reserved,
        or no budget); False when it waits, or failed whole because it can never fit."""
        from ..spend_gate import Refused, reserve_step

        new = [p for ps in entries.values() for p in ps if p.reservation is None and not p.done.is_set()]
        if not new:
            return True
        try:
            reservations = reserve_step([(p.item.path, p.raw) for p in new], "batch")
        except Refused as refused:
            for parked in [p for ps in entries.values() for p in ps if not p.done.is_set()]:
                self._fail_locked(parked, refused)  # a BaseException: passes the SDK's retries, as the sync gate's
            self.progress(f"{group.model_id}: {refused.error}")
            return False
        if reservations is None:
            return False
        for parked, reservation in zip(new, reservations):
            parked.reservation = reservation
        return True

    def _check_failed(self, key: str, submission: str, exc: Exception) -> None:
        """A failed look-up (key: the submission) or status check (key: the batch id): again after a doubling
        pause, and after `max_checks` failures in a row its calls fail with what to do."""
        failures = self._failed_checks[key] = self._failed_checks.get(key, 0) + 1
        what = "look-up" if key == submission else "status check"
        sub = self.manifest.submissions.get(submission)
        if failures < self.settings.max_checks or sub is None:
            pause = self.settings.poll_s * 2 ** failures
            with self._cond:
                if key == submission:
                    self._next_lookup[key] = time.monotonic() + pause
                elif key in self._in_flight:
                    self._in_flight[key].next_poll = time.monotonic() + pause
            self.progress(f"{'submission ' + key if key == submission else 'batch ' + key}: {what} failed "
                          f"({type(exc).__name__}: {exc}); try {failures} of {self.settings.max_checks}, next in "
                          f"{pause:g} s")
            return
        error = BatchLaneError(unresolved_text(self.manifest.path, sub, what, failures, exc))
        self.progress(str(error))
        with self._cond:
            waiting: dict[str, list[Parked]] = {}
            if key == submission and key in self._uncertain:
                waiting = self._uncertain.pop(key)[2]
            elif key in self._in_flight:
                waiting = self._in_flight.pop(key).waiting
            for parked in [p for ps in waiting.values() for p in ps]:
                if not parked.done.is_set():
                    self._fail_locked(parked, error)

    def _refused(self, group: Group, entries: dict[str, list[Parked]], exc: Exception) -> None:
        """The provider refused to create a batch: its calls fail (nothing was created, nothing paid)."""
        with self._cond:
            for parked in [p for ps in entries.values() for p in ps]:
                if not parked.done.is_set():
                    self._fail_locked(parked, BatchLaneError(
                        f"{group.model_id}: the batch API at {group.base_url} refused the batch: "
                        f"{type(exc).__name__}: {exc}. Nothing was sent or recorded for this call."))

    def _submit(self, group: Group, entries: dict[str, list[Parked]]) -> None:
        api = self.api_for(group)
        ids = list(entries)
        for start in range(0, len(ids), api.limit):
            chunk = ids[start:start + api.limit]
            name = uuid.uuid4().hex[:20]
            self.manifest.append({"event": "submit", "submission": name, "group": group.name, "custom_ids": chunk,
                                  "at": time.time()})
            try:
                batch_id = api.create([entries[cid][0].item for cid in chunk], name)
            except Exception as exc:
                if _refusal(exc):
                    self.manifest.append({"event": "abandoned", "submission": name})
                    raise
                with self._cond:  # uncertain: it may exist; look it up before anything is sent again
                    sub = self.manifest.submissions[name]
                    self._uncertain[name] = (group, sub, {cid: entries[cid] for cid in chunk})
                raise _Uncertain() from None
            self.manifest.append({"event": "created", "submission": name, "batch_id": batch_id})
            with self._cond:
                self.batches_created += 1
                flight = self._in_flight[batch_id] = InFlight(batch_id, group, name,
                                                              {cid: entries[cid] for cid in chunk})
                flight.next_poll = time.monotonic() + self.settings.poll_s
                flight.total = len(chunk)
            self.progress(f"batch {batch_id}: created on {group.model_id} with {len(chunk)} request(s)")

    def _poll(self, flight: InFlight) -> None:
        api = self.api_for(flight.group)
        if flight.adopted and self.settings.pending == "cancel" and not flight.cancel_sent:
            api.cancel(flight.batch_id)
            flight.cancel_sent = True
            self.progress(f"batch {flight.batch_id}: canceled at the provider (--transfer-batch-pending=cancel); "
                          "answers it already has are collected, the rest are sent "
                          + ("again" if self.settings.submit else "synchronously"))
        status = api.status(flight.batch_id)
        with self._cond:
            flight.state, flight.done, flight.total = status.state, status.done, status.total
        if not status.ended:
            return
        outcomes = api.results(flight.batch_id)
        self.manifest.append({"event": "collected", "submission": flight.submission})
        with self._cond:
            self._results[flight.batch_id] = outcomes
            self._in_flight.pop(flight.batch_id, None)
            self.batches_finished += 1
            self._turnarounds.append(time.monotonic() - flight.since)
            note = outcomes.get("*")
            for cid, waiting in flight.waiting.items():
                outcome = outcomes.get(cid) or note or Outcome("retry", why=f"no result in batch ({status.state})")
                for parked in waiting:
                    self._settle_locked(parked, outcome, flight.batch_id)

    def _look_up(self, name: str) -> None:
        with self._cond:
            group, sub, waiting = self._uncertain[name]
            claimed = {s.batch_id for s in self.manifest.submissions.values() if s.batch_id}
        found = self.api_for(group).find(name, sub.at, len(sub.custom_ids), claimed)
        if found is not None:
            self.manifest.append({"event": "adopted", "submission": name, "batch_id": found})
            self.progress(f"batch {found}: found at the provider for an interrupted submission, adopted")
        else:
            self.manifest.append({"event": "abandoned", "submission": name})
        with self._cond:
            del self._uncertain[name]
            for cid, parked_list in waiting.items():
                for parked in parked_list:
                    if found is not None:
                        self._adopt_locked(found, group, name).waiting.setdefault(cid, []).append(parked)
                    else:
                        self._requeue_locked(parked)

    # -- outcomes ------------------------------------------------------------------------------

    def _settle_locked(self, parked: Parked, outcome: Outcome, batch_id: str) -> None:
        if outcome.kind in ("ok", "fail"):
            parked.outcome = outcome
            self.requests_done += 1
            if outcome.kind == "ok" and self.cost is not None:
                self.dollars += self.cost(parked.group.provider, parked.group.model_id, outcome.body) or 0.0
            parked.done.set()
            return
        parked.failures += 1
        parked.reasons.append(f"{batch_id}: {outcome.why}")
        if self.settings.fallback == "sync" or parked.collect_only:
            parked.error = SendSynchronously()
            self.requests_done += 1
            parked.done.set()
        elif parked.failures >= self.settings.max_attempts:
            self._fail_locked(parked, BatchLaneError(
                f"{parked.group.model_id}: request failed in {parked.failures} batch(es) "
                f"({'; '.join(parked.reasons)}); nothing was recorded for it. To retry it, run the same command with "
                "--record-mode=new_episodes (what was recorded is replayed and only what is missing is sent; with "
                "--record-mode=once a model that already has recordings for the seed records nothing more, so the "
                "retry would be a cassette miss), or add --transfer-batch-fallback=sync to send such requests "
                "synchronously."))
        else:
            self._requeue_locked(parked)

    def _fail_locked(self, parked: Parked, error: BaseException) -> None:
        parked.error = error
        self.requests_failed += 1
        parked.done.set()

    def _waiting_locked(self) -> list[Parked]:
        groups = [w for q in self._queue.values() for w in q.values()]
        groups += [w for f in self._in_flight.values() for w in f.waiting.values()]
        groups += [w for _, _, ws in self._uncertain.values() for w in ws.values()]
        return [p for ps in groups for p in ps if not p.done.is_set()]

    def _fail_all_locked(self, error: BaseException) -> None:
        for parked in self._waiting_locked():
            self._fail_locked(parked, error)
        self._queue.clear()

    def _check_ceiling_locked(self) -> None:
        if self._started is None or self._stopped:
            return
        waited = time.monotonic() - self._started
        if waited < self.settings.max_wait_s:
            return
        pending = len(self._in_flight) + len(self._uncertain)
        self._stopped = (
            f"batch wait ceiling reached after {_clock(waited)} (--transfer-batch-max-wait) with {pending} batch(es) "
            f"still at the provider; every answer received is recorded, and {self.manifest.path} keeps the batch "
            "ids: run the same command again to collect them without paying twice")
        self.progress(self._stopped)
        self._fail_all_locked(BatchWaitExceeded(self._stopped))
        self._in_flight.clear()
        self._uncertain.clear()

    def _show_locked(self) -> None:
        """One progress line whenever the counts change."""
        pending = len(self._in_flight) + len(self._uncertain)
        state = (pending, self.batches_finished, self.requests_done, self.requests_failed, self.requests_total,
                 round(self.dollars, 4))
        if state == self._shown or self._started is None:
            return
        self._shown = state
        waited = time.monotonic() - self._started
        failed = f", {self.requests_failed} failed" if self.requests_failed else ""
        self.progress(f"batches: {pending} pending, {self.batches_finished} finished; requests {self.requests_done}/"
                      f"{self.requests_total} done{failed}; ${self.dollars:.4f} so far at batch prices; "
                      f"waited {_clock(waited)}{self._eta_locked()}")

    def observed(self) -> tuple[list[float], float | None]:
        """The turnarounds of the batches that came back (seconds), and the wall time since which the oldest batch
        in flight has been waited for (None: none in flight): for the run's ETA (`reports.run_standing`)."""
        with self._cond:
            oldest = min((f.since for f in self._in_flight.values()), default=None)
            return list(self._turnarounds), None if oldest is None else time.time() - (time.monotonic() - oldest)

    def _eta_locked(self) -> str:
        """`; batches take ~T, next answer in ~E`: the median observed turnaround, and what is left of it for
        the oldest batch in flight (nothing before a batch has finished: no turnaround observed yet)."""
        if not self._turnarounds or not self._in_flight:
            return ""
        ordered = sorted(self._turnarounds)
        typical = ordered[len(ordered) // 2]
        oldest = min(f.since for f in self._in_flight.values())
        left = max(0.0, typical - (time.monotonic() - oldest))
        return f"; batches take ~{_clock(typical)}, next answer in ~{_clock(left)}"


def unresolved_text(path: Path, sub: Submission, what: str, failures: int, exc: Exception) -> str:
    """The error of calls whose batch could not be looked up or checked: where, what may be paid, what to do."""
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(sub.at))
    base = sub.group.partition("@")[2]
    if sub.batch_id:
        held = f"batch {sub.batch_id} ({len(sub.custom_ids)} request(s), submitted {when}) is at {base}"
        fix = (f"if the provider no longer has it, `python -m pytest_skilltransfer batches abandon {sub.submission} "
               f"--cassette-dir {path.parent}` lets the next run send its requests again")
    else:
        held = (f"a batch of {len(sub.custom_ids)} request(s) submitted {when} may exist at {base} (its create call "
                "got no answer) and is billed once it runs")
        fix = (f"look for it in the provider's batch list: if it is there, `python -m pytest_skilltransfer batches adopt "
               f"{sub.submission} BATCH_ID --cassette-dir {path.parent}`, if not, `python -m pytest_skilltransfer "
               f"batches abandon {sub.submission} --cassette-dir {path.parent}`")
    return (f"{path}:{sub.line}: the {what} of submission {sub.submission} failed {failures} time(s) in a row "
            f"(last: {type(exc).__name__}: {exc}); {held}. Its requests are not sent again until it is resolved: "
            f"{fix}; then run the same command again")


def _refusal(exc: Exception) -> bool:
    """Whether a failed create was a definite refusal (a 4xx other than a timeout, conflict or rate limit)."""
    status = getattr(exc, "status_code", None)
    return isinstance(status, int) and 400 <= status < 500 and status not in (408, 409, 429)


class _Uncertain(Exception):
    """A create call failed without a clear answer; its requests wait for the look-up."""


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"
