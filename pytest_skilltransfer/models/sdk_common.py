"""What both SDK backends share: one place that builds clients, the call policy, and errors made actionable.

Call environment: the layer above (the cassettes) installs a `CallEnvironment` for as long as a
recording is open (`call_environment`); this module never imports it. Replay-only calls get a
dummy key and no retries (a miss fails at once and no real key is ever sent). Calls that may
record need the provider's key; without it they fail naming the variable. Servers at an explicit
base URL (vLLM, llama.cpp, Ollama, a test fake) get a placeholder key when none is set.

Call policy (`CallPolicy`, set with `configure_calls`): the SDKs' own retry machinery does the
retrying (max_retries, their retry-after parsing, timeouts); the backoff between attempts is
ours: exponential from `backoff_s`, capped at `max_backoff_s`, and a `retry-after` the provider
sends is waited for (up to `MAX_RETRY_AFTER_S`). `prompt_cache` off keeps the Anthropic wire from
marking a prefix for caching (so no `cache_control` is sent, and recorded bodies differ accordingly).
`service_tier` is the OpenAI service tier of every OpenAI model that does not set its own (`flex`:
batch prices, slower; its calls get `FLEX_TIMEOUT_S` unless the timeout was raised above it).

Cookies: the clients keep none (`NoCookies`, the cookie jar httpx's maintainers suggest for this).
The APIs authenticate by key; a cookie a provider or its CDN sets is never sent back, so no session
value can travel between models, runs or threads, and no call pays for cookie parsing and matching.

Importing an SDK (`import_sdk`, on its first client) leaves about 90,000 objects that live as long
as the process (its types and their pydantic schemas). Every full collection of the cyclic garbage
collector would walk them again (with both SDKs 0.15-0.2 s, the GIL held, once or twice per few
hundred recorded calls); so right after the import, once the young generations are collected, the
objects then alive are moved to the permanent generation (`gc.freeze`, as pre-fork servers do).
Objects made later are collected as before; an SDK the process had already imported is left alone.
"""

from __future__ import annotations

import gc
import importlib
import os
import random
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.cookiejar import CookieJar
from typing import Any, Callable, Protocol

from ..guards.redaction import redact_text, strip_userinfo
from ..guards import run_scope
from ..guards.run_scope import Scoped
from .aliases import Target
from .base import ModelCallError, find_in_chain
from .halt import RunStopped, refuse_if_halted
from .wire import wire_named

REPLAY_KEY = "skilltransfer-replay-placeholder"
LOCAL_KEY = "skilltransfer-local-placeholder"
MAX_RETRY_AFTER_S = 120.0  # a longer retry-after is capped at this wait
FLEX_TIMEOUT_S = 900.0  # OpenAI advises a 15-minute timeout for flex processing
# Pinned so cassettes hold plain bodies (httpx2 would otherwise offer br/zstd when installed).
DEFAULT_HEADERS = {"Accept-Encoding": "identity"}


@dataclass(frozen=True)
class CallPolicy:
    """Retries, backoff and timeout of live calls (replayed calls never retry), and prompt caching."""

    max_retries: int = 8
    backoff_s: float = 0.5
    max_backoff_s: float = 8.0
    timeout_s: float = 600.0
    prompt_cache: bool = True  # mark a long enough shared prefix with `cache_control` (Anthropic)
    deadline_s: float = 1800.0  # one call in all, retries and waits included (`call_deadline`; a flex attempt fits)
    service_tier: str | None = None  # OpenAI `service_tier` for models without their own ("flex", "default")

    def timeout_for(self, service_tier: str | None) -> float:
        """Seconds one call may take: flex answers slowly, so its calls get at least `FLEX_TIMEOUT_S`."""
        return max(self.timeout_s, FLEX_TIMEOUT_S) if service_tier == "flex" else self.timeout_s

    def wait_before_retry(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait before retry number `attempt` (0-based): the provider's retry-after, else backoff."""
        if retry_after is not None and retry_after > 0:
            return min(retry_after, MAX_RETRY_AFTER_S)
        wait = min(self.backoff_s * 2.0 ** min(attempt, 60), self.max_backoff_s)
        return wait * (1 - 0.25 * random.random())  # jitter, as the SDKs do


_policy: Scoped[list[CallPolicy]] = Scoped("call_policy", lambda: [CallPolicy()])  # the run's (`guards.run_scope`)


def configure_calls(policy: CallPolicy) -> None:
    """Set the run's policy for clients built from now on."""
    _policy()[0] = policy


def call_policy() -> CallPolicy:
    """The run's call policy."""
    return _policy()[0]


class CallEnvironment(Protocol):
    """What an open recording tells the backends (implemented by the cassette layer)."""

    def replay_only(self, model_id: str) -> bool:
        """Whether calls to `model_id` can only be replayed (so no key is needed and none is sent)."""
        ...

    def key_needed_for(self) -> str:
        """Why a live call needs a key, for the missing-key message."""
        ...

    def explain(self, exc: BaseException) -> ModelCallError | None:
        """A clear error for a failure the environment caused (a replay miss, a blocked connect), else None."""
        ...

    def prepare_sdk_call(self) -> None:
        """Called before a call goes through the SDK (the environment may have deferred its set-up)."""
        ...

    def recorded_answer(self, model_id: str, fingerprint: str, key: tuple[str, str, str]) -> tuple[int, Any] | None:
        """The (status, body: parsed JSON or bytes) recorded for the request with `key`, played as the path of record would
        play it, when `model_id`'s recordings were verified under SDK `fingerprint` (see `fidelity`);
        None sends the call through the SDK instead."""
        ...


_environment: CallEnvironment | None = None
_environment_lock = threading.Lock()


@contextmanager
def call_environment(env: CallEnvironment) -> Iterator[None]:
    """Install `env` for SDK calls made (from any thread) until exit."""
    global _environment
    with _environment_lock:
        previous, _environment = _environment, env
    try:
        yield
    finally:
        with _environment_lock:
            _environment = previous


def current_environment() -> CallEnvironment | None:
    with _environment_lock:
        return _environment


class CallDeadlineExceeded(ModelCallError):
    """A call (all its attempts and waits) reached the policy's deadline; says what was tried."""


class _CallState(threading.local):
    """The call in progress in this thread: when it must end, what its attempts got, why to stop retrying."""

    deadline: float | None = None
    limit_s: float = 0.0
    tried: list[str] | None = None
    stop: BaseException | None = None


_call = _CallState()
_call_end_listeners: list[Callable[[], None]] = []


def on_call_end(listener: Callable[[], None]) -> Callable[[], None]:
    """Call `listener()` in the calling thread when an SDK call ends, however it ends; returns a remover."""
    _call_end_listeners.append(listener)
    return lambda: _call_end_listeners.remove(listener) if listener in _call_end_listeners else None


_played = threading.local()


def note_paid_by_another_run() -> None:
    """The cassette played this thread's call from the answer another recorder paid for during this run."""
    _played.elsewhere = True


def take_paid_by_another_run() -> bool:
    """Whether the call this thread just made was answered that way (`note_paid_by_another_run`); resets it."""
    elsewhere = getattr(_played, "elsewhere", False)
    _played.elsewhere = False
    return elsewhere


def stop_retrying(reason: BaseException) -> None:
    """Make the SDK call in progress in this thread end with `reason` instead of retrying (raised from
    the SDK's wait before a retry, so no further attempt is sent)."""
    _call.stop = reason


@contextmanager
def call_deadline(policy: CallPolicy) -> Iterator[None]:
    """Bound one SDK call (with the SDK's retries) by `policy.deadline_s`: each attempt's timeout is cut
    to the time left, and a retry that could not start before the deadline is not made."""
    previous = (_call.deadline, _call.limit_s, _call.tried, _call.stop)
    _call.deadline, _call.limit_s, _call.tried = time.monotonic() + policy.deadline_s, policy.deadline_s, []
    _call.stop = None
    try:
        yield
    finally:
        _call.deadline, _call.limit_s, _call.tried, _call.stop = previous
        for listener in list(_call_end_listeners):
            listener()


def _time_left() -> float | None:
    return None if _call.deadline is None else _call.deadline - time.monotonic()


def _tried_text() -> str:
    tried = _call.tried or []
    counted: list[str] = []
    for what in tried:
        if counted and counted[-1].split(" x")[0] == what:
            head, _, times = counted[-1].partition(" x")
            counted[-1] = f"{head} x{int(times or 1) + 1}"
        else:
            counted.append(what)
    return f"{len(tried)} attempt(s): {', '.join(counted) or 'none'}"


def deadline_exceeded(model: str, where: str) -> CallDeadlineExceeded:
    """The error for a call that reached its deadline, naming the attempts made."""
    return CallDeadlineExceeded(redact_text(
        f"{model}: no complete answer from {where} within the call deadline of {_call.limit_s:g} s "
        f"({_tried_text()}): raise --transfer-call-deadline (ini skilltransfer_call_deadline) or retry later. "
        "Nothing was saved for this call."))


def _clamp_attempt(request: Any) -> None:
    """httpx request hook: nothing is sent once the run is stopped (`halt`); the attempt may take only the
    time the call has left."""
    refuse_if_halted()
    left = _time_left()
    if left is None:
        return
    if left <= 0:
        raise CallDeadlineExceeded("the call deadline passed before this attempt")
    timeout = dict(request.extensions.get("timeout") or {})
    request.extensions["timeout"] = {k: min(v, left) if v is not None else left
                                     for k, v in {**dict.fromkeys(("connect", "read", "write", "pool")), **timeout}.items()}


def _note_response(response: Any) -> None:
    """httpx response hook: what this attempt got, for the deadline message."""
    if _call.tried is not None:
        _call.tried.append(f"HTTP {response.status_code}")


class MissingAPIKey(ModelCallError):
    """Recording needs a key that is not set; `variable` names it (the plugin may skip on this)."""

    def __init__(self, variable: str, message: str) -> None:
        self.variable = variable
        super().__init__(message)


@dataclass(frozen=True)
class ClientSettings:
    """How to build a client for one call."""

    api_key: str
    max_retries: int
    replay: bool


def client_settings(target: Target) -> ClientSettings:
    """Settings for the current call environment (see module docstring)."""
    env = current_environment()
    if env is not None and env.replay_only(target.model_id):
        return ClientSettings(api_key=REPLAY_KEY, max_retries=0, replay=True)
    variables = [target.api_key_env] if target.api_key_env else list(wire_named(target.provider).key_variables)
    key = next((os.environ[v] for v in variables if os.environ.get(v)), "")
    if not key and target.base_url:
        key = LOCAL_KEY
    if not key:
        why = env.key_needed_for() if env is not None else "for live calls"
        raise MissingAPIKey(
            target.key_variable,
            f"{target.key_variable} is not set: calling {target.model_id} needs it {why}. Set "
            f"{target.key_variable}, or replay committed cassettes only with --record-mode=none.",
        )
    return ClientSettings(api_key=key, max_retries=call_policy().max_retries, replay=False)


_clients = Scoped("sdk_clients", dict)  # the run's clients; closed when its scope ends
_clients_lock = threading.Lock()


def cached_client(key: tuple[Any, ...], build: Callable[[], Any]) -> Any:
    """One SDK client per (provider, base URL, key, policy) and run, shared across its threads; the
    run's are closed when it ends (the process's at exit), so one run's pool never serves the next."""
    with _clients_lock:
        clients = _clients()
        client = clients.get(key)
        if client is None:
            if not clients:
                run_scope.current().on_leave(lambda: _close(clients))
            client = clients[key] = build()
        return client


def close_clients() -> None:
    """Close the clients of the run in force (their pooled connections)."""
    _close(_clients())


def _close(clients: dict[tuple[Any, ...], Any]) -> None:
    with _clients_lock:
        built = list(clients.values())
        clients.clear()
    for client in built:
        try:
            client.close()
        except Exception:  # noqa: BLE001 - closing must not fail the run's end
            pass


def endpoint(target: Target) -> str:
    """Where calls go, for messages."""
    return endpoint_for(target.provider, target.base_url)


def endpoint_for(provider: str, base_url: str | None) -> str:
    """A provider's base URL (without credentials), or its public endpoint when none is set."""
    return strip_userinfo(base_url) if base_url else wire_named(provider).default_base_url


def _status_message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
    return str(getattr(exc, "message", "") or exc)


def call_failed(exc: Exception, target: Target, timeout: float) -> ModelCallError:
    """An SDK or transport exception as a ModelCallError that says what to do (secrets redacted)."""
    stopped = find_in_chain(exc, RunStopped)
    if stopped is not None:
        return stopped  # type: ignore[return-value]
    env = current_environment()
    explained = env.explain(exc) if env is not None else None
    if explained is not None:
        return explained
    where, model, var = endpoint(target), target.model_id, target.key_variable
    left = _time_left()
    if isinstance(exc, CallDeadlineExceeded) or find_in_chain(exc, CallDeadlineExceeded) or (left is not None and left <= 0):
        if _call.tried is not None and not _call.tried or (_call.tried and _call.tried[-1].startswith("HTTP 2")):
            _call.tried.append("no answer (timed out)")
        return deadline_exceeded(model, where)
    status = getattr(exc, "status_code", None)
    detail = _status_message(exc)
    name = type(exc).__name__
    if status in (401, 403):
        text = f"{model}: authentication failed at {where} (HTTP {status}): check {var}. {detail}"
    elif status == 404:
        text = f"{model}: not found at {where} (HTTP 404): check the model id and base URL. {detail}"
    elif status == 429:
        text = (f"{model}: rate limited at {where} (HTTP 429) after {call_policy().max_retries} retries: lower -n, "
                f"raise --provider-retries or retry later. {detail}")
    elif status == 529 or (status is not None and status >= 500):
        text = (f"{model}: provider error or overload at {where} (HTTP {status}) after {call_policy().max_retries} "
                f"retries: raise --provider-retries or retry later. {detail}")
    elif status is not None:
        text = f"{model}: request rejected by {where} (HTTP {status}): {detail}"
    elif name == "APITimeoutError":
        text = (f"{model}: no reply from {where} within {timeout:g}s (timed out, after retries): raise "
                "--provider-timeout or retry later")
    elif name == "APIConnectionError":
        cause = exc.__cause__ or exc.__context__
        text = f"{model}: could not connect to {where}: {cause or exc}"
    else:
        text = f"{model}: call to {where} failed: {name}: {exc}"
    return ModelCallError(redact_text(text) + " Nothing was saved for this call.")


def bad_response(target: Target, status: int, problem: str, body_excerpt: str) -> ModelCallError:
    """A 2xx response that is not a complete provider answer, as a clear error (never stored)."""
    return ModelCallError(redact_text(
        f"{target.model_id}: {endpoint(target)} answered HTTP {status} but {problem}. Body starts: "
        f"{body_excerpt!r}. Check the base URL (a proxy or login page answers like this) and retry; "
        "nothing was saved for this call."
    ))


def _retry_timeout(self: Any, remaining_retries: int, options: Any, response_headers: Any = None) -> float:
    """The SDK hook for the wait between attempts, following our `CallPolicy`; raises (so no retry is made)
    when the call's deadline would pass before the next attempt could start."""
    if _call.stop is not None:
        raise _call.stop
    refuse_if_halted()
    attempt = max(0, options.get_max_retries(self.max_retries) - remaining_retries)
    wait = self._skilltransfer_policy.wait_before_retry(attempt, self._parse_retry_after_header(response_headers))
    if response_headers is None and _call.tried is not None:
        _call.tried.append("no answer (timed out or connection failed)")
    left = _time_left()
    if left is not None and wait >= left:
        raise CallDeadlineExceeded("the call deadline would pass before the next attempt")
    return wait


class NoCookies(CookieJar):
    """A cookie jar that keeps nothing: cookies a response sets are dropped, so requests carry none."""

    def extract_cookies(self, response: Any, request: Any) -> None:
        return None

    def set_cookie(self, cookie: Any) -> None:
        return None


_import_lock = threading.Lock()  # one SDK is imported at a time (two at once met pydantic half built)
_module_locks: dict[str, threading.Lock] = {}  # per module: the threads that need it wait for it alone
_module_locks_lock = threading.Lock()


def import_sdk(module: str) -> Any:
    """The SDK module; on its first import here, the objects then alive are frozen (module docstring).

    One SDK is imported at a time. A call waits for the SDK it needs alone: a module imported whole is
    returned at once, and a call that waited while its module was imported goes on as soon as that import
    ends, not after the next one (a call to the anthropic model does not wait for openai's import)."""
    loaded = _imported(module)
    if loaded is not None:
        return loaded
    with _module_locks_lock:
        lock = _module_locks.setdefault(module, threading.Lock())
    with lock:
        loaded = _imported(module)
        if loaded is not None:
            return loaded
        with _import_lock:
            if module in sys.modules:
                return sys.modules[module]
            sdk = importlib.import_module(module)
            gc.collect(1)  # the import's young garbage is freed, not frozen
            gc.freeze()
            return sdk


def _imported(module: str) -> Any:
    """`module` when it is imported whole (its import ended), else None."""
    loaded = sys.modules.get(module)
    if loaded is None or getattr(getattr(loaded, "__spec__", None), "_initializing", False):
        return None
    return loaded


HttpHook = Callable[[Any], None]  # an httpx event hook: called with the request or the response


def event_hooks(on_request: HttpHook | None = None) -> dict[str, list[HttpHook]]:
    """The httpx event hooks of every client that sends model calls (an SDK's, or a wire's own httpx client):
    nothing is sent once the run is stopped, each attempt gets only the time its call has left, and what it
    got is noted for the deadline message; `on_request` first, when given."""
    first = [on_request] if on_request is not None else []
    return {"request": [*first, _clamp_attempt], "response": [_note_response]}


def make_client(client_class: tuple[str, str], api_key: str, base_url: str | None, max_retries: int,
                timeout: float, policy: CallPolicy | None = None, transport: Any = None,
                on_request: HttpHook | None = None) -> Any:
    """An SDK client (the one place clients are built); the SDK is imported here, on first use.

    `transport` replaces the HTTP transport (the batch lane parks requests this way); `on_request`
    sees each request this client builds before anything else does (`fidelity` stops them there)."""
    module, name = client_class
    sdk = import_sdk(module)
    base = getattr(sdk, name)
    cls = type(f"SkillTransfer{name}", (base,), {"_calculate_retry_timeout": _retry_timeout,
                                                  "_skilltransfer_policy": policy or call_policy()})
    extra = {"transport": transport} if transport is not None else {}
    http_client = sdk.DefaultHttpxClient(event_hooks=event_hooks(on_request), cookies=NoCookies(), **extra)
    return cls(api_key=api_key, base_url=base_url, max_retries=max_retries, timeout=timeout,
               default_headers=DEFAULT_HEADERS, http_client=http_client)
