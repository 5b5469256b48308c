"""What may reach a cassette file, and a scanner that proves no secret did.

Request and response headers are kept only when on an allowlist (so a key sent under any custom
header name is still dropped), and the well-known secret headers are named explicitly as well.
Retryable error responses (408, 409, 429, 5xx, 529) are never saved: the SDK retries them, and
replaying them would only replay the wait.
"""

from __future__ import annotations

import copy
import os
import re
from pathlib import Path
from typing import Any, Callable

SECRET_HEADERS = frozenset(
    {
        "authorization",
        "x-api-key",
        "api-key",
        "openai-organization",
        "openai-project",
        "anthropic-organization-id",
        "cookie",
        "set-cookie",
        "request-id",
        "x-request-id",
        "proxy-authorization",
    }
)
KEPT_REQUEST_HEADERS = frozenset({"content-type", "accept", "accept-encoding", "anthropic-version", "anthropic-beta"})
KEPT_RESPONSE_HEADERS = frozenset({"content-type", "content-encoding"})  # encoding stays only if undecodable
RETRYABLE_STATUS = frozenset({408, 409, 429})

_SECRET_PATTERNS = (
    ("Anthropic API key", re.compile(r"sk-ant-[A-Za-z0-9_\-]{8,}")),
    ("OpenAI-style API key", re.compile(r"(?<![A-Za-z0-9])sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}")),
    ("bearer token", re.compile(r"(?i)bearer\s+[A-Za-z0-9._\-]{16,}")),
    ("AWS access key", re.compile(r"(?<![A-Z0-9])AKIA[0-9A-Z]{16}(?![A-Z0-9])")),
    ("secret header", re.compile(r"(?im)^\s*['\"]?(authorization|x-api-key|api-key|cookie|set-cookie)['\"]?:\s*(\[.*)?$")),
)
_KEY_VARIABLES = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY")
SCANNED_SUFFIXES = (".yaml", ".yml", ".json")


Scrubber = Callable[[Any], Any]
USER_SCRUBBERS: dict[str, list[Scrubber]] = {"request": [], "response": []}


def add_scrubbers(request: Scrubber | None = None, response: Scrubber | None = None) -> None:
    """Run extra vcrpy-style scrubbers after the built-in filters (return None to not record)."""
    for kind, scrubber in (("request", request), ("response", response)):
        if scrubber is not None and scrubber not in USER_SCRUBBERS[kind]:
            USER_SCRUBBERS[kind].append(scrubber)


def _user_scrubbed(kind: str, value: Any) -> Any:
    for scrubber in USER_SCRUBBERS[kind]:
        if value is None:
            break
        value = scrubber(value)
    return value


def is_retryable(status: int) -> bool:
    """Whether the SDKs retry this status (such responses are never saved)."""
    return status in RETRYABLE_STATUS or status >= 500


def filter_request(request: Any) -> Any:
    """vcrpy before_record_request: a copy keeping only allowlisted, non-secret request headers.

    Only POSTs (model calls) are recorded: a GET such as the local server's /health probe is not
    part of a protocol run (the network guard still blocks it in replay-only mode).
    """
    if request.method != "POST":
        return None
    request = copy.copy(request)
    request.headers = {
        name: value
        for name, value in request.headers.items()
        if name.lower() in KEPT_REQUEST_HEADERS and name.lower() not in SECRET_HEADERS
    }
    return _user_scrubbed("request", request)


def filter_response(response: dict[str, Any]) -> dict[str, Any] | None:
    """vcrpy before_record_response: drop retryable errors; keep only allowlisted headers."""
    if is_retryable(int(response["status"]["code"])):
        return None
    headers = response.get("headers") or {}
    response["headers"] = {
        name: values
        for name, values in headers.items()
        if name.lower() in KEPT_RESPONSE_HEADERS and name.lower() not in SECRET_HEADERS
    }
    return _user_scrubbed("response", response)


def _files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    return sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in SCANNED_SUFFIXES)


def scan_for_secrets(path: Path | str) -> list[str]:
    """Findings `file:line: what` for key-like strings and secret headers in cassette files.

    Also flags the literal values of ANTHROPIC_API_KEY / ANTHROPIC_AUTH_TOKEN / OPENAI_API_KEY when
    they are set in the environment. An empty list means nothing was found.
    """
    root = Path(path)
    if not root.exists():
        return []
    literals = [(var, os.environ[var]) for var in _KEY_VARIABLES if len(os.environ.get(var, "")) >= 8]
    findings = []
    for file in _files(root):
        try:
            text = file.read_text(encoding="utf-8", errors="replace")
        except OSError as err:
            findings.append(f"{file}: unreadable ({err})")
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            for label, pattern in _SECRET_PATTERNS:
                if pattern.search(line):
                    findings.append(f"{file}:{number}: {label}")
            for var, value in literals:
                if value in line:
                    findings.append(f"{file}:{number}: the value of {var}")
    return findings
