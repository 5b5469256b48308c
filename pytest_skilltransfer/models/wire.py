"""A wire format is a value: the `Wire` protocol and the registry every module asks "which provider".

A wire is what one HTTP API speaks: its name (the `provider` of `<name>:<model-id>` specs and of the models
table), its API key variables, its public base URL, the path a call goes to, how a `Request` becomes a
body and a reply body becomes a `Reply`, when a 2xx body is a complete answer, its stop reasons in the
project's stop kinds (`models.stops`), which model a recorded request is for (a body field or the URL),
the headers that carry credentials, its Batch API, and how its client is built. Each is defined once, on
the wire; the providers, fidelity, the batch lane, validity, stops, the cassettes, the replay-miss message,
answer pricing and scrubbing ask `wire_named` / `wire_of_path` instead of testing names.

The built-in `anthropic` (Messages API) and `openai` (Chat Completions) wires register when the `models`
package is imported (`models/__init__.py`); this module imports none of them. A wire registered by other
code (`register_wire`: a module as it is imported, or a run's `pytest_skilltransfer_configure` hook with
`registry.add_wire`, for that run only) is served the same way by every name-resolving path:
`<name>:<model-id>@<base-url>` and a models-table entry with `provider = "<name>"`.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Callable, Mapping, Protocol

from ..guards.errors import ModelError
from ..guards.redaction import register_key_variables
from ..guards.run_scope import Scoped

if TYPE_CHECKING:
    from .aliases import Target
    from .base import Reply, Request
    from .sdk_common import CallPolicy


class Wire(Protocol):
    """One HTTP API's format, as the rest of the package needs it."""

    name: str  # the provider word: `<name>:<model-id>`, the models table's `provider`, cassette groups
    sdk: str | None  # the SDK distribution (and module) that builds its requests; None: the wire sends them itself
    key_variables: tuple[str, ...]  # where the API key is read from, the documented variable first
    default_base_url: str  # the public endpoint, when a model names none
    secret_headers: frozenset[str]  # headers of its requests or responses that carry credentials or ids (never stored)
    kept_request_headers: frozenset[str]  # request headers a cassette keeps (they change what is answered)
    stop_kinds: Mapping[str, str]  # its stop reasons -> the project's stop kinds (`models.stops.stop_kind`)
    service_tiers: tuple[str, ...]  # the service tiers its models may name (empty: none)
    batch_api: Callable[[Any], Any] | None  # its Batch API on a client (`models.batch.apis.BatchApi`), or None

    def call_path(self, base_path: str, model_id: str) -> str:
        """The URL path of a synchronous call to `model_id` at a base URL whose path is `base_path`."""
        ...

    def is_call_path(self, path: str) -> bool:
        """Whether `path` (a recorded request's) is one of this wire's synchronous calls."""
        ...

    def listed_models(self) -> tuple[str, ...]:
        """The model ids its installed SDK lists, read without importing it (empty: none)."""
        ...

    def builtin_aliases(self, listed: tuple[str, ...]) -> dict[str, str]:
        """Short names for its vendor's newest models among `listed` (`haiku` -> a Claude id), alias -> model id."""
        ...

    def serves_bare_id(self, name: str, listed: tuple[str, ...]) -> bool:
        """Whether a bare model id (no `<wire>:` prefix) is one of its models (`listed` is `listed_models()`)."""
        ...

    def model_of(self, path: str, body: Any) -> str | None:
        """The model a request to `path` with JSON `body` is for (a body field, or the URL), None if unnamed."""
        ...

    def request_params(self, target: Target, request: Request, policy: CallPolicy) -> dict[str, Any]:
        """The JSON body of `request` for `target` under the run's call `policy`."""
        ...

    def max_output(self, body: dict[str, Any]) -> int | None:
        """The most output tokens a request body lets the model write (a budget's worst case), None if unset."""
        ...

    def make_client(self, api_key: str, base_url: str | None, max_retries: int, timeout: float, policy: CallPolicy,
                    transport: Any = None, on_request: Callable[[Any], None] | None = None) -> Any:
        """A client that sends this wire's calls (`transport` replaces its HTTP transport; `on_request` sees each
        request it builds first); it retries by `policy` and closes with `close()`."""
        ...

    def send_body(self, client: Any, model_id: str, params: dict[str, Any], policy: CallPolicy) -> Any:
        """Send one built body (of a call to `model_id`) through `client`; returns the HTTP response (httpx's),
        not yet checked."""
        ...

    def answer_problem(self, answer: dict[str, Any]) -> str | None:
        """Why a 2xx JSON object is not a complete answer of this wire, or None when it is one."""
        ...

    def parse_reply(self, answer: dict[str, Any], model_id: str) -> Reply:
        """A complete answer's JSON as a `Reply` (text, tool calls, usage, stop reason)."""
        ...

    def service_tier(self, target: Target, run_tier: str | None) -> str | None:
        """The service tier of `target`'s requests (its own, else the run's), None when the wire has none."""
        ...


class SuffixWire:
    """What a wire shares whose SDK posts every call to one path suffix of the base URL and names the model in the
    body's `model` field (both built-in wires); a subclass sets `SUFFIX` and the rest of `Wire`."""

    SUFFIX = ""

    def call_path(self, base_path: str, model_id: str) -> str:
        return base_path.rstrip("/") + self.SUFFIX

    def is_call_path(self, path: str) -> bool:
        return path.endswith(self.SUFFIX)

    def model_of(self, path: str, body: Any) -> str | None:
        model = body.get("model") if isinstance(body, dict) else None
        return model if isinstance(model, str) and model else None


_WIRES: dict[str, Wire] = {}  # registered by code as it is imported (the built-in wires first)
_run_wires: Scoped[dict[str, Wire]] = Scoped("wires", dict)  # registered by this run's hook (`guards.run_scope`)
_process_wires: list[tuple[Wire, ...]] = [()]  # `_WIRES`' values, kept as a tuple for `wires` (asked per call)
_lock = threading.Lock()


def register_wire(wire: Wire, for_run: bool = False) -> Wire:
    """Register (or replace) a wire by its name: for the process (code that registers as it is imported), or
    with `for_run` for the run in progress only (a `pytest_skilltransfer_configure` hook's). Its key variables
    become secrets redaction knows, for the process."""
    register_key_variables(wire.key_variables)
    run = _run_wires() if for_run else None
    with _lock:
        (_WIRES if run is None else run)[wire.name] = wire
        _process_wires[0] = tuple(_WIRES.values())
    return wire


def unregister_wire(name: str) -> None:
    """Forget a wire registered for the process (a test's, when it is done)."""
    with _lock:
        _WIRES.pop(name, None)
        _process_wires[0] = tuple(_WIRES.values())


def wires() -> tuple[Wire, ...]:
    """Every registered wire, the built-in ones first; a run's wire replaces the process's of the same name."""
    run = _run_wires()
    with _lock:
        if not run:
            return _process_wires[0]
        return tuple(w for name, w in _WIRES.items() if name not in run) + tuple(run.values())


def wire_names() -> tuple[str, ...]:
    """The names `<name>:<model-id>` and the models table's `provider` accept."""
    return tuple(w.name for w in wires())


def wire_named(name: str) -> Wire:
    """The wire called `name`, or a ModelError naming the registered ones."""
    run = _run_wires()
    with _lock:
        found = run.get(name) or _WIRES.get(name)
    if found is None:
        raise ModelError(f"unknown provider {name!r}: the registered wire formats are {', '.join(wire_names())}")
    return found


def wire_of_path(path: str) -> Wire | None:
    """The wire whose synchronous calls go to `path`, or None (batch traffic, another API)."""
    return next((w for w in wires() if w.is_call_path(path)), None)


def model_of_request(path: str, body: Any) -> str:
    """The model a recorded request is filed under: its wire's rule (a body field or the URL), else the body's
    `model` field, else "unknown-model"."""
    wire = wire_of_path(path)
    model = wire.model_of(path, body) if wire is not None else None
    if model is None and wire is None and isinstance(body, dict):
        model = body.get("model")
    return model if isinstance(model, str) and model else "unknown-model"


def worst_case_of(path: str, body: dict[str, Any]) -> tuple[str, int | None]:
    """(model id, most output tokens) of a request about to be sent, by its wire's rules (the body's `model`
    and `max_tokens` or `max_completion_tokens` when no registered wire calls `path`, or none is given: a
    batch lane's parked body)."""
    wire = wire_of_path(path)
    if wire is None:
        output = body.get("max_tokens") or body.get("max_completion_tokens")
        return model_of_request(path, body), output if isinstance(output, int) else None
    return model_of_request(path, body), wire.max_output(body)


def key_variable(provider: str) -> str:
    """The documented API key variable of a provider's wire."""
    return wire_named(provider).key_variables[0]


def secret_headers() -> frozenset[str]:
    """The credential and id headers every registered wire names."""
    return frozenset().union(*(w.secret_headers for w in wires()))


def kept_request_headers() -> frozenset[str]:
    """The request headers some registered wire needs kept in a cassette."""
    return frozenset().union(*(w.kept_request_headers for w in wires()))


def sdk_modules() -> tuple[str, ...]:
    """The SDK modules the registered wires send through."""
    return tuple(w.sdk for w in wires() if w.sdk)
