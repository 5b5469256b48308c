"""What both SDK backends share: client settings per recording state, and SDK errors made actionable.

Replay-only calls get a dummy key and no retries (a miss fails at once and no real key is ever sent).
Calls that may record need the provider's key; without it they fail naming the variable. Servers at
an explicit base URL (vLLM, llama.cpp, Ollama, a test fake) get a placeholder key when none is set.
"""

from __future__ import annotations

import importlib
import os
import threading
from dataclasses import dataclass
from typing import Any, Callable

from .aliases import Target
from .base import ModelCallError

REPLAY_KEY = "skilltransfer-replay-placeholder"
LOCAL_KEY = "skilltransfer-local-placeholder"
DEFAULT_TIMEOUT_S = 600.0
RECORD_RETRIES = 2
# Pinned so cassettes hold plain bodies (httpx2 would otherwise offer br/zstd when installed).
DEFAULT_HEADERS = {"Accept-Encoding": "identity"}
_DEFAULT_ENDPOINTS = {"anthropic": "https://api.anthropic.com", "openai": "https://api.openai.com/v1"}


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
    """Settings for the current recording state (see module docstring)."""
    from .. import cassettes

    rec = cassettes.active_recording()
    if rec is not None and rec.replay_only(target.model_id):
        return ClientSettings(api_key=REPLAY_KEY, max_retries=0, replay=True)
    variables = [target.key_variable]
    if target.provider == "anthropic" and not target.api_key_env:
        variables.append("ANTHROPIC_AUTH_TOKEN")
    key = next((os.environ[v] for v in variables if os.environ.get(v)), "")
    if not key and target.base_url:
        key = LOCAL_KEY
    if not key:
        why = (
            f"to record calls for seed {rec.seed!r} (record mode {rec.mode!r})"
            if rec is not None
            else "for live calls"
        )
        raise MissingAPIKey(
            target.key_variable,
            f"{target.key_variable} is not set: calling {target.model_id} needs it {why}. Set "
            f"{target.key_variable}, or replay committed cassettes only with --record-mode=none.",
        )
    return ClientSettings(api_key=key, max_retries=RECORD_RETRIES, replay=False)


_clients: dict[tuple[Any, ...], Any] = {}
_clients_lock = threading.Lock()


def cached_client(key: tuple[Any, ...], build: Callable[[], Any]) -> Any:
    """One SDK client per (provider, base URL, key, retries, timeout), shared across threads."""
    with _clients_lock:
        client = _clients.get(key)
        if client is None:
            client = _clients[key] = build()
        return client


def endpoint(target: Target) -> str:
    """Where calls go, for messages."""
    return target.base_url or _DEFAULT_ENDPOINTS[target.provider]


def _status_message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
    return str(getattr(exc, "message", "") or exc)


def call_failed(exc: Exception, target: Target, timeout: float) -> ModelCallError:
    """An SDK or transport exception as a ModelCallError that says what to do."""
    from .. import cassettes

    transport = cassettes.transport_failure(exc)
    if transport is not None:
        return transport
    where, model, var = endpoint(target), target.model_id, target.key_variable
    status = getattr(exc, "status_code", None)
    detail = _status_message(exc)
    name = type(exc).__name__
    if status in (401, 403):
        text = f"{model}: authentication failed at {where} (HTTP {status}): check {var}. {detail}"
    elif status == 404:
        text = f"{model}: not found at {where} (HTTP 404): check the model id and base URL. {detail}"
    elif status == 429:
        text = f"{model}: rate limited at {where} (HTTP 429) after retries: lower -n or retry later. {detail}"
    elif status == 529 or (status is not None and status >= 500):
        text = f"{model}: provider error or overload at {where} (HTTP {status}) after retries: retry later. {detail}"
    elif status is not None:
        text = f"{model}: request rejected by {where} (HTTP {status}): {detail}"
    elif name == "APITimeoutError":
        text = f"{model}: no reply from {where} within {timeout:g}s (timed out)"
    elif name == "APIConnectionError":
        cause = exc.__cause__ or exc.__context__
        text = f"{model}: could not connect to {where}: {cause or exc}"
    else:
        text = f"{model}: call to {where} failed: {name}: {exc}"
    return ModelCallError(text)


def make_client(client_class: tuple[str, str], api_key: str, base_url: str | None, max_retries: int,
                timeout: float) -> Any:
    """An SDK client; the SDK module is imported here, on first use, so `pytest --help` stays fast."""
    module, name = client_class
    sdk = importlib.import_module(module)
    return getattr(sdk, name)(api_key=api_key, base_url=base_url, max_retries=max_retries, timeout=timeout,
                              default_headers=DEFAULT_HEADERS)
