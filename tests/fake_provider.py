"""A loopback fake of the Anthropic Messages and OpenAI Chat Completions APIs, for tests.

`POST /v1/messages` and `POST /v1/chat/completions` answer deterministically from the request body
(a hash of its canonical JSON), so different requests get different replies and the same request
always gets the same one. When tools are offered and no tool result is in the conversation yet, the
reply is a call to the first tool; after a tool result it is text. A forced reply shape (Anthropic
`tool_choice` of one tool, OpenAI `response_format` json_schema) gets a verdict object
`{"verdict": "pass" | "fail", "reason": ...}` chosen by the body's hash. Scripted failures (429, 529, 500
with retry-after), slow replies, gzip bodies, and a key check can be switched on per test.

With `prompt_cache` on, usage reports prompt-cache tokens as the providers do: Anthropic writes the
prefix up to a `cache_control` breakpoint on first sight and reads it afterwards
(`cache_creation_input_tokens` / `cache_read_input_tokens`, excluded from `input_tokens`); OpenAI
reads a system prompt seen before (`prompt_tokens_details.cached_tokens`, included in `prompt_tokens`).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import socket
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

_ERROR_TYPES = {401: "authentication_error", 429: "rate_limit_error", 529: "overloaded_error", 500: "api_error", 503: "api_error"}


@dataclass
class Failure:
    """One scripted failure: the status, and the retry-after the server advertises."""

    status: int
    retry_after_ms: int = 5


def digest(data: Any) -> str:
    """Short hash of a JSON value in canonical form."""
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:12]


def _last_user_text(messages: list[dict[str, Any]]) -> str:
    for message in reversed(messages):
        content = message.get("content")
        if message.get("role") != "user":
            continue
        if isinstance(content, str):
            return content
        for block in content or []:
            if block.get("type") == "text":
                return block.get("text", "")
    return ""


def _has_tool_result(messages: list[dict[str, Any]]) -> bool:
    for message in messages:
        if message.get("role") == "tool":
            return True
        content = message.get("content")
        if isinstance(content, list) and any(b.get("type") == "tool_result" for b in content):
            return True
    return False


def _answer(body: dict[str, Any]) -> tuple[str, dict[str, Any] | None, str]:
    """(text, tool call arguments or None, tag) for a request body."""
    tag = digest(body)
    messages = body.get("messages") or []
    if body.get("tools") and not _has_tool_result(messages):
        words = " ".join(_last_user_text(messages).split()[:3]) or "notes"
        return "", {"query": words}, tag
    user = _last_user_text(messages)
    if user.startswith("echo: "):  # the reply repeats the rest (a model echoing its input)
        return user[len("echo: "):], None, tag
    return f"fake answer {tag}", None, tag


def forced_verdict(tag: str) -> dict[str, str]:
    """The verdict object a forced structured reply holds."""
    verdict = "pass" if int(tag, 16) % 3 else "fail"
    return {"verdict": verdict, "reason": f"fake judge {tag} says {verdict}"}


def _anthropic_prefix(body: dict[str, Any]) -> str | None:
    """The cached prefix (tools + system) when the system carries a `cache_control` breakpoint."""
    system = body.get("system")
    if isinstance(system, list) and any(isinstance(b, dict) and b.get("cache_control") for b in system):
        return json.dumps([body.get("tools"), system], sort_keys=True)
    return None


def _output_tokens(body: dict[str, Any], text: str) -> int:
    """Output tokens reported: the text's, or the request's whole `max_tokens` when the fake is told to."""
    if body.get("_report_max_output"):
        return int(body.get("max_tokens") or body.get("max_completion_tokens") or 1)
    return max(1, len(text) // 4)


def anthropic_reply(body: dict[str, Any], cache: set[str] | None = None) -> dict[str, Any]:
    """A Messages API response for `body` (`cache`: prefixes written so far, when caching is on)."""
    text, call, tag = _answer(body)
    content: list[dict[str, Any]] = []
    choice = body.get("tool_choice") or {}
    if choice.get("type") == "tool":
        call, text = forced_verdict(tag), ""
        content.append({"type": "tool_use", "id": f"toolu_{tag}", "name": choice["name"], "input": call})
    elif call is not None:
        tool = body["tools"][0]["name"]
        content.append({"type": "tool_use", "id": f"toolu_{tag}", "name": tool, "input": call})
    else:
        content.append({"type": "text", "text": text})
    return {
        "id": f"msg_{tag}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", ""),
        "content": content,
        "stop_reason": "tool_use" if call is not None else "end_turn",
        "stop_sequence": None,
        "usage": _anthropic_usage(body, text, cache),
    }


def _anthropic_usage(body: dict[str, Any], text: str, cache: set[str] | None) -> dict[str, Any]:
    usage = {"input_tokens": len(json.dumps(body)) // 4, "output_tokens": _output_tokens(body, text)}
    prefix = _anthropic_prefix(body) if cache is not None else None
    if prefix is not None:
        tokens = len(prefix) // 4
        field = "cache_read_input_tokens" if prefix in cache else "cache_creation_input_tokens"  # type: ignore[operator]
        cache.add(prefix)  # type: ignore[union-attr]
        usage.update({"input_tokens": usage["input_tokens"] - tokens, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 0, field: tokens})
    return usage


def openai_reply(body: dict[str, Any], cache: set[str] | None = None) -> dict[str, Any]:
    """A Chat Completions response for `body` (`cache`: system prompts seen so far, when caching is on)."""
    text, call, tag = _answer(body)
    if (body.get("response_format") or {}).get("type") == "json_schema":
        text, call = json.dumps(forced_verdict(tag)), None
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if call is not None:
        tool = body["tools"][0]["function"]["name"]
        message["tool_calls"] = [
            {"id": f"call_{tag}", "type": "function", "function": {"name": tool, "arguments": json.dumps(call)}}
        ]
    return {
        "id": f"chatcmpl-{tag}",
        "object": "chat.completion",
        "created": 1767225600,
        "model": body.get("model", ""),
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if call else "stop"}],
        "service_tier": body.get("service_tier") or "default",
        "usage": {
            "prompt_tokens": len(json.dumps(body)) // 4,
            "completion_tokens": _output_tokens(body, text),
            "total_tokens": len(json.dumps(body)) // 4 + _output_tokens(body, text),
            **_openai_cache_details(body, cache),
        },
    }


def _openai_cache_details(body: dict[str, Any], cache: set[str] | None) -> dict[str, Any]:
    messages = body.get("messages") or []
    if cache is None or not messages or messages[0].get("role") != "system":
        return {}
    prefix = json.dumps(messages[0], sort_keys=True)
    cached = len(prefix) // 4 if prefix in cache else 0
    cache.add(prefix)
    return {"prompt_tokens_details": {"cached_tokens": cached}}


def _error_body(path: str, status: int) -> dict[str, Any]:
    kind = _ERROR_TYPES.get(status, "api_error")
    if path.endswith("/messages"):
        return {"type": "error", "error": {"type": kind, "message": f"fake {kind}"}}
    return {"error": {"message": f"fake {kind}", "type": kind, "code": None}}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: "_Server"

    def log_message(self, *args: Any) -> None:  # keep test output quiet
        pass

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # no 40 ms delayed-ACK stalls
        self.server.fake.connections.add(self.connection)

    def finish(self) -> None:
        self.server.fake.connections.discard(self.connection)
        super().finish()

    def parse_request(self) -> bool:
        self.arrived = time.monotonic()  # the request line is in: the fixed latency counts from here
        return super().parse_request()

    def do_POST(self) -> None:  # noqa: N802 - http.server naming
        fake = self.server.fake
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = json.loads(raw or b"{}")
        fake.log(self.path, dict(self.headers), body)
        key = self.headers.get("x-api-key") or (self.headers.get("authorization") or "").removeprefix("Bearer ")
        if (fake.require_key and not key) or (fake.accepted_keys is not None and key not in fake.accepted_keys):
            return self._send(401, _error_body(self.path, 401))
        if fake.require_service_tier and body.get("service_tier") != fake.require_service_tier:
            return self._send(400, {"error": {"message": f"expected service_tier {fake.require_service_tier!r}, "
                                                         f"got {body.get('service_tier')!r}", "type": "invalid_request"}})
        if body.get("service_tier") == "flex" and fake.take_flex_unavailable():
            return self._send(429, {"error": {"message": "Resource unavailable: flex processing has no capacity "
                                                         "right now; retry later.", "type": "rate_limit_error",
                                              "code": "resource_unavailable"}})
        failure = fake.next_failure()
        if failure is not None:
            extra = {"retry-after-ms": str(failure.retry_after_ms), "retry-after": "0", "x-should-retry": "true"}
            return self._send(failure.status, _error_body(self.path, failure.status), extra)
        cache = fake.cache if fake.prompt_cache else None
        shaped = {**body, "_report_max_output": True} if fake.report_max_output else body
        with fake._lock:  # the prompt cache is shared by concurrent requests
            if self.path.endswith("/v1/messages"):
                reply = anthropic_reply(shaped, cache)
            elif self.path.endswith("/chat/completions"):
                reply = openai_reply(shaped, cache)
            else:
                reply = None
        if reply is not None and fake.omit_usage:
            reply.pop("usage", None)
        if reply is not None:
            return self._send(200, reply)
        return self._send(404, {"error": {"message": f"no route {self.path}"}})

    def _send(self, status: int, payload: dict[str, Any], extra: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        headers = {
            "content-type": "application/json",
            "request-id": f"req_{digest(payload)}",
            "x-request-id": f"req_{digest(payload)}",
            "set-cookie": "fake_session=cookie-value-should-not-be-saved; Path=/",
            "openai-organization": "org-fake-should-not-be-saved",
            "anthropic-organization-id": "fake-org-should-not-be-saved",
            **(extra or {}),
        }
        if self.server.fake.gzip_bodies:
            data = gzip.compress(data)
            headers["content-encoding"] = "gzip"
        wait = self.arrived + self.server.fake.delay - time.monotonic()
        if wait > 0:  # every answer, errors too, leaves `delay` after its request arrived, however long it took to make
            time.sleep(wait)
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: "FakeProvider"

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up first (a timeout under test) is not an error of the fake's."""
        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            return
        super().handle_error(request, client_address)


class FakeProvider:
    """The fake server: start it, point SDK base URLs at it, inspect what it received."""

    def __init__(self) -> None:
        self.delay = 0.0
        self.require_key = True
        self.accepted_keys: set[str] | None = None  # None: any non-empty key is accepted
        self.gzip_bodies = False
        self.prompt_cache = False  # report prompt-cache usage fields (see module docstring)
        self.report_max_output = False  # report every reply as its whole max_tokens of output
        self.omit_usage = False  # answer without a usage object (as some compatible servers do)
        self.require_service_tier: str | None = None  # answer 400 to a request without this service_tier
        self.flex_unavailable = 0  # answer this many flex requests 429 "resource unavailable" first
        self.cache: set[str] = set()
        self.received: list[dict[str, Any]] = []
        self.connections: set[socket.socket] = set()
        self._failures: deque[Failure] = deque()
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        assert self._server is not None, "server not started"
        return self._server.server_address[1]

    @property
    def anthropic_url(self) -> str:
        """Base URL for anthropic.Anthropic(base_url=...)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_url(self) -> str:
        """Base URL for openai.OpenAI(base_url=...)."""
        return f"http://127.0.0.1:{self.port}/v1"

    def fail_next(self, *statuses: int, retry_after_ms: int = 5) -> None:
        """Answer the next requests with these error statuses, in order."""
        with self._lock:
            self._failures.extend(Failure(s, retry_after_ms) for s in statuses)

    def take_flex_unavailable(self) -> bool:
        with self._lock:
            if self.flex_unavailable > 0:
                self.flex_unavailable -= 1
                return True
            return False

    def next_failure(self) -> Failure | None:
        with self._lock:
            return self._failures.popleft() if self._failures else None

    def log(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> None:
        with self._lock:
            self.received.append({"path": path, "headers": headers, "body": body})

    def start(self, port: int = 0) -> "FakeProvider":
        self._server = _Server(("127.0.0.1", port), _Handler)
        self._server.fake = self
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,), name="fake-provider", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and drop open keep-alive connections (so nothing can reach it afterwards)."""
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        for conn in list(self.connections):
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._server = None

    def __enter__(self) -> "FakeProvider":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


@pytest.fixture
def fake_provider() -> Any:
    """A running FakeProvider, stopped after the test."""
    with FakeProvider() as fake:
        yield fake
