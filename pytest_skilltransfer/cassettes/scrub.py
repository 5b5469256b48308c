"""What may reach a cassette file, and a scanner that proves no secret did.

Request and response headers are kept only when on an allowlist (so a key sent under any custom
header name is still dropped), and the well-known secret headers are named explicitly as well.
Request and response bodies are redacted (`redaction`): known key values and token-shaped strings
become `[redacted: ...]` before anything is matched, journaled or written. Whether a response may be
stored at all (complete and successful) is `validity`'s call.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any, Callable

from ..guards.redaction import find_secrets, redact_json, redact_text, strip_userinfo
from ..guards.run_scope import Scoped
from ..models import wire
from ..models.batch import is_batch_control
from .match import body_bytes, parse_json

# Headers no API may store, whatever its wire; each wire adds its own (`Wire.secret_headers`, `kept_request_headers`).
SECRET_HEADERS = frozenset(
    {"authorization", "x-api-key", "api-key", "cookie", "set-cookie", "request-id", "x-request-id",
     "proxy-authorization"}
)
KEPT_REQUEST_HEADERS = frozenset({"content-type", "accept", "accept-encoding"})
KEPT_RESPONSE_HEADERS = frozenset({"content-type", "content-encoding"})  # encoding stays only if undecodable
_SECRET_HEADER = re.compile(r"(?im)^\s*['\"]?(authorization|x-api-key|api-key|cookie|set-cookie)['\"]?:\s*(\[.*)?$")
SCANNED_SUFFIXES = (".yaml", ".yml", ".json", ".jsonl")


Scrubber = Callable[[Any], Any]
USER_SCRUBBERS: Scoped[dict[str, list[Scrubber]]] = Scoped("scrubbers", lambda: {"request": [], "response": []})


def add_scrubbers(request: Scrubber | None = None, response: Scrubber | None = None) -> None:
    """Run extra vcrpy-style scrubbers after the built-in filters (return None to not record)."""
    for kind, scrubber in (("request", request), ("response", response)):
        if scrubber is not None and scrubber not in USER_SCRUBBERS()[kind]:
            USER_SCRUBBERS()[kind].append(scrubber)


def _user_scrubbed(kind: str, value: Any) -> Any:
    for scrubber in USER_SCRUBBERS()[kind]:
        if value is None:
            break
        value = scrubber(value)
    return value


def redact_body(body: Any) -> Any:
    """A body with secrets redacted: JSON is redacted value by value (so it stays valid), text as text."""
    if body is None:
        return body
    data = parse_json(body)
    if data is not None:
        clean = redact_json(data)
        if clean == data:
            return body
        return json.dumps(clean, ensure_ascii=False).encode("utf-8")
    raw = body_bytes(body)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw
    clean_text = redact_text(text)
    return raw if clean_text == text else clean_text.encode("utf-8")


def filter_request(request: Any) -> Any:
    """vcrpy before_record_request: a copy keeping only allowlisted, non-secret request headers.

    Only POSTs (model calls) are recorded: a GET such as the local server's /health probe is not
    part of a protocol run (the network guard still blocks it in replay-only mode), and neither is the
    batch lane's traffic (batches and files: their results are recorded as the calls they answer).
    """
    if request.method != "POST" or is_batch_control(request.path):
        return None
    request = copy.copy(request)
    request.uri = strip_userinfo(request.uri)
    request.body = redact_body(request.body)
    kept, secret = KEPT_REQUEST_HEADERS | wire.kept_request_headers(), SECRET_HEADERS | wire.secret_headers()
    request.headers = {
        name: value for name, value in request.headers.items() if name.lower() in kept and name.lower() not in secret
    }
    return _user_scrubbed("request", request)


_FILTERED = "_skilltransfer_filtered"
_UNSEEN = object()


def filter_request_once(request: Any) -> Any:
    """`filter_request`, run once per request: vcrpy asks for the filtered request up to three times per
    call (can it play, may it record, record), and a filtered request filters to itself."""
    done = request.__dict__.get(_FILTERED, _UNSEEN)
    if done is not _UNSEEN:
        return done
    filtered = filter_request(request)
    request.__dict__[_FILTERED] = filtered
    if filtered is not None:
        filtered.__dict__[_FILTERED] = filtered
    return filtered


def filter_recorded_response(response: dict[str, Any]) -> dict[str, Any] | None:
    """The response as stored: decompressed when the provider compressed it (vcrpy's
    `decode_response`), then `filter_response`. `response` is vcrpy's fresh copy of the real response,
    used for nothing else, so no deep copy is made."""
    if any(name.lower() == "content-encoding" for name in response.get("headers") or {}):
        from vcr.filters import decode_response

        response = decode_response(response)
    return filter_response(response)


def filter_response(response: dict[str, Any]) -> dict[str, Any] | None:
    """vcrpy before_record_response: keep only allowlisted headers; redact the body."""
    body = response.get("body") or {}
    if "string" in body:
        response["body"] = {**body, "string": redact_body(body["string"])}
    headers = response.get("headers") or {}
    secret = SECRET_HEADERS | wire.secret_headers()
    response["headers"] = {
        name: values for name, values in headers.items()
        if name.lower() in KEPT_RESPONSE_HEADERS and name.lower() not in secret
    }
    return _user_scrubbed("response", response)


def _files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    return sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in SCANNED_SUFFIXES)


def scan_for_secrets(path: Path | str) -> list[str]:
    """Findings `file:line: what` for key-like strings, known key values and secret headers in cassette files.

    The known values are those of every key variable the run knows (`redaction.key_variables`).
    An empty list means nothing was found.
    """
    root = Path(path)
    if not root.exists():
        return []
    findings = []
    for file in _files(root):
        try:
            text = file.read_text(encoding="utf-8", errors="replace")
        except OSError as err:
            findings.append(f"{file}: unreadable ({err})")
            continue
        headers = [(n, "secret header") for n, line in enumerate(text.splitlines(), 1) if _SECRET_HEADER.search(line)]
        findings.extend(f"{file}:{line}: {what}" for line, what in sorted(find_secrets(text) + headers))
    return findings
