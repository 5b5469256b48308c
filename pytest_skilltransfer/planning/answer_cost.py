"""What one answer cost: its usage read from the provider's JSON reply, at the prices of its lane."""

from __future__ import annotations

import json


def provider_of_path(path: str) -> str | None:
    """The wire of a request path (`models.wire.wire_of_path`), or None when no registered wire calls it."""
    from ..models.wire import wire_of_path

    wire = wire_of_path(path)
    return wire.name if wire is not None else None


def answer_usd(provider: str | None, model_id: str, body: bytes | str, lane: str) -> float | None:
    """Dollars of one reply body (None: no price for the model in that lane, no readable usage, or no wire)."""
    from ..models.wire import wire_named
    from ..pricing.prices import cost_usd

    try:
        usage = wire_named(provider or "").parse_reply(json.loads(body), model_id).usage
    except Exception:  # noqa: BLE001 - a figure for progress lines, never a reason to fail
        return None
    return None if usage.unreported else cost_usd(model_id, usage, lane)
