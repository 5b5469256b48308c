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
import json
import threading
from concurrent.futures import Future
from dataclasses import asdict, dataclass, field

from .models.base import Model, Reply, Request, Usage


@dataclass
class Tally:
    """Calls, cache hits and tokens for one (model, role)."""

    calls: int = 0
    cached: int = 0
    usage: Usage = field(default_factory=Usage)
    evidence: frozenset[str] = frozenset()  # fingerprints of the calls used (see `fingerprint`)

    def merged(self, other: "Tally") -> "Tally":
        return Tally(self.calls + other.calls, self.cached + other.cached, self.usage + other.usage,
                     self.evidence | other.evidence)


def fingerprint(request_key: str, reply: Reply) -> str:
    """A call's identity as evidence: its request key and every field of its reply."""
    blob = json.dumps({"request": request_key, "reply": asdict(reply)}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def evidence_digest(fingerprints: frozenset[str] | set[str]) -> str:
    """One digest over a set of call fingerprints (order-free)."""
    return hashlib.sha256("\n".join(sorted(fingerprints)).encode("ascii")).hexdigest()


class Meter:
    """Tallies per (model id, role) for one phase; thread-safe."""

    def __init__(self) -> None:
        self._tallies: dict[tuple[str, str], Tally] = {}
        self._lock = threading.Lock()

    def record(self, model_id: str, role: str, reply: Reply | None, evidence: str | None = None) -> None:
        """Count one call (a reply) or one cache hit (None), with the call's fingerprint when known."""
        with self._lock:
            tally = self._tallies.setdefault((model_id, role), Tally())
            if evidence is not None:
                tally.evidence = tally.evidence | {evidence}
            if reply is None:
                tally.cached += 1
            else:
                tally.calls += 1
                tally.usage = tally.usage + reply.usage

    def snapshot(self) -> dict[tuple[str, str], Tally]:
        with self._lock:
            return {k: Tally(v.calls, v.cached, v.usage, v.evidence) for k, v in sorted(self._tallies.items())}


class CallCache:
    """Answers known requests from memory; shared by every phase of a seed's protocol runs.

    Thread-safe: when several threads ask the same request at once, one sends it and the others
    wait for its reply (counted as cache hits), so no request is ever sent twice.
    """

    def __init__(self) -> None:
        self._replies: dict[str, Reply] = {}
        self._pending: dict[str, Future[Reply]] = {}
        self._lock = threading.Lock()

    def call(self, model: Model, request: Request, meter: Meter, role: str) -> Reply:
        """Answer `request` through `model` unless the answer is known; meter it either way."""
        key = request.key(model.model_id)
        with self._lock:
            known = self._replies.get(key)
            waiting = self._pending.get(key) if known is None else None
            if known is None and waiting is None:
                mine = self._pending[key] = Future()
        if known is not None or waiting is not None:
            reply = known if known is not None else waiting.result()  # type: ignore[union-attr]
            meter.record(model.model_id, role, None, fingerprint(key, reply))
            return reply
        try:
            reply = model.complete(request)
        except BaseException as exc:
            with self._lock:
                del self._pending[key]
            mine.set_exception(exc)
            raise
        with self._lock:
            self._replies[key] = reply
            del self._pending[key]
        mine.set_result(reply)
        meter.record(model.model_id, role, reply, fingerprint(key, reply))
        return reply
