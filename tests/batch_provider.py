"""Loopback Batch APIs for both wire formats, for tests (built on `fake_provider`).

Anthropic Message Batches (`/v1/messages/batches`: create, retrieve, list, cancel, results) and
OpenAI's Batch API (`/v1/files` upload and content, `/v1/batches`: create, retrieve, list, cancel),
answering each item exactly as the synchronous fake answers the same request. Configurable:

    turnaround_s   seconds from create until a batch has ended (results are computed then)
    hold_from      batches from this number on (1 = the first) do not end until it is set back to None
                   (or they are canceled)
    shuffle        results come out of order (a seeded permutation)
    fail_items(*kinds)   the next items processed get, in order: "errored" (a provider-side error, to
                   be retried), "invalid" (the request is refused), "canceled", "expired"
    expire_next    the next batch expires with every item unprocessed
    unlucky        this many times, the first request processed errors (a provider-side error) whenever it comes
    fail_batch_calls(*faults)   the next batch API calls (create, status) get, in order: an HTTP status
                   (429, 500, ...) with the provider's error body, or "reset-after-create" (the batch is
                   created, then the connection is reset before any answer)
    list_fault     an HTTP status every batch listing (the look-up of an uncertain create) answers with
    kill_on(event, pid, nth)   SIGKILL the client process at the nth `event`: "create:before" (the create
                   request is dropped), "create:after" (created, no reply), "create:sent" (0.5 s after the
                   create's reply was sent), "status" (a status check,
                   no reply), "results:after" (shortly after the results were sent)

`paid` counts, per request body digest, the items answered successfully (what a provider bills);
`created` lists every batch. The synchronous endpoints keep working (`served_sync` counts them).
"""

from __future__ import annotations

import email
import email.policy
import json
import os
import random
import signal
import socket
import struct
import threading
import time
from collections import Counter, deque
from datetime import datetime, timezone
from typing import Any

import pytest
from fake_provider import FakeProvider, _error_body, _Handler, _Server, anthropic_reply, digest, openai_reply


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, timezone.utc).isoformat().replace("+00:00", "Z")


class _Batch:
    def __init__(self, provider: str, number: int, items: list[dict[str, Any]], metadata: dict[str, Any],
                 input_file: str = "") -> None:
        self.provider = provider
        self.id = (f"msgbatch_{number:04d}" if provider == "anthropic" else f"batch_{number:04d}")
        self.number = number
        self.items = items  # {"custom_id", "body"}
        self.metadata = metadata
        self.input_file = input_file
        self.created = time.time()
        self.ended: float | None = None
        self.canceled = False
        self.results: list[dict[str, Any]] = []
        self.outcomes: Counter[str] = Counter()
        self.output_file = self.error_file = ""


class _BatchHandler(_Handler):
    server: "_Server"

    def do_GET(self) -> None:  # noqa: N802
        fake: BatchProvider = self.server.fake  # type: ignore[assignment]
        path = self.path.split("?")[0]
        if path == "/v1/messages/batches" or path == "/v1/batches":
            provider = "anthropic" if "messages" in path else "openai"
            with fake._lock:
                fake.listings += 1
            if fake.list_fault:
                return self._send(fake.list_fault, _error_body(path, fake.list_fault))
            return self._send(200, fake.listing(provider))
        parts = path.strip("/").split("/")
        if path.startswith("/v1/messages/batches/") and path.endswith("/results"):
            batch = fake.batch(parts[3])
            fake.maybe_kill("results:after", delay=0.3)
            return self._send_raw(200, fake.anthropic_results(batch))
        if path.startswith("/v1/messages/batches/") or path.startswith("/v1/batches/"):
            if parts[-1] not in fake.batches:  # as the providers answer a batch id they do not know
                return self._send(404, _error_body(path, 404))
            batch = fake.batch(parts[-1])
            fake.maybe_kill("status")
            fault = fake.next_batch_fault()
            if isinstance(fault, int):
                return self._send(fault, _error_body(path, fault))
            return self._send(200, fake.describe(batch))
        if path.startswith("/v1/files/") and path.endswith("/content"):
            fake.maybe_kill("results:after", delay=0.3)
            return self._send_raw(200, fake.files[parts[2]])
        return self._send(404, {"error": {"message": f"no route GET {path}"}})

    def do_POST(self) -> None:  # noqa: N802
        fake: BatchProvider = self.server.fake  # type: ignore[assignment]
        path = self.path.split("?")[0]
        if path == "/v1/messages/batches":
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            items = [{"custom_id": r["custom_id"], "body": r["params"]} for r in body["requests"]]
            return self._create("anthropic", items, {})
        if path == "/v1/files":
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            return self._send(200, fake.upload(self.headers.get("content-type", ""), raw))
        if path == "/v1/batches":
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            lines = fake.files[body["input_file_id"]].decode().splitlines()
            items = [{"custom_id": json.loads(l)["custom_id"], "body": json.loads(l)["body"]} for l in lines if l.strip()]
            return self._create("openai", items, body.get("metadata") or {}, body["input_file_id"])
        if path.endswith("/cancel"):
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            batch = fake.batch(path.strip("/").split("/")[-2])
            batch.canceled = True
            return self._send(200, fake.describe(batch))
        with fake._lock:
            fake.served_sync += 1
        return super().do_POST()

    def _create(self, provider: str, items: list[dict[str, Any]], metadata: dict[str, Any], input_file: str = "") -> None:
        fake: BatchProvider = self.server.fake  # type: ignore[assignment]
        ids = [i["custom_id"] for i in items]
        if len(set(ids)) != len(ids):
            return self._send(400, {"type": "error", "error": {"type": "invalid_request_error",
                                                               "message": "custom_id values must be unique"}})
        fake.maybe_kill("create:before")
        fault = fake.next_batch_fault()
        if isinstance(fault, int):
            return self._send(fault, _error_body(self.path, fault))
        batch = fake.add(provider, items, metadata, input_file)
        fake.maybe_kill("create:after")
        if fault == "reset-after-create":
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            self.connection.close()
            return None
        self._send(200, fake.describe(batch))
        fake.maybe_kill("create:sent", delay=0.5)
        return None

    def _send_raw(self, status: int, data: bytes) -> None:
        self.send_response(status)
        self.send_header("content-type", "application/octet-stream")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class BatchProvider(FakeProvider):
    """The fake with batch endpoints (see module docstring)."""

    def __init__(self) -> None:
        super().__init__()
        self.turnaround_s = 0.0
        self.hold_from: int | None = None
        self.shuffle = True
        self.expire_next = False
        self.unlucky = 0
        self._unlucky_id: str | None = None
        self.batches: dict[str, _Batch] = {}
        self.files: dict[str, bytes] = {}
        self.paid: Counter[str] = Counter()
        self.served_sync = 0
        self.status_checks = 0
        self.listings = 0
        self.list_fault: int | None = None
        self._faults: deque[str] = deque()
        self._batch_faults: deque[int | str] = deque()
        self._kill: tuple[str, int, int] | None = None
        self._events: Counter[str] = Counter()
        self._random = random.Random(7)

    def start(self) -> "BatchProvider":
        self._server = _Server(("127.0.0.1", 0), _BatchHandler)
        self._server.fake = self
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,), name="batch-provider",
                                        daemon=True)
        self._thread.start()
        return self

    # -- scripting -----------------------------------------------------------------------------

    def fail_items(self, *kinds: str) -> None:
        with self._lock:
            self._faults.extend(kinds)

    def fail_batch_calls(self, *faults: int | str) -> None:
        with self._lock:
            self._batch_faults.extend(faults)

    def next_batch_fault(self) -> int | str | None:
        with self._lock:
            return self._batch_faults.popleft() if self._batch_faults else None

    def kill_on(self, event: str, pid: int, nth: int = 1) -> None:
        with self._lock:
            self._kill, self._events = (event, pid, nth), Counter()

    def maybe_kill(self, event: str, delay: float = 0.0) -> None:
        with self._lock:
            self._events[event] += 1
            if event == "status":
                self.status_checks += 1
            kill = self._kill
            if kill is None or kill[0] != event or self._events[event] != kill[2]:
                return
            self._kill = None
        if delay:
            threading.Timer(delay, _kill, args=(kill[1],)).start()
            return
        _kill(kill[1])
        time.sleep(0.5)  # the client is gone: never answer

    @property
    def total_paid(self) -> int:
        return sum(self.paid.values())

    def paid_twice(self) -> list[str]:
        return [d for d, n in self.paid.items() if n > 1]

    # -- state ---------------------------------------------------------------------------------

    def upload(self, content_type: str, raw: bytes) -> dict[str, Any]:
        message = email.message_from_bytes(f"content-type: {content_type}\r\n\r\n".encode() + raw,
                                           policy=email.policy.HTTP)
        data, name = b"", "batch.jsonl"
        for part in message.iter_parts():
            if part.get_param("name", header="content-disposition") == "file":
                data, name = part.get_payload(decode=True), part.get_filename() or name
        with self._lock:
            file_id = f"file-{len(self.files) + 1:04d}"
            self.files[file_id] = data
        return {"id": file_id, "object": "file", "bytes": len(data), "created_at": int(time.time()),
                "filename": name, "purpose": "batch", "status": "processed"}

    def add(self, provider: str, items: list[dict[str, Any]], metadata: dict[str, Any], input_file: str) -> _Batch:
        with self._lock:
            batch = _Batch(provider, len(self.batches) + 1, items, metadata, input_file)
            self.batches[batch.id] = batch
        return batch

    def batch(self, batch_id: str) -> _Batch:
        with self._lock:
            return self.batches[batch_id]

    @property
    def created(self) -> list[_Batch]:
        with self._lock:
            return list(self.batches.values())

    def _finish(self, batch: _Batch) -> None:
        """End a batch (once): answer every item, with scripted failures, in a seeded order."""
        if batch.ended is not None:
            return
        if not batch.canceled and time.time() - batch.created < self.turnaround_s:
            return
        if not batch.canceled and self.hold_from is not None and batch.number >= self.hold_from:
            return
        expire, self.expire_next = self.expire_next, False
        results = []
        for item in batch.items:
            kind = "canceled" if batch.canceled else "expired" if expire else (
                self._faults.popleft() if self._faults else "succeeded")
            if self.unlucky and kind == "succeeded" and self._unlucky_id in (None, item["custom_id"]):
                self._unlucky_id, self.unlucky, kind = item["custom_id"], self.unlucky - 1, "errored"
            results.append((item, kind))
            batch.outcomes[kind] += 1
            if kind == "succeeded":
                self.paid[digest(item["body"])] += 1
        if self.shuffle:
            self._random.shuffle(results)
        batch.results = [self._result(batch, item, kind) for item, kind in results]
        batch.ended = time.time()
        if batch.provider == "openai":
            ok = [r for r in batch.results if r["response"] and r["response"]["status_code"] == 200]
            bad = [r for r in batch.results if r not in ok]
            for attr, lines in (("output_file", ok), ("error_file", bad)):
                if lines:
                    file_id = f"file-{len(self.files) + 1:04d}"
                    self.files[file_id] = "".join(json.dumps(l) + "\n" for l in lines).encode()
                    setattr(batch, attr, file_id)

    def _result(self, batch: _Batch, item: dict[str, Any], kind: str) -> dict[str, Any]:
        cid, body = item["custom_id"], item["body"]
        if batch.provider == "anthropic":
            if kind == "succeeded":
                return {"custom_id": cid, "result": {"type": "succeeded", "message": anthropic_reply(body)}}
            if kind in ("errored", "invalid"):
                error = ("invalid_request_error", "bad request") if kind == "invalid" else ("api_error", "internal")
                return {"custom_id": cid, "result": {"type": "errored", "error": {
                    "type": "error", "error": {"type": error[0], "message": f"fake {error[1]}"}}}}
            return {"custom_id": cid, "result": {"type": kind}}
        line: dict[str, Any] = {"id": f"batch_req_{digest(body)}", "custom_id": cid, "response": None, "error": None}
        if kind == "succeeded":
            line["response"] = {"status_code": 200, "request_id": f"req_{digest(body)}", "body": openai_reply(body)}
        elif kind in ("errored", "invalid"):
            status = 400 if kind == "invalid" else 500
            line["response"] = {"status_code": status, "request_id": f"req_{digest(body)}",
                                "body": {"error": {"message": f"fake {kind}", "type": "server_error", "code": None}}}
        else:
            line["error"] = {"code": f"batch_{kind}", "message": f"This request was {kind}."}
        return line

    def describe(self, batch: _Batch) -> dict[str, Any]:
        with self._lock:
            self._finish(batch)
            ended = batch.ended is not None
            n, o = len(batch.items), batch.outcomes
        if batch.provider == "anthropic":
            return {"id": batch.id, "type": "message_batch",
                    "processing_status": "ended" if ended else ("canceling" if batch.canceled else "in_progress"),
                    "request_counts": {"processing": 0 if ended else n, "succeeded": o["succeeded"],
                                       "errored": o["errored"] + o["invalid"], "canceled": o["canceled"],
                                       "expired": o["expired"]},
                    "created_at": _iso(batch.created), "expires_at": _iso(batch.created + 86400),
                    "ended_at": _iso(batch.ended) if batch.ended else None, "archived_at": None,
                    "cancel_initiated_at": None,
                    "results_url": f"{self.anthropic_url}/v1/messages/batches/{batch.id}/results" if ended else None}
        status = "in_progress"
        if ended:
            status = "cancelled" if batch.canceled else "expired" if o["expired"] == n else "completed"
        return {"id": batch.id, "object": "batch", "endpoint": "/v1/chat/completions", "errors": None,
                "input_file_id": batch.input_file, "completion_window": "24h", "status": status,
                "output_file_id": batch.output_file or None, "error_file_id": batch.error_file or None,
                "created_at": int(batch.created), "in_progress_at": int(batch.created),
                "expires_at": int(batch.created) + 86400, "completed_at": int(batch.ended) if ended else None,
                "request_counts": {"total": n, "completed": o["succeeded"] if ended else 0,
                                   "failed": (n - o["succeeded"]) if ended else 0},
                "metadata": batch.metadata}

    def listing(self, provider: str) -> dict[str, Any]:
        data = [self.describe(b) for b in reversed(self.created) if b.provider == provider]
        first, last = (data[0]["id"], data[-1]["id"]) if data else (None, None)
        if provider == "anthropic":
            return {"data": data, "has_more": False, "first_id": first, "last_id": last}
        return {"object": "list", "data": data, "has_more": False, "first_id": first, "last_id": last}

    def anthropic_results(self, batch: _Batch) -> bytes:
        with self._lock:
            self._finish(batch)
        return "".join(json.dumps(r) + "\n" for r in batch.results).encode()


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


@pytest.fixture
def batch_provider() -> Any:
    """A running BatchProvider, stopped after the test."""
    with BatchProvider() as fake:
        yield fake
