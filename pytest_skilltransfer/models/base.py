"""The one interface every model backend implements: a request in, a reply out.

A request carries a system text, a list of messages, optional tool specs and a sample id.
Backends translate it to their wire format (or, for the simulator, answer in process) and
return text, tool calls and token usage. Backends are registered by name; resolving an
unknown name is an error that lists the known names (never a silent fallback).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable, Literal, Protocol

from ..guards.errors import ModelCallError as ModelCallError, ModelError as ModelError  # the interface's errors
from ..guards.run_scope import Scoped
from ..pricing.usage import Usage as Usage  # re-exported: part of the backend interface


Role = Literal["user", "assistant", "tool"]


@dataclass(frozen=True)
class ToolSpec:
    """A tool offered to the model: name, description and JSON-schema parameters."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class ToolCall:
    """One tool call the model made: provider id, tool name and parsed arguments."""

    id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Message:
    """A conversation turn. Tool results are role "tool" with the call id they answer."""

    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str = ""


@dataclass(frozen=True)
class ResponseSchema:
    """A reply shape the model must follow: a JSON schema, forced through the provider's structured
    output (OpenAI `response_format`) or a forced tool call (Anthropic `tool_choice`)."""

    name: str
    description: str
    schema: dict[str, Any]


@dataclass(frozen=True)
class Request:
    """What the harness asks of a model. `sample_id` makes repeated samples distinct requests.

    `temperature` None sends none (the provider's default: greedy on the local server); a value is sent
    as the request's sampling temperature (the sampled A/A check), and the sample id is its seed."""

    system: str
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    max_tokens: int = 1024
    sample_id: int = 0
    response_schema: ResponseSchema | None = None
    temperature: float | None = None

    def canonical(self) -> dict[str, Any]:
        """A JSON-able form with stable key order, used for cache keys and diffs (no schema: key left out).

        Field by field (as `dataclasses.asdict` gives it, without its deep copies)."""
        data: dict[str, Any] = {
            "system": self.system,
            "messages": [{"role": m.role, "content": m.content,
                          "tool_calls": [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in m.tool_calls],
                          "tool_call_id": m.tool_call_id} for m in self.messages],
            "tools": [{"name": t.name, "description": t.description, "parameters": t.parameters} for t in self.tools],
            "max_tokens": self.max_tokens,
            "sample_id": self.sample_id,
        }
        schema = self.response_schema
        if schema is not None:
            data["response_schema"] = {"name": schema.name, "description": schema.description, "schema": schema.schema}
        if self.temperature is not None:  # left out when unset, so greedy requests keep their keys
            data["temperature"] = self.temperature
        return data

    @cached_property
    def _canonical_json(self) -> str:
        return json.dumps(self.canonical(), sort_keys=True)

    def key(self, model: str) -> str:
        """Cache key: the same model, request and sample id give the same key (the SHA-256 of
        `{"model": ..., "request": canonical}` as sorted JSON; the request's part is built once)."""
        blob = '{"model": ' + json.dumps(model) + ', "request": ' + self._canonical_json + "}"
        return hashlib.sha256(blob.encode()).hexdigest()


@dataclass(frozen=True)
class Reply:
    """A model's answer: final text and/or tool calls, with usage and the model id that answered."""

    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    stop_reason: str = ""  # as the provider sent it: end_turn, max_tokens, length, refusal, pause_turn, ...
    refusal: str = ""  # a refusal message the provider sent apart from the text (OpenAI's `message.refusal`)


class Model(Protocol):
    """A backend bound to one model id."""

    name: str  # the name the user gave (e.g. "sim-small", "haiku")
    model_id: str  # the resolved id that is recorded and priced (e.g. "claude-haiku-5-5")

    def complete(self, request: Request) -> Reply:
        """Answer one request. Raises ModelCallError on provider or replay failures."""
        ...


@dataclass(frozen=True)
class ModelRef:
    """A model as one run knows it, resolved once: the name the user gave (node ids, `expect`, rerun
    commands), the id that is recorded, priced and grouped by, and who serves it."""

    name: str
    model_id: str
    provider: str  # "anthropic", "openai", "sim", or a registered family's own

    @classmethod
    def of(cls, name: str, model: "Model") -> "ModelRef":
        """The reference of `model`, resolved from `name`."""
        target = getattr(model, "target", None)
        provider = (getattr(target, "provider", None) or getattr(model, "provider", None)
                    or getattr(model, "family", None) or "custom")
        return cls(name, model.model_id, str(provider))


def find_in_chain(exc: BaseException, kind: type) -> BaseException | None:
    """The first exception of `kind` in the cause/context chain of `exc`."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, kind):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


ModelFactory = Callable[[str], Model]

Family = tuple[str, Callable[[str], bool], ModelFactory, "str | Callable[[], str]"]
_FAMILIES: list[Family] = []  # registered by code as it is imported (the built-in backends first)
_run_families: Scoped[list[Family]] = Scoped("model_families", list)  # registered by this run's hook


def register_family(
    family: str, matches: Callable[[str], bool], factory: ModelFactory, help_text: str | Callable[[], str],
    for_run: bool = False,
) -> None:
    """Register a backend family: `matches(name)` says whether it serves a name; `help_text` (or a function
    giving it, read when the names are listed) says which names those are; `for_run`: only for the run
    in progress (a `pytest_skilltransfer_configure` hook's), else for the process (code that registers as
    it is imported)."""
    families = _run_families() if for_run else _FAMILIES
    families[:] = [f for f in families if f[0] != family]
    families.append((family, matches, factory, help_text))


def _families() -> list[Family]:
    """The process's families, then this run's (a run's family replaces the process's of the same name)."""
    run = _run_families()
    names = {f[0] for f in run}
    return [f for f in _FAMILIES if f[0] not in names] + run


def registered_names() -> list[str]:
    """Human-readable list of the names each registered family accepts."""
    return [text() if callable(text) else text for _, _, _, text in _families()]


def build_registered(name: str) -> Model:
    """The model of the first registered family serving `name`, or ModelError listing the known names
    (`models.registry.resolve_model` registers the built-in families first)."""
    for _, matches, factory, _ in _families():
        if matches(name):
            return factory(name)
    known = "\n  ".join(registered_names())
    raise ModelError(f"unknown model {name!r}. Known models:\n  {known}")
