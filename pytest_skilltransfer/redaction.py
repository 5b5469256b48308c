"""Secrets out of everything the run writes or prints: known key values and token-shaped strings.

The values redacted are those of every key variable the run knows: the SDKs' own variables and
every `api_key_env` of the models table (registered with `register_key_variables`), plus strings
shaped like provider keys or bearer tokens. A secret becomes `[redacted: <what>]`, so a reviewer
sees that something was there and what it was, never its value.

`redact_text` and `redact_json` are deterministic and idempotent, so a reply redacted when it is
recorded equals the same reply redacted again when its cassette is replayed. `find_secrets` is the
scanner that refuses to write a file still holding one.
"""

from __future__ import annotations

import os
import re
import threading
from typing import Any

SDK_KEY_VARIABLES = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY")
MIN_SECRET_LENGTH = 8  # shorter values (placeholders, "x") would redact ordinary words

TOKEN_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("Anthropic API key", re.compile(r"sk-ant-[A-Za-z0-9_\-]{8,}")),
    ("OpenAI-style API key", re.compile(r"(?<![A-Za-z0-9])sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}")),
    ("bearer token", re.compile(r"(?i)(?<=bearer )[A-Za-z0-9._\-]{16,}")),
    ("AWS access key", re.compile(r"(?<![A-Z0-9])AKIA[0-9A-Z]{16}(?![A-Z0-9])")),
)
_PLACEHOLDER = re.compile(r"\[redacted: [^\]]*\]")

_variables: set[str] = set(SDK_KEY_VARIABLES)
_lock = threading.Lock()


def register_key_variables(names: list[str] | tuple[str, ...] | set[str]) -> None:
    """Also treat the values of these environment variables as secrets (e.g. a models table's `api_key_env`)."""
    with _lock:
        _variables.update(n for n in names if n)


def key_variables() -> tuple[str, ...]:
    """Every variable whose value is a secret, sorted."""
    with _lock:
        return tuple(sorted(_variables))


def known_values(environ: dict[str, str] | None = None) -> list[tuple[str, str]]:
    """(variable, value) for every set key variable whose value is long enough to be a secret."""
    env = os.environ if environ is None else environ
    found = [(v, env[v]) for v in key_variables() if len(env.get(v, "").strip()) >= MIN_SECRET_LENGTH]
    return sorted(found, key=lambda pair: -len(pair[1]))  # longest first: a key holding another is redacted whole


def redact_text(text: str, environ: dict[str, str] | None = None) -> str:
    """`text` with every known key value and token-shaped string replaced by `[redacted: ...]`."""
    return _redact(text, known_values(environ)) if text else text


def _redact(text: str, values: list[tuple[str, str]]) -> str:
    if not text:
        return text
    for variable, value in values:
        if value in text:
            text = text.replace(value, f"[redacted: {variable}]")
    for label, pattern in TOKEN_PATTERNS:
        if pattern.search(text):
            text = pattern.sub(f"[redacted: {label}]", text)
    return text


def redact_json(data: Any, environ: dict[str, str] | None = None) -> Any:
    """A copy of parsed JSON with every string (keys too) redacted (the key values looked up once)."""
    return _redact_json(data, known_values(environ))


def _redact_json(data: Any, values: list[tuple[str, str]]) -> Any:
    if isinstance(data, str):
        return _redact(data, values)
    if isinstance(data, list):
        return [_redact_json(item, values) for item in data]
    if isinstance(data, dict):
        return {_redact(k, values) if isinstance(k, str) else k: _redact_json(v, values) for k, v in data.items()}
    return data


def find_secrets(text: str, environ: dict[str, str] | None = None) -> list[tuple[int, str]]:
    """(line number, what) for every secret left in `text`; empty when it is clean."""
    literals = known_values(environ)
    findings = []
    for number, line in enumerate(text.splitlines(), start=1):
        bare = _PLACEHOLDER.sub("", line)
        for label, pattern in TOKEN_PATTERNS:
            if pattern.search(bare):
                findings.append((number, label))
        findings.extend((number, f"the value of {variable}") for variable, value in literals if value in bare)
    return findings
