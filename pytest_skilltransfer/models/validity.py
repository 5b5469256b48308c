"""What counts as evidence: only a complete, successful provider response may be stored or replayed.

A response is usable when its status is 2xx, its body is the provider's JSON, and that JSON is a
finished answer: a Messages API `message` with its content and stop reason, or a chat completion
whose choices all carry a finish reason. Anything else (an error status, an HTML page served with
200, a cut-off body) is never written, and an old cassette entry of that kind counts as a miss.
"""

from __future__ import annotations

import json
from typing import Any


def _json(body: Any) -> Any:
    if isinstance(body, (dict, list)):
        return body  # parsed already (a replayed answer stored as JSON)
    if not body:
        return None
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None


def _messages_problem(data: dict[str, Any]) -> str | None:
    if data.get("type") != "message":
        return f"the body is not a Messages API message (type {data.get('type')!r})"
    if not isinstance(data.get("content"), list):
        return "the message has no content list"
    if not data.get("stop_reason"):
        return "the message has no stop_reason (an unfinished stream or a cut-off body)"
    return None


def _chat_problem(data: dict[str, Any]) -> str | None:
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        return "the completion has no choices"
    for choice in choices:
        if not isinstance(choice, dict) or not isinstance(choice.get("message"), dict):
            return "a choice has no message"
        if not choice.get("finish_reason"):
            return "a choice has no finish_reason (an unfinished stream or a cut-off body)"
    return None


def response_problem(path: str, status: int, body: bytes | str | None) -> str | None:
    """Why this response is not a usable recording, or None when it is one.

    `path` is the request path: `/messages` answers are checked as the Messages API, `/completions`
    answers as Chat Completions; other paths need only a 2xx JSON body.
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
    if path.endswith("/messages"):
        return data, _messages_problem(data)
    if path.endswith("/completions"):
        return data, _chat_problem(data)
    return data, None


def excerpt(body: bytes | str | None, limit: int = 200) -> str:
    """The start of a body on one line, for messages (callers redact it)."""
    if isinstance(body, bytes):
        body = body.decode("utf-8", errors="replace")
    text = " ".join((body or "").split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
