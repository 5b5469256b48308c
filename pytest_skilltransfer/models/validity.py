"""What counts as evidence: only a complete, successful provider response may be stored or replayed.

A response is usable when its status is 2xx, its body is the provider's JSON, and that JSON is a
finished answer as its wire defines one (`Wire.answer_problem`: a Messages API `message` with its
content and stop reason, a chat completion whose choices all carry a finish reason). Anything else (an
error status, an HTML page served with 200, a cut-off body) is never written, and an old cassette entry
of that kind counts as a miss.
"""

from __future__ import annotations

import json
from typing import Any

from .wire import wire_of_path


def _json(body: Any) -> Any:
    if isinstance(body, (dict, list)):
        return body  # parsed already (a replayed answer stored as JSON)
    if not body:
        return None
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None


def response_problem(path: str, status: int, body: bytes | str | None) -> str | None:
    """Why this response is not a usable recording, or None when it is one.

    `path` is the request path: an answer to a wire's call path is checked by that wire
    (`models.wire.Wire.answer_problem`); other paths need only a 2xx JSON body.
    """
    return read_answer(path, status, body)[1]


def read_answer(path: str, status: int, body: Any) -> tuple[dict[str, Any], str | None]:
    """The response's JSON object and None when it is a usable recording (`response_problem`), else
    an empty object and why it is not one: the body (bytes, text, or JSON parsed already) is parsed
    once, for the check and the reply."""
    if not 200 <= status < 300:
        return {}, f"HTTP {status}"
    data = _json(body)
    if not isinstance(data, dict):
        return {}, "the body is not JSON" if data is None else "the body is not a JSON object"
    wire = wire_of_path(path)
    return data, wire.answer_problem(data) if wire is not None else None


def excerpt(body: bytes | str | None, limit: int = 200) -> str:
    """The start of a body on one line, for messages (callers redact it)."""
    if isinstance(body, bytes):
        body = body.decode("utf-8", errors="replace")
    text = " ".join((body or "").split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
