"""Every model call goes through one cache, and every protocol phase carries a meter.

A call whose answer is already known (same model, same request, same sample id) is answered from
the cache and costs nothing; failed calls raise and are never cached. Each phase (baseline,
optimization, transferred, ...) meters its own calls and tokens per model and role, so a result
can price the optimization on the source against the direct optimization on the target.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future
from dataclasses import dataclass, field

from .models.base import Model, Reply, Request, Usage


@dataclass
class Tally:
    """Calls, cache hits and tokens for one (model, role)."""

    calls: int = 0
    cached: int = 0
    usage: Usage = field(default_factory=Usage)

    def merged(self, other: "Tally") -> "Tally":
        return Tally(self.calls + other.calls, self.cached + other.cached, self.usage + other.usage)


class Meter:
    """Tallies per (model id, role) for one phase; thread-safe."""

    def __init__(self) -> None:
        self._tallies: dict[tuple[str, str], Tally] = {}
        self._lock = threading.Lock()

    def record(self, model_id: str, role: str, reply: Reply | None) -> None:
        """Count one call (a reply) or one cache hit (None)."""
        with self._lock:
            tally = self._tallies.setdefault((model_id, role), Tally())
            if reply is None:
                tally.cached += 1
            else:
                tally.calls += 1
                tally.usage = tally.usage + reply.usage

    def snapshot(self) -> dict[tuple[str, str], Tally]:
        with self._lock:
            return {k: Tally(v.calls, v.cached, v.usage) for k, v in sorted(self._tallies.items())}


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
            meter.record(model.model_id, role, None)
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
        meter.record(model.model_id, role, reply)
        return reply
