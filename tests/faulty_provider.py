"""A loopback provider that injects faults, over both wire formats (built on `fake_provider`).

`inject(*faults)` scripts what the next requests get, one fault per request, in order; requests
after the script get the fake's normal answers. Faults:

    "429"          rate limited, with `retry-after-ms` (`retry_after_ms`) and `retry-after` headers
    "529", "500"   overloaded / server error, no retry-after
    "401"          authentication error
    "reset"        the connection is reset (RST) before any answer
    "slow"         the answer comes after `slow_s` seconds
    "html200"      status 200 with an HTML page
    "unfinished"   status 200 with the provider's JSON, but no stop/finish reason
    "cut"          status 200 whose body stops short of its content-length, then the connection closes
    "echo-body"    a normal answer whose text quotes the key the request carried
    "echo-401"     a 401 whose error message quotes the key

`shape_next(*shapes)` changes how the next successful answers end: "max_tokens", "refusal",
"content_filter", "pause_turn", "empty", "no_usage" (each in the wire format's own words).
`served` counts every request received; `answered` counts the 200 answers that were complete.
"""

from __future__ import annotations

import io
import json
import socket
import struct
import threading
import time
from collections import deque
from typing import Any

import pytest
from fake_provider import FakeProvider, _error_body, _Handler, _Server

FAULTS = ("429", "529", "500", "401", "reset", "slow", "html200", "unfinished", "cut", "echo-body", "echo-401")
SHAPES = ("max_tokens", "refusal", "content_filter", "pause_turn", "empty", "no_usage")
HTML = b"<!doctype html><html><head><title>Sign in</title></head><body>Please sign in to continue.</body></html>"


def _key_of(headers: Any) -> str:
    return headers.get("x-api-key") or (headers.get("authorization") or "").removeprefix("Bearer ")


def reshape(path: str, payload: dict[str, Any], shape: str) -> dict[str, Any]:
    """A successful answer ending the way `shape` says, in the wire format of `path`."""
    payload = json.loads(json.dumps(payload))
    if shape == "no_usage":
        payload.pop("usage", None)
        return payload
    if path.endswith("/messages"):
        reason = {"max_tokens": "max_tokens", "refusal": "refusal", "content_filter": "refusal",
                  "pause_turn": "pause_turn", "empty": "end_turn"}[shape]
        payload["stop_reason"] = reason
        if shape == "empty":
            payload["content"] = []
        elif shape in ("max_tokens", "pause_turn"):
            payload["content"] = [{"type": "text", "text": f"partial answer ({shape})"}]
        return payload
    choice = payload["choices"][0]
    message = choice["message"]
    message.pop("tool_calls", None)
    if shape == "max_tokens":
        choice["finish_reason"], message["content"] = "length", "partial answer (length)"
    elif shape == "refusal":
        choice["finish_reason"], message["content"] = "stop", None
        message["refusal"] = "I can't help with that request."
    elif shape == "content_filter":
        choice["finish_reason"], message["content"] = "content_filter", None
    elif shape == "pause_turn":  # Chat Completions has no paused turns: the nearest is a cut-off answer
        choice["finish_reason"], message["content"] = "length", "partial answer (length)"
    elif shape == "empty":
        choice["finish_reason"], message["content"] = "stop", ""
    return payload


class _FaultyHandler(_Handler):
    server: "_FaultyServer"

    def do_POST(self) -> None:  # noqa: N802 - http.server naming
        fake = self.server.fake
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        with fake._lock:
            fake.served += 1
            fault = fake._faults.popleft() if fake._faults else None
        self._echo = ""
        if fault is not None and self._fault(fault, raw):
            fake.log(self.path, dict(self.headers), json.loads(raw or b"{}"))
            return
        original, self.rfile = self.rfile, io.BytesIO(raw)
        try:
            super().do_POST()
        finally:
            self.rfile = original

    def _fault(self, fault: str, raw: bytes) -> bool:
        """Answer with the fault; False when the normal answer should follow (slow, echo-body)."""
        fake = self.server.fake
        if fault in ("429", "529", "500", "401"):
            status = int(fault)
            extra = {"retry-after-ms": str(fake.retry_after_ms), "retry-after": str(max(1, fake.retry_after_ms // 1000))}
            self._send(status, _error_body(self.path, status), extra if status == 429 else None)
        elif fault == "echo-401":
            body = _error_body(self.path, 401)
            body["error"]["message"] = f"invalid x-api-key: {_key_of(self.headers)}"
            self._send(401, body)
        elif fault == "reset":
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            self.connection.close()
        elif fault == "html200":
            self._raw(200, HTML, "text/html; charset=utf-8")
        elif fault == "unfinished":
            body = json.loads(raw or b"{}")
            if self.path.endswith("/messages"):
                payload = {"id": "msg_x", "type": "message", "role": "assistant", "model": body.get("model", ""),
                           "content": [{"type": "text", "text": "half an ans"}], "stop_reason": None,
                           "usage": {"input_tokens": 1, "output_tokens": 1}}
            else:
                payload = {"id": "c", "object": "chat.completion", "created": 0, "model": body.get("model", ""),
                           "choices": [{"index": 0, "message": {"role": "assistant", "content": "half an ans"},
                                        "finish_reason": None}]}
            self._raw(200, json.dumps(payload).encode(), "application/json")
        elif fault == "cut":
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", "4096")
            self.end_headers()
            self.wfile.write(b'{"id": "msg_cut", "type": "message", "content": [{"type": "te')
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
        elif fault == "slow":
            time.sleep(fake.slow_s)
            return False
        elif fault == "echo-body":
            self._echo = _key_of(self.headers)
            return False
        else:  # pragma: no cover - a typo in a test
            raise ValueError(f"unknown fault {fault!r}; known: {', '.join(FAULTS)}")
        return True

    def _raw(self, status: int, data: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send(self, status: int, payload: dict[str, Any], extra: dict[str, str] | None = None) -> None:
        fake = self.server.fake
        if status == 200:
            with fake._lock:
                shape = fake._shapes.popleft() if fake._shapes else None
                fake.answered += 1
            if shape is not None:
                payload = reshape(self.path, payload, shape)
            if self._echo:
                payload = json.loads(json.dumps(payload).replace("fake answer", f"fake answer (your key is {self._echo})"))
        super()._send(status, payload, extra)


class _FaultyServer(_Server):
    fake: "FaultyProvider"


class FaultyProvider(FakeProvider):
    """FakeProvider plus scripted faults and answer shapes (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__()
        self.retry_after_ms = 5
        self.slow_s = 0.5
        self.served = 0
        self.answered = 0
        self._faults: deque[str] = deque()
        self._shapes: deque[str] = deque()

    def inject(self, *faults: str) -> "FaultyProvider":
        unknown = [f for f in faults if f not in FAULTS]
        if unknown:
            raise ValueError(f"unknown fault(s) {unknown}; known: {', '.join(FAULTS)}")
        with self._lock:
            self._faults.extend(faults)
        return self

    def shape_next(self, *shapes: str) -> "FaultyProvider":
        unknown = [s for s in shapes if s not in SHAPES]
        if unknown:
            raise ValueError(f"unknown shape(s) {unknown}; known: {', '.join(SHAPES)}")
        with self._lock:
            self._shapes.extend(shapes)
        return self

    def start(self) -> "FaultyProvider":
        self._server = _FaultyServer(("127.0.0.1", 0), _FaultyHandler)
        self._server.fake = self
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,), name="faulty-provider",
                                        daemon=True)
        self._thread.start()
        return self


@pytest.fixture
def faulty_provider() -> Any:
    """A running FaultyProvider, stopped after the test."""
    with FaultyProvider() as fake:
        yield fake
