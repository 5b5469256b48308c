"""Model names: short aliases, explicit `provider:model[@base-url]` specs, and a user table.

Built-in aliases come from the installed SDKs' model lists, read as text so nothing heavy is
imported: `haiku`, `sonnet`, `opus` (and any other Claude family) name the newest
`claude-<family>-<major>[-<minor>]` id in anthropic's `ModelParam`; `luna`, `sol`, `astra` name the
tiers of the newest `gpt-<major>-<tier>` generation in openai's `ChatModel` (point releases such as
`gpt-6.2-sol` are reached by their full id). A pyproject table `[tool.skilltransfer.models]`
extends or overrides them through `configure_aliases`.
"""

from __future__ import annotations

import importlib.util
import re
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from ..guards.redaction import register_secret, strip_userinfo
from ..guards.run_scope import Scoped
from .base import ModelError
from .wire import Wire, key_variable, wire_named, wire_names, wires

Provider = str  # the name of a registered wire format (`models.wire`): "anthropic", "openai", ...

# Used only when the SDK's model list cannot be read (the SDK is missing or its layout changed).
_FALLBACK_ALIASES = {
    "haiku": "anthropic:claude-haiku-5-5",
    "sonnet": "anthropic:claude-sonnet-5-5",
    "opus": "anthropic:claude-opus-5-5",
    "luna": "openai:gpt-6-luna",
    "sol": "openai:gpt-6-sol",
    "astra": "openai:gpt-6-astra",
}
DEFAULT_LOCAL_URL = "http://127.0.0.1:8080"  # llama-server's own default address
_CLAUDE_ID = re.compile(r"^claude-([a-z]+)-(\d+)(?:-(\d+))?$")
_GPT_ID = re.compile(r"^gpt-(\d+)-([a-z]+)$")
_LITERAL = re.compile(r'"([A-Za-z0-9][A-Za-z0-9._:-]*)"')


@dataclass(frozen=True)
class Target:
    """Where a name points: the provider, the model id sent and recorded, an optional base URL."""

    provider: Provider
    model_id: str
    base_url: str | None = None
    api_key_env: str | None = None
    service_tier: str | None = None  # one of its wire's tiers (OpenAI: "flex", "default"; None: the run's)
    free: bool = False  # declared to cost nothing (`free = true`): priced at 0 unless a price is given
    lane: str | None = None  # "standard", "flex" (OpenAI) or "batch": this model's own lane (None: the run's)

    @property
    def key_variable(self) -> str:
        """The environment variable holding the API key for this target."""
        return self.api_key_env or key_variable(self.provider)


def sdk_literals(package: str, relative: str) -> list[str]:
    """The string literals in one SDK source file, in file order, without importing the SDK."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return []
    if spec is None or not spec.submodule_search_locations:
        return []
    path = Path(list(spec.submodule_search_locations)[0]) / relative
    try:
        return _LITERAL.findall(path.read_text(encoding="utf-8"))
    except OSError:
        return []


def sdk_model_ids() -> dict[str, tuple[str, ...]]:
    """Model ids listed by the installed SDKs, per wire (`Wire.listed_models`)."""
    return _listed(wires())


@lru_cache(maxsize=8)
def _listed(registered: tuple[Wire, ...]) -> dict[str, tuple[str, ...]]:
    return {wire.name: tuple(wire.listed_models()) for wire in registered}


def newest_claude_aliases(ids: tuple[str, ...]) -> dict[str, str]:
    """`family -> newest undated claude-<family>-<major>[-<minor>]` among `ids`."""
    best: dict[str, tuple[tuple[int, int], str]] = {}
    for model_id in ids:
        match = _CLAUDE_ID.match(model_id)
        if not match:
            continue
        family, major, minor = match.group(1), int(match.group(2)), int(match.group(3) or 0)
        if family not in best or (major, minor) > best[family][0]:
            best[family] = ((major, minor), model_id)
    return {family: model_id for family, (_, model_id) in sorted(best.items())}


def newest_gpt_aliases(ids: tuple[str, ...]) -> dict[str, str]:
    """`tier -> gpt-<major>-<tier>` for the tiers of the newest major (base releases only)."""
    tiers: dict[int, dict[str, str]] = {}
    for model_id in ids:
        match = _GPT_ID.match(model_id)
        if match:
            tiers.setdefault(int(match.group(1)), {})[match.group(2)] = model_id
    return dict(sorted(tiers[max(tiers)].items())) if tiers else {}


def builtin_aliases() -> dict[str, str]:
    """Built-in alias -> spec: the vendors' newest models and the local model."""
    return {**sdk_aliases(), **local_aliases()}


_local_url: Scoped[list[str | None]] = Scoped("local_server_url", lambda: [None])  # the run's (`guards.run_scope`)


def set_local_server_url(url: str | None) -> None:
    """Point the run's local model aliases at the server a run started at `url` (None: forget it). Kept on
    the run's scope, not in the environment, so nothing of it reaches another run in the same process."""
    _local_url()[0] = url


def local_aliases() -> dict[str, str]:
    """The local SmolLM2 server (see `pytest_skilltransfer.models.local`), once per protocol.

    The base URL is read at each lookup: the server this run started (`set_local_server_url`), else the
    one SKILLTRANSFER_LOCAL_URL names, else llama-server's default address. The Anthropic-protocol alias
    records under its own id so its calls never share a cache entry or a cassette with the OpenAI-protocol ones.
    """
    from .local import LOCAL_MODEL_ALIAS, env_base_url

    root = _local_url()[0] or env_base_url() or DEFAULT_LOCAL_URL
    return {
        LOCAL_MODEL_ALIAS: f"openai:{LOCAL_MODEL_ALIAS}@{root}/v1",
        f"{LOCAL_MODEL_ALIAS}-anthropic": f"anthropic:{LOCAL_MODEL_ALIAS}-anthropic@{root}",
    }


def sdk_aliases() -> dict[str, str]:
    """Vendor alias -> spec, derived from the installed SDKs (`Wire.builtin_aliases`; fallback table if unreadable)."""
    return _sdk_aliases(wires())


@lru_cache(maxsize=8)
def _sdk_aliases(registered: tuple[Wire, ...]) -> dict[str, str]:
    ids = _listed(registered)
    table: dict[str, str] = {}
    for wire in registered:
        table.update({k: f"{wire.name}:{v}" for k, v in wire.builtin_aliases(ids[wire.name]).items()})
    for alias, spec in _FALLBACK_ALIASES.items():
        table.setdefault(alias, spec)
    return table


SERVICE_TIERS = ("flex", "default")
MODEL_LANES = ("standard", "flex", "batch")
_lock = threading.Lock()
_user_aliases: Scoped[dict[str, str | dict[str, Any]]] = Scoped("aliases", dict)  # the run's table


def set_user_aliases(table: dict[str, Any]) -> None:
    """Replace the user alias table (values: a spec string or {provider, model, base_url, api_key_env})."""
    checked: dict[str, str | dict[str, Any]] = {}
    for alias, value in (table or {}).items():
        if not isinstance(alias, str) or not alias:
            raise ModelError(f"[tool.skilltransfer.models]: alias names must be strings, got {alias!r}")
        if isinstance(value, str) and value:
            checked[alias] = value
        elif isinstance(value, dict) and isinstance(value.get("model"), str):
            if value.get("provider", "openai") not in wire_names():
                raise ModelError(
                    f"[tool.skilltransfer.models] {alias}: provider must be one of {', '.join(wire_names())}"
                )
            tiers = wire_named(value.get("provider", "openai")).service_tiers
            tier = value.get("service_tier")
            if tier is not None and tier not in tiers:
                raise ModelError(
                    f"[tool.skilltransfer.models] {alias}: service_tier = {tier!r} is not offered; OpenAI models "
                    f"take one of {', '.join(SERVICE_TIERS)}")
            lane = value.get("lane")
            if lane is not None and (lane not in MODEL_LANES or (lane == "flex" and "flex" not in tiers)):
                raise ModelError(
                    f"[tool.skilltransfer.models] {alias}: lane = {lane!r} is not offered; use one of "
                    f"{', '.join(MODEL_LANES)} (flex: OpenAI models only)")
            if not isinstance(value.get("free", False), bool):
                raise ModelError(f"[tool.skilltransfer.models] {alias}: free = {value['free']!r}: use true or false")
            checked[alias] = dict(value)
        else:
            raise ModelError(
                f"[tool.skilltransfer.models] {alias} = {value!r}: use a name such as "
                '"anthropic:claude-haiku-5-5" or "openai:my-model@http://127.0.0.1:8080/v1", or a table '
                '{ provider = "openai", model = "...", base_url = "...", api_key_env = "..." }'
            )
    with _lock:
        _user_aliases().clear()
        _user_aliases().update(checked)


def all_aliases() -> dict[str, str]:
    """Every alias with a printable target (user entries override built-in ones)."""
    table = dict(builtin_aliases())
    with _lock:
        for alias, value in _user_aliases().items():
            table[alias] = value if isinstance(value, str) else _describe(value)
    return dict(sorted(table.items()))


def _describe(entry: dict[str, Any]) -> str:
    spec = f"{entry.get('provider', 'openai')}:{entry['model']}"
    return f"{spec}@{entry['base_url']}" if entry.get("base_url") else spec


def parse_explicit(spec: str) -> Target | None:
    """`<wire>:<id>` (`anthropic:<id>`, `openai:<id>`, a registered wire's), optionally `@http(s)://base-url`;
    None if not of that form."""
    provider, sep, rest = spec.partition(":")
    if not sep or provider not in wire_names() or not rest:
        return None
    model_id, base_url = rest, None
    at = rest.rfind("@http")
    if at > 0 and re.match(r"@https?://", rest[at:]):
        model_id, base_url = rest[:at], rest[at + 1 :]
    if not model_id:
        return None
    register_url_credentials(base_url)
    return Target(provider=provider, model_id=model_id, base_url=base_url)


def register_url_credentials(url: str | None) -> None:
    """Make the userinfo of a base URL (`http://user:password@host`) a secret: the password, the
    `user:password` pair (the SDK's transport sends it as a `Basic` credential) and a bare user token."""
    if not url:
        return
    userinfo = urlsplit(url).netloc.rpartition("@")
    if not userinfo[1]:
        return
    pair = unquote(userinfo[0])
    user, _, password = pair.partition(":")
    for value in (pair, password or user):
        register_secret(value, "base URL credentials")


def _bare_id(name: str) -> Target | None:
    """A full model id as listed by an SDK (or any `claude-*` id) picks its wire (`Wire.serves_bare_id`)."""
    registered = wires()
    ids = _listed(registered)
    wire = next((w for w in registered if w.serves_bare_id(name, ids[w.name])), None)
    return Target(provider=wire.name, model_id=name) if wire is not None else None


def _user_entry(name: str) -> str | dict[str, Any] | None:
    with _lock:
        return _user_aliases().get(name)


def lookup(name: str) -> Target | str | None:
    """Resolve a name to a Target; a string means "an alias for that other name"; None if unknown."""
    entry = _user_entry(name)
    if isinstance(entry, dict):
        base = parse_explicit(f"{entry.get('provider', 'openai')}:{entry['model']}")
        assert base is not None
        register_url_credentials(entry.get("base_url"))
        return Target(base.provider, base.model_id, entry.get("base_url") or None, entry.get("api_key_env"),
                      entry.get("service_tier"), bool(entry.get("free", False)), entry.get("lane"))
    if isinstance(entry, str):
        return parse_explicit(entry) or entry
    explicit = parse_explicit(name)
    if explicit is not None:
        return explicit
    builtin = builtin_aliases().get(name)
    if builtin is not None:
        return parse_explicit(builtin)
    return _bare_id(name)


def batch_lane_aliases() -> list[str]:
    """The aliases of the models table whose own lane is `batch`."""
    with _lock:
        return sorted(a for a, v in _user_aliases().items() if isinstance(v, dict) and v.get("lane") == "batch")


def is_known(name: str) -> bool:
    """Whether this module serves `name` (an alias, an explicit spec or a listed model id)."""
    return lookup(name) is not None


def help_text() -> str:
    """One line for the "known models" list."""
    names = ", ".join(f"{alias} ({strip_userinfo(spec.split(':', 1)[-1])})" for alias, spec in all_aliases().items())
    return f"{names}; " + ", ".join(f"{wire}:<model-id>[@<base-url>]" for wire in wire_names())
