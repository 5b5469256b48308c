"""Adaptive concurrency per model: at most N calls in flight, fewer while the provider pushes back.

Every provider call holds a slot of its model's `AdaptiveLimiter`. The SDK clients report each
HTTP response (retries included) through `response_hook`, an httpx event hook; the hook finds the
limiter of the call running in this thread. On 429, 529 or 503 (rate limited or overloaded) the
limiter halves the model's concurrency (once per episode: again only after a success or after the
advertised wait has passed) and holds new calls back until `retry-after` has passed; the SDK
itself retries the failed call after the same wait. After as many consecutive successes as the
current limit it admits one more call, up to the configured maximum (additive increase,
multiplicative decrease). Each change is reported through the `notify` callback (the plugin prints
it with `-v`).

OpenAI's flex tier answers 429 "resource unavailable" when it has no capacity for the moment: that
is not a rate limit on this client, so it does not lower the limit; the SDK retries it after our
backoff (`sdk_common.CallPolicy`) and the provider does not charge it.

The same hook tells whether a call's answer came over the network (a response from the real HTTP
transport carries `http_version`; one replayed from a cassette does not), so what was really spent
can be charged (`Call.live`).
"""

from __future__ import annotations

import contextvars
import json
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Callable

from ..guards.run_scope import Scoped

THROTTLE_STATUSES = {429: "rate limited", 529: "overloaded", 503: "unavailable"}
MAX_PAUSE_S = 60.0  # a retry-after longer than this still pauses only this long (the SDK gives up beyond it)
DEFAULT_PAUSE_S = 1.0  # when a throttling response names no retry-after

Notify = Callable[[str], None]


def retry_after_s(headers: Mapping[str, str]) -> float | None:
    """The wait a response asks for: `retry-after-ms`, else `retry-after` in seconds; None if absent."""
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return max(0.0, float(value) * scale)
        except ValueError:
            continue
    return None


class Call:
    """One call holding a slot: whether a successful answer arrived over the network."""

    def __init__(self, limiter: "AdaptiveLimiter") -> None:
        self.limiter = limiter
        self.live = False


class AdaptiveLimiter:
    """Slots for one model's calls; the limit moves between 1 and `maximum` (see module docstring)."""

    def __init__(self, model_id: str, maximum: int, notify: Notify | None = None) -> None:
        if maximum < 1:
            raise ValueError(f"{model_id}: maximum concurrency must be at least 1, got {maximum}")
        self.model_id = model_id
        self.maximum = maximum
        self.limit = maximum
        self.notify = notify or (lambda _line: None)
        self.throttles = 0  # throttling responses seen
        self.throttled_since: float | None = None  # wall time of the first throttle since the last success
        self.throttled_until = 0.0  # wall time until which new calls wait (the advertised retry-after)
        self.throttled_status = 0  # the last throttling status (429, 529, 503)
        self.lowest = maximum  # the lowest limit reached
        self._cond = threading.Condition()
        self._in_flight = 0
        self._paused_until = 0.0
        self._streak = 0  # consecutive successes since the last change
        self._cut_at = float("-inf")  # when the limit was last lowered
        self._cut_window = 0.0
        self._success_since_cut = True

    @contextmanager
    def slot(self) -> Iterator[Call]:
        """Hold one of the model's slots for a call; waits while the model is full or paused."""
        with self._cond:
            while True:
                wait = self._paused_until - time.monotonic()
                if wait <= 0 and self._in_flight < self.limit:
                    break
                self._cond.wait(timeout=wait if wait > 0 else None)
            self._in_flight += 1
        call = Call(self)
        token = _current.set(call)
        try:
            yield call
        finally:
            _current.reset(token)
            with self._cond:
                self._in_flight -= 1
                self._cond.notify_all()

    def observe(self, status: int, headers: Mapping[str, str]) -> None:
        """Take one HTTP response into account."""
        if status in THROTTLE_STATUSES:
            self.throttled(status, retry_after_s(headers))
        elif 200 <= status < 300:
            self.succeeded()

    def throttled(self, status: int, retry_after: float | None) -> None:
        """The provider pushed back: pause new calls and lower the limit (once per episode)."""
        pause = min(MAX_PAUSE_S, DEFAULT_PAUSE_S if retry_after is None else retry_after)
        with self._cond:
            now = time.monotonic()
            self.throttles += 1
            if self.throttled_since is None:
                self.throttled_since = time.time()
            self.throttled_until = max(self.throttled_until, time.time() + pause)
            self.throttled_status = status
            self._streak = 0
            self._paused_until = max(self._paused_until, now + pause)
            old = self.limit
            new_episode = self._success_since_cut or now >= self._cut_at + self._cut_window
            if new_episode and old > 1:
                self.limit = max(1, old // 2)
                self.lowest = min(self.lowest, self.limit)
                self._cut_at, self._cut_window, self._success_since_cut = now, pause, False
        why = THROTTLE_STATUSES[status]
        change = f"concurrency {old} -> {self.limit}" if self.limit != old else f"concurrency stays {old}"
        self.notify(f"{self.model_id}: HTTP {status} ({why}), {change}; new calls wait {pause:.2f}s (retry-after)")

    def succeeded(self) -> None:
        """One success; after `limit` in a row the limit grows by one, up to the maximum."""
        with self._cond:
            self._success_since_cut = True
            self.throttled_since = None
            self._streak += 1
            if self.limit >= self.maximum or self._streak < self.limit:
                return
            old, self.limit, self._streak = self.limit, self.limit + 1, 0
            self._cond.notify_all()
        self.notify(f"{self.model_id}: {old} calls in a row succeeded, concurrency {old} -> {self.limit}")


_current: contextvars.ContextVar[Call | None] = contextvars.ContextVar("skilltransfer_call", default=None)


def flex_unavailable(response: Any) -> bool:
    """Whether a response is OpenAI flex's 429 "resource unavailable" (capacity, not a rate limit)."""
    if response.status_code != 429:
        return False
    try:
        sent = json.loads(response.request.content or b"{}")
        if not isinstance(sent, dict) or sent.get("service_tier") != "flex":
            return False
        error = json.loads(response.read() or b"{}").get("error") or {}
    except (ValueError, AttributeError, RuntimeError):
        return False
    text = f"{error.get('code') or ''} {error.get('type') or ''} {error.get('message') or ''}".lower()
    return "resource_unavailable" in text or "resource unavailable" in text


def response_hook(response: Any) -> None:
    """httpx response event hook: report the response to the limiter of the call in this thread."""
    call = _current.get()
    if call is not None:
        if flex_unavailable(response):
            call.limiter.notify(f"{call.limiter.model_id}: HTTP 429 flex resource unavailable; retried after "
                                "backoff, concurrency unchanged")
            return
        call.limiter.observe(response.status_code, response.headers)
        if 200 <= response.status_code < 300 and "http_version" in (getattr(response, "extensions", None) or {}):
            call.live = True


def observe_client(client: Any) -> Any:
    """Add `response_hook` to an SDK client's httpx client (both SDKs keep it as `_client`)."""
    http = getattr(client, "_client", None)
    hooks = getattr(http, "event_hooks", None)
    if isinstance(hooks, dict) and response_hook not in hooks.setdefault("response", []):
        hooks["response"].append(response_hook)
    return client


Requested = Callable[[str], "int | None"]


class Limiters:
    """One limiter per model id, created on first use with that model's maximum concurrency."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._limiters: dict[str, AdaptiveLimiter] = {}
        self._requested: Requested = lambda _model_id: None
        self._notify: Notify | None = None

    def configure(self, requested: Requested | None = None, notify: Notify | None = None) -> None:
        """Set the user's maximum per model id (None: the backend's default) and where changes are
        reported; drops the limiters built so far."""
        with self._lock:
            self._requested, self._notify = requested or (lambda _model_id: None), notify
            self._limiters.clear()

    def maximum(self, model_id: str, default: int, ceiling: int | None = None) -> int:
        """The user's maximum for a model, else `default`; never above what its server can serve."""
        with self._lock:
            wanted = self._requested(model_id) or default
        return min(wanted, ceiling) if ceiling else wanted

    def get(self, model_id: str, default: int, ceiling: int | None = None) -> AdaptiveLimiter:
        """The model's limiter (built on first use with `maximum(...)`)."""
        maximum = self.maximum(model_id, default, ceiling)
        with self._lock:
            limiter = self._limiters.get(model_id)
            if limiter is None:
                limiter = self._limiters[model_id] = AdaptiveLimiter(model_id, maximum, self._notify)
            return limiter

    def all(self) -> list[AdaptiveLimiter]:
        with self._lock:
            return list(self._limiters.values())

    def throttled_since(self) -> float | None:
        """Wall time since which some model has answered only with throttling (429, 529, 503), or None."""
        times = [t for t in (limiter.throttled_since for limiter in self.all()) if t is not None]
        return min(times) if times else None

    def throttled_status(self) -> int | None:
        """The status the throttled model that waits longest answered last (429, 529, 503), or None."""
        waiting = [limiter for limiter in self.all() if limiter.throttled_since is not None]
        return min(waiting, key=lambda limiter: limiter.throttled_since or 0.0).throttled_status if waiting else None

    def throttled_until(self) -> float | None:
        """Wall time until which the throttled models hold new calls back (their retry-after), or None."""
        times = [limiter.throttled_until for limiter in self.all() if limiter.throttled_since is not None]
        return max(times) if times else None


class _RunLimiters:
    """`LIMITERS`: the limiters of the run in force (`guards.run_scope`), so one run's maxima and rate-limit
    state never reach the next run in the same process."""

    _scoped: Scoped[Limiters] = Scoped("limiters", Limiters)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._scoped(), name)


LIMITERS = _RunLimiters()
