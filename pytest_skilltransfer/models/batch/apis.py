"""The providers' Batch APIs through their official SDKs: create, status, results, look-up, cancel.

Anthropic: `client.messages.batches` (one create call with every request's params). OpenAI: the
requests as a JSON-lines file (`client.files.create(purpose="batch")`), then `client.batches`; the
results are the batch's output and error files (`client.files.content`). Results are read as the
raw JSON the provider sent, so a stored answer is the body a synchronous call would have received.

A create call is made once (no SDK retry): had it reached the provider and only its answer been
lost, a retry would create and bill the batch twice. A failed create is looked up instead (`find`).

Each item's outcome is one of: `ok` (a complete answer, stored like a synchronous reply), `fail`
(the request itself was refused, as a synchronous call would have been: never re-sent), `retry`
(errored on the provider's side, canceled or expired: sent again).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Iterable, Protocol

CLAIM_WINDOW_S = (-120.0, 900.0)  # a looked-up Anthropic batch was created this close to its submission
OPENAI_SUBMISSION_KEY = "skilltransfer_submission"
RETRY_STATUSES = {408, 409, 429, 500, 502, 503, 504, 529}


@dataclass(frozen=True)
class Item:
    """One parked request: its custom id, the path it would have been sent to, and its JSON body."""

    custom_id: str
    path: str
    body: dict[str, Any]


@dataclass(frozen=True)
class Outcome:
    """What became of one item (see module docstring); `body` is raw JSON bytes for `ok` and `fail`."""

    kind: str  # ok | fail | retry
    status: int = 200
    body: bytes = b""
    why: str = ""


@dataclass(frozen=True)
class Status:
    """A batch as the provider reports it."""

    ended: bool
    state: str
    done: int
    total: int


class BatchApi(Protocol):
    provider: str
    limit: int  # requests per batch at most

    def create(self, items: list[Item], submission: str) -> str: ...
    def status(self, batch_id: str) -> Status: ...
    def results(self, batch_id: str) -> dict[str, Outcome]: ...
    def find(self, submission: str, at: float, count: int, claimed: set[str]) -> str | None: ...
    def cancel(self, batch_id: str) -> None: ...


def _epoch(value: Any) -> float:
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, datetime):
        return value.timestamp()
    return datetime.fromisoformat(str(value).replace("Z", "+00:00")).replace(tzinfo=timezone.utc).timestamp()


def _lines(raw: bytes) -> Iterable[dict[str, Any]]:
    for line in raw.decode("utf-8").splitlines():
        if line.strip():
            yield json.loads(line)


class AnthropicBatches:
    """Message Batches (`client.messages.batches`)."""

    provider = "anthropic"
    limit = 100_000

    def __init__(self, client: Any) -> None:
        self.client = client

    def create(self, items: list[Item], submission: str) -> str:
        requests = [{"custom_id": i.custom_id, "params": {k: v for k, v in i.body.items() if k != "stream"}}
                    for i in items]
        return self.client.with_options(max_retries=0).messages.batches.create(requests=requests).id

    def status(self, batch_id: str) -> Status:
        batch = self.client.messages.batches.retrieve(batch_id)
        counts = batch.request_counts
        done = counts.succeeded + counts.errored + counts.canceled + counts.expired
        return Status(batch.processing_status == "ended", batch.processing_status, done, done + counts.processing)

    def results(self, batch_id: str) -> dict[str, Outcome]:
        raw = self.client.messages.batches.with_raw_response.results(batch_id).http_response.read()
        outcomes = {}
        for line in _lines(raw):
            result = line.get("result") or {}
            kind = result.get("type")
            if kind == "succeeded":
                outcomes[line["custom_id"]] = Outcome("ok", 200, json.dumps(result["message"]).encode())
            elif kind == "errored":
                error = result.get("error") or {}
                detail = error.get("error") or {}
                why = f"errored: {detail.get('type', 'error')}: {detail.get('message', '')}".strip()
                if detail.get("type") == "invalid_request_error":
                    outcomes[line["custom_id"]] = Outcome("fail", 400, json.dumps(error).encode(), why)
                else:
                    outcomes[line["custom_id"]] = Outcome("retry", why=why)
            else:
                outcomes[line["custom_id"]] = Outcome("retry", why=str(kind))
        return outcomes

    def find(self, submission: str, at: float, count: int, claimed: set[str]) -> str | None:
        """The batch an uncertain create made: created near the submission time with as many requests."""
        low, high = at + CLAIM_WINDOW_S[0], at + CLAIM_WINDOW_S[1]
        found = []
        for batch in self.client.messages.batches.list(limit=100):
            counts = batch.request_counts
            total = counts.processing + counts.succeeded + counts.errored + counts.canceled + counts.expired
            created = _epoch(batch.created_at)
            if batch.id not in claimed and total == count and low <= created <= high:
                found.append((abs(created - at), batch.id))
        return min(found)[1] if found else None

    def cancel(self, batch_id: str) -> None:
        self.client.messages.batches.cancel(batch_id)


class OpenAIBatches:
    """The Batch API (`client.files` with purpose "batch", then `client.batches`)."""

    provider = "openai"
    limit = 50_000
    endpoint = "/v1/chat/completions"

    def __init__(self, client: Any) -> None:
        self.client = client

    def create(self, items: list[Item], submission: str) -> str:
        lines = [json.dumps({"custom_id": i.custom_id, "method": "POST", "url": self.endpoint, "body": i.body})
                 for i in items]
        upload = self.client.files.create(file=(f"skilltransfer-{submission}.jsonl", ("\n".join(lines) + "\n").encode(),
                                                "application/jsonl"), purpose="batch")
        batch = self.client.with_options(max_retries=0).batches.create(input_file_id=upload.id, endpoint=self.endpoint, completion_window="24h",
                                           metadata={OPENAI_SUBMISSION_KEY: submission})
        return batch.id

    def status(self, batch_id: str) -> Status:
        batch = self.client.batches.retrieve(batch_id)
        counts = batch.request_counts
        done = (counts.completed + counts.failed) if counts else 0
        total = counts.total if counts else 0
        return Status(batch.status in ("completed", "failed", "expired", "cancelled"), batch.status, done, total)

    def results(self, batch_id: str) -> dict[str, Outcome]:
        batch = self.client.batches.retrieve(batch_id)
        outcomes: dict[str, Outcome] = {}
        for file_id in (batch.error_file_id, batch.output_file_id):
            if not file_id:
                continue
            for line in _lines(self.client.files.content(file_id).read()):
                outcomes[line["custom_id"]] = self._outcome(line)
        if not outcomes and batch.status == "failed":
            errors = getattr(getattr(batch, "errors", None), "data", None) or []
            why = "; ".join(f"{getattr(e, 'code', '')}: {getattr(e, 'message', '')}" for e in errors) or "failed"
            return {"*": Outcome("retry", why=f"batch failed: {why}")}
        return outcomes

    @staticmethod
    def _outcome(line: dict[str, Any]) -> Outcome:
        response = line.get("response") or {}
        error = line.get("error") or {}
        status = int(response.get("status_code") or 0)
        body = response.get("body")
        if status == 200 and isinstance(body, dict):
            return Outcome("ok", 200, json.dumps(body).encode())
        why = error.get("message") or error.get("code") or (json.dumps(body)[:200] if body else f"HTTP {status}")
        if status and status not in RETRY_STATUSES and 400 <= status < 500:
            return Outcome("fail", status, json.dumps(body if isinstance(body, dict) else {"error": error}).encode(),
                           f"HTTP {status}: {why}")
        return Outcome("retry", why=str(why))

    def find(self, submission: str, at: float, count: int, claimed: set[str]) -> str | None:
        """The batch an uncertain create made, by the submission id in its metadata."""
        for batch in self.client.batches.list(limit=100):  # newest first
            if (batch.metadata or {}).get(OPENAI_SUBMISSION_KEY) == submission and batch.id not in claimed:
                return batch.id
            if _epoch(batch.created_at) < at + CLAIM_WINDOW_S[0]:
                break
        return None

    def cancel(self, batch_id: str) -> None:
        self.client.batches.cancel(batch_id)
