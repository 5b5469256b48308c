"""Sleep mode: record through the providers' Batch APIs at batch prices, into the same cassettes.

`configure_batch(settings, folder, ...)` turns the lane on for this process (the plugin does it for
`--transfer-batch`); `lane_send(...)` is what a provider model calls instead of its synchronous
send. The request is built and sent by the official SDK exactly as a synchronous call would be,
through a client whose transport is the lane: vcrpy sees the call first, so a recorded request is
replayed as always, and only a miss reaches the lane, whose answer vcrpy then records as the
interaction the synchronous call would have made. Batch traffic itself (create, status, results,
files) is never recorded (`cassettes.scrub`).
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from ...guards.run_scope import Scoped
from ..wire import Wire, wire_named
from .apis import BatchApi, Item
from .lane import (
    BatchLane,
    BatchLaneError,
    BatchSettings,
    BatchWaitExceeded,
    Cost,
    Group,
    Progress,
    SendSynchronously,
)
from .manifest import FILE_NAME as MANIFEST_NAME
from .manifest import custom_id

__all__ = ["BatchLane", "BatchLaneError", "BatchSettings", "BatchWaitExceeded", "MANIFEST_NAME", "SendSynchronously",
           "active_lane", "batch_client", "configure_batch", "group_for", "is_batch_control"]

BATCH_ANSWER = "skilltransfer_batch_answer"  # marks a response the lane delivered (httpx extensions)
BATCH_CONCURRENCY = 1024  # calls of one model in flight at once in batch mode: a whole step parks together

_lane: Scoped[list[BatchLane | None]] = Scoped("batch_lane", lambda: [None])  # the run's (`guards.run_scope`)
_lane_lock = threading.Lock()


def configure_batch(settings: BatchSettings | None, folder: Path | None = None, progress: Progress | None = None,
                    cost: Cost | None = None) -> BatchLane | None:
    """Turn the batch lane on (settings and the cassette folder that holds the manifest) or off (None)."""
    with _lane_lock:
        held = _lane()
        if held[0] is not None:
            held[0].close()
        held[0] = BatchLane(settings, folder or Path("cassettes"), _api_for, progress, cost) if settings else None
        return held[0]


def active_lane() -> BatchLane | None:
    with _lane_lock:
        return _lane()[0]


def is_batch_control(path: str) -> bool:
    """Whether a request path is batch traffic (never a model call, never recorded)."""
    return "/batches" in path or path.rstrip("/").endswith("/files") or "/files/" in path


def group_for(provider: str, base_url: str | None, model_id: str, api_key: str) -> Group:
    from ..sdk_common import endpoint_for

    return Group(provider, endpoint_for(provider, base_url), model_id, api_key)


def _api_for(group: Group) -> BatchApi:
    """The batch API of a group, on an ordinary SDK client (its traffic is not recorded)."""
    from ..sdk_common import cached_client, call_policy

    policy = call_policy()
    wire = wire_named(group.provider)
    if wire.batch_api is None:
        raise BatchLaneError(f"{group.name}: the {wire.name} wire has no Batch API")
    base = None if group.base_url == _default(group.provider) else group.base_url
    client = cached_client(("batch-api", group.provider, group.base_url, group.api_key, policy),
                           lambda: wire.make_client(group.api_key, base, policy.max_retries, policy.timeout_s, policy))
    return wire.batch_api(client)


def _default(provider: str) -> str:
    from ..sdk_common import endpoint_for

    return endpoint_for(provider, None)


def batch_client(lane: BatchLane, group: Group, wire: Wire, base_url: str | None, collect_only: bool = False) -> Any:
    """An SDK client whose transport parks each request in the lane (one per group, cached); `collect_only`:
    only requests a batch of an earlier run holds are parked (see `BatchLane.answer`)."""
    from ..sdk_common import cached_client, call_policy

    policy = call_policy()

    def build() -> Any:
        import httpx2

        def handle(request: Any) -> Any:
            raw = request.read()
            item = Item(custom_id(group.base_url, request.url.path, raw), request.url.path, json.loads(raw))
            # under --max-cost the lane reserves the request's step as a whole, at batch prices
            outcome, reservation = lane.answer(group, item, raw, collect_only)
            if reservation is not None:
                reservation.answered() if outcome.kind == "ok" else reservation.release()
            return httpx2.Response(outcome.status, content=outcome.body, headers={"content-type": "application/json"},
                                   extensions={BATCH_ANSWER: True})

        return wire.make_client(group.api_key, base_url, 0, policy.timeout_s, policy,
                                transport=httpx2.MockTransport(handle))

    return cached_client(("batch-lane", id(lane), group, policy, collect_only), build)
