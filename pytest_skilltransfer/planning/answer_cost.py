"""What one answer cost: its usage read from the provider's JSON reply, at the prices of its lane."""

from __future__ import annotations

import json


def provider_of_path(path: str) -> str:
    """The wire of a request path: `openai` for chat completions, else `anthropic` (messages)."""
    return "openai" if path.rstrip("/").endswith("/chat/completions") else "anthropic"


def answer_usd(provider: str, model_id: str, body: bytes | str, lane: str) -> float | None:
    """Dollars of one reply body (None: no price for the model in that lane, or no readable usage)."""
    from ..models import anthropic_wire, openai_wire
    from ..pricing.prices import cost_usd

    wire = openai_wire if provider == "openai" else anthropic_wire
    try:
        usage = wire.parse_reply(json.loads(body), model_id).usage
    except Exception:  # noqa: BLE001 - a figure for progress lines, never a reason to fail
        return None
    return None if usage.unreported else cost_usd(model_id, usage, lane)

