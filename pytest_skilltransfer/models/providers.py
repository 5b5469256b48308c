"""Real providers: registers the family of models behind an HTTP API with the model registry.

Names served: aliases (`haiku`, `sonnet`, `opus`, `luna`, `sol`, `astra`, ... and the user's
`[tool.skilltransfer.models]` table, see `configure_aliases`), explicit `<wire>:<model-id>` for every
registered wire format (`anthropic:`, `openai:`, `models.wire`), with `@<base-url>` for a compatible
server, and bare model ids listed by the installed SDKs. A model speaks its wire: the wire builds, sends
and reads its calls. Importing this module does not import the SDKs.

Concurrency: each call holds a slot of its model's adaptive limiter (`limiter`), at most
`DEFAULT_CONCURRENCY` calls per model unless configured; the local llama server serves one at a time.
"""

from __future__ import annotations

import json
import threading
from contextlib import contextmanager, nullcontext
from dataclasses import replace
from typing import Any, Callable, Iterator
from urllib.parse import urlparse

from ..guards.redaction import redact_json, register_key_variables, strip_userinfo
from ..guards.run_scope import Scoped
from ..pricing.usage import ANOTHER_RUN
from . import aliases, fidelity, spend_gate
from .aliases import Target
from .base import (
    Model,
    ModelCallError,
    ModelError,
    Reply,
    Request,
    ToolCall,
    build_registered,
    find_in_chain,
    register_family,
)
from .batch import (
    BATCH_ANSWER,
    BATCH_CONCURRENCY,
    BatchLaneError,
    SendSynchronously,
    active_lane,
    batch_client,
    group_for,
)
from .limiter import LIMITERS, observe_client
from .sdk_common import (
    CallDeadlineExceeded,
    bad_response,
    cached_client,
    call_deadline,
    call_failed,
    call_policy,
    client_settings,
    current_environment,
    import_sdk,
    take_paid_by_another_run,
)
from .validity import excerpt, read_answer
from .wire import Wire, wire_named

FAMILY = "providers"
MAX_ALIAS_DEPTH = 8
DEFAULT_CONCURRENCY = 8  # concurrent calls per cloud model (the limiter lowers it on rate limits)
LOCAL_SERVER_SLOTS = 1  # the local llama server runs with one slot (`-np 1`): calls queue there anyway


def _send(wire: Wire, client: Any, target: Target, request: Request) -> Any:
    """One call of `request` through `client`, in the wire's format under the run's call policy."""
    policy = call_policy()
    return wire.send_body(client, target.model_id, wire.request_params(target, request, policy), policy)


class ProviderModel:
    """A model behind a real HTTP API, in its registered wire format (`models.wire`: Anthropic Messages,
    OpenAI Chat Completions, or another registered one)."""

    records_http = True  # calls go through the SDKs, so they belong in cassettes

    def __init__(self, name: str, target: Target, server_slots: int | None = None) -> None:
        self.name = name
        self.model_id = target.model_id
        self.target = target
        self.server_slots = server_slots  # how many calls the server can serve at once, when known
        from ..pricing.prices import mark_lane

        if self.service_tier == "flex":
            mark_lane(self.model_id, "flex")
        elif target.lane == "batch" and server_slots is None:
            mark_lane(self.model_id, "batch")  # its own lane: priced there by plans and reports

    @property
    def service_tier(self) -> str | None:
        """The service tier of this model's calls (its own, else the run's unless the model names another
        lane); None for a wire without tiers (Anthropic)."""
        return wire_named(self.target.provider).service_tier(self.target, call_policy().service_tier)

    @property
    def max_concurrency(self) -> int:
        """How many calls to this model may be in flight at once (configured, or the default; in batch
        mode every call of a step, since they wait for one batch rather than hold a connection)."""
        lane, collect_only = self._batches()
        if lane is not None and not collect_only:
            return BATCH_CONCURRENCY
        return LIMITERS.maximum(self.model_id, DEFAULT_CONCURRENCY, self.server_slots)

    def _batches(self) -> tuple[Any, bool]:
        """(the batch lane, whether this model only collects from it), or (None, False) when the lane is off
        or the model cannot use it (the local llama server). A model goes to the lane with its own
        `lane = "batch"`, or under `--transfer-batch` unless its own lane is another; its calls are then
        priced in the batch lane. Any other model only collects: a request a batch of an earlier run holds
        is collected from it rather than paid for again, at that model's own prices."""
        lane = active_lane()
        if lane is None or self.server_slots is not None or wire_named(self.target.provider).batch_api is None:
            return None, False
        goes = self.target.lane not in ("standard", "flex") and (self.target.lane == "batch"
                                                                 or lane.settings.every_model)
        if not (goes and lane.settings.submit):
            return lane, True
        from ..pricing.prices import mark_lane

        mark_lane(self.model_id, "batch")
        return lane, False

    def __repr__(self) -> str:
        return strip_userinfo(f"ProviderModel({self.name!r} -> {self.target})")

    def _client(self, wire: Wire) -> Any:
        s = client_settings(self.target)  # raises MissingAPIKey when recording without a key
        policy = call_policy()
        key = (self.target.provider, self.target.base_url, s.api_key, s.max_retries, policy)
        if wire.sdk:  # imported before the clients' lock: a call waiting for one SDK holds up no other SDK's client
            import_sdk(wire.sdk)
        return cached_client(key, lambda: spend_gate.gate_client(observe_client(wire.make_client(
            s.api_key, self.target.base_url, s.max_retries, policy.timeout_s, policy))))

    def complete(self, request: Request) -> Reply:
        """One API call; every failure is a ModelCallError that says what to do.

        The response's JSON is read once and checked first: a 2xx body that is not a complete provider
        answer is an error here (the cassettes never store it either); the reply is read from that
        JSON (the wire's `parse_reply`, not the SDK's types). The reply's texts are redacted.
        Under a budget every request sent reserves its worst case first (`spend_gate`) and the
        answered one is settled to its usage here.
        """
        wire = wire_named(self.target.provider)
        lane, collect_only = self._batches()
        replayed = self._replay_without_sdk(wire, request)
        if replayed is not None:
            return replayed
        env = current_environment()
        if env is not None:
            env.prepare_sdk_call()
        self._start_server_on_demand(env, request)
        client = self._client(wire)
        settings = client_settings(self.target) if lane is not None else None
        batched = lane is not None and settings is not None and not settings.replay
        # one bound for a call and its retries (a batched call waits for its batch instead)
        with spend_gate.tracking() as spend, nullcontext() if batched else call_deadline(call_policy()):
            try:
                http, live = None, False
                take_paid_by_another_run()
                if lane is not None and settings is not None and not settings.replay:
                    with answering_in("batch"):
                        http = self._through_batch(lane, wire, settings.api_key, request, collect_only)
                    live = http is not None and BATCH_ANSWER in http.extensions
                paid_in = "batch" if live else None  # where a live answer was paid (a replay: nowhere)
                if http is None:  # a synchronous call (after the lane: bounded by its own deadline)
                    with call_deadline(call_policy()) if batched else nullcontext(), answering_in(self.sync_lane), \
                            LIMITERS.get(self.model_id, DEFAULT_CONCURRENCY, self.server_slots).slot() as call:
                        http = _send(wire, client, self.target, request)
                    live = call.live
                    paid_in = self.sync_lane if live else None
                if take_paid_by_another_run() and paid_in is None:
                    paid_in = ANOTHER_RUN  # a concurrent recorder of the seed sent it and journaled its answer
                answer, problem = read_answer(http.url.path, http.status_code, http.content)
                if problem is not None:
                    raise bad_response(self.target, http.status_code, problem, excerpt(http.content))
            except spend_gate.Refused as refused:
                raise refused.error from None
            except ModelCallError as err:
                if isinstance(err, CallDeadlineExceeded):
                    raise call_failed(err, self.target, call_policy().timeout_s) from err
                raise
            except Exception as err:  # noqa: BLE001 - SDK and transport errors alike
                raise call_failed(err, self.target, call_policy().timeout_s) from err
            reply = redact_reply(wire.parse_reply(answer, self.model_id))
            if spend is not None:
                spend.settle(reply.usage)
            if paid_in is not None:
                reply = self._priced_where_paid(reply, paid_in)
        return reply

    @property
    def sync_lane(self) -> str:
        """The price lane of this model's synchronous calls (flex with OpenAI's flex tier, else standard)."""
        return "flex" if self.service_tier == "flex" else "standard"

    def _priced_where_paid(self, reply: Reply, lane: str) -> Reply:
        """The reply with its usage marked as paid in `lane` when that is not the model's lane in this run
        (a batch lane's synchronous fallback, a batch of an earlier run collected without the lane), so
        every bill prices it at the rate really paid (`Usage.paid_in`)."""
        from ..pricing.prices import lane_of

        if lane == lane_of(self.model_id):
            return reply
        return replace(reply, usage=reply.usage.paid_in(lane))

    def _start_server_on_demand(self, env: Any, request: Request) -> None:
        """Start the server behind this model's URL (see `start_on_demand`) unless the call will replay."""
        start = _starters().get(self.target.base_url or "")
        if start is None:
            return
        installed = fidelity.fingerprint(self.target.provider)
        if env is not None and installed is not None and hasattr(env, "will_replay") \
                and env.will_replay(self.model_id, installed, fidelity.request_key(self.target, request)):
            return
        start()

    def _replay_without_sdk(self, wire: Wire, request: Request) -> Reply | None:
        """The recorded answer, read without the SDK, when this call can only be replayed and the
        cassette vouches that the installed SDK builds exactly the bytes it looks up (`fidelity`);
        None sends the call down the path of record (the SDK through vcrpy)."""
        env = current_environment()
        if env is None or not env.replay_only(self.model_id):
            return None
        installed = fidelity.fingerprint(self.target.provider)
        if installed is None:
            return None
        key = fidelity.request_key(self.target, request)
        found = env.recorded_answer(self.model_id, installed, key)
        if found is None:
            return None
        status, body = found
        answer, problem = read_answer(key[1], status, body)
        if problem is not None:
            raise bad_response(self.target, status, problem,
                               excerpt(body if isinstance(body, (bytes, str)) else json.dumps(body)))
        return redact_reply(wire.parse_reply(answer, self.model_id))

    def _through_batch(self, lane: Any, wire: Wire, api_key: str, request: Request, collect_only: bool) -> Any:
        """The call through the batch lane; None when it is to be sent synchronously (fallback `sync`, or
        a model that only collects and a request no batch holds)."""
        group = group_for(self.target.provider, self.target.base_url, self.model_id, api_key)
        if not lane.may_take(group, collect_only):
            return None  # no batch can hold it: skip building the request for the lane
        client = batch_client(lane, group, wire, self.target.base_url, collect_only)
        try:
            return _send(wire, client, self.target, request)
        except Exception as err:  # noqa: BLE001 - the lane's own errors travel inside the SDK's
            if find_in_chain(err, SendSynchronously) is not None:
                return None
            lane_error = find_in_chain(err, BatchLaneError)
            if lane_error is not None:
                raise lane_error from None
            raise


def redact_reply(reply: Reply) -> Reply:
    """The reply with secrets redacted from its texts and tool arguments (as its cassette stores them),
    all of them in one pass (`redact_json`: the key values looked up and the detectors screened once)."""
    parts = [reply.text, reply.refusal, [c.arguments for c in reply.tool_calls]]
    clean = redact_json(parts)
    if clean == parts:
        return reply
    text, refusal, arguments = clean
    calls = tuple(ToolCall(c.id, c.name, a) for c, a in zip(reply.tool_calls, arguments))
    return replace(reply, text=text, refusal=refusal, tool_calls=calls)


_starters: Scoped[dict[str, Callable[[], None]]] = Scoped("local_starters", dict)  # the run's (`guards.run_scope`)


def start_on_demand(base_urls: tuple[str, ...], start: Callable[[], None] | None) -> None:
    """Call `start()` before the first call to a model at one of `base_urls` that its cassette cannot
    replay (a local model's server, started only when a call is to be recorded); None forgets them."""
    starters = _starters()
    for url in base_urls:
        if start is None:
            starters.pop(url, None)
        else:
            starters[url] = start


_answering = threading.local()


@contextmanager
def answering_in(lane: str) -> Iterator[None]:
    """Mark the calls this thread sends meanwhile as paid in `lane` (`answer_lane` reads it)."""
    before = getattr(_answering, "lane", None)
    _answering.lane = lane
    try:
        yield
    finally:
        _answering.lane = before


def answer_lane() -> str | None:
    """The lane the call this thread is sending is paid in (None outside `ProviderModel.complete`): the
    answers a cassette records are priced where they were paid (the live progress line)."""
    return getattr(_answering, "lane", None)


def is_loopback_url(url: str | None) -> bool:
    host = (urlparse(url).hostname or "") if url else ""
    return host in ("localhost", "::1") or host.startswith("127.")


def _target_for(name: str) -> Target | str:
    """Follow aliases to a Target, or to a name another family serves (e.g. `sim-small`)."""
    current, seen = name, [name]
    for _ in range(MAX_ALIAS_DEPTH):
        found = aliases.lookup(current)
        if isinstance(found, Target):
            return found
        if found is None:
            return current
        if found in seen:
            raise ModelError(f"model alias loop: {' -> '.join(seen + [found])}")
        seen.append(found)
        current = found
    raise ModelError(f"model alias chain too long: {' -> '.join(seen)}")


def build_model(name: str) -> Model:
    """The backend for a name this family serves (see module docstring)."""
    target = _target_for(name)
    if isinstance(target, str):
        try:
            return build_registered(target)
        except ModelError as err:
            raise ModelError(f"model alias {name!r} points to {target!r}, which is unknown.\n{err}") from err
    local_ids = {spec.split(":", 1)[1].split("@")[0] for spec in aliases.local_aliases().values()}
    if target.free or target.model_id in local_ids:
        from ..pricing.prices import mark_free

        mark_free(target.model_id)  # declared free, or the built-in local model; a loopback URL alone is not
    return ProviderModel(name, target, server_slots=LOCAL_SERVER_SLOTS if target.model_id in local_ids else None)


def _register() -> None:
    register_family(FAMILY, aliases.is_known, build_model, aliases.help_text)  # the run's aliases, when listed


def configure_aliases(table: dict[str, Any]) -> None:
    """Apply a `[tool.skilltransfer.models]` table: alias -> spec string or {provider, model, base_url}.

    User entries extend or override the built-in aliases; calling again replaces the previous table.
    """
    aliases.set_user_aliases(table)
    register_key_variables([v["api_key_env"] for v in (table or {}).values()
                            if isinstance(v, dict) and isinstance(v.get("api_key_env"), str)])
    _register()


def known_aliases() -> dict[str, str]:
    """Every alias and what it points to."""
    return aliases.all_aliases()


_register()
