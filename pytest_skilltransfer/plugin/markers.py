"""Markers per model kind: every transfer item carries the kinds of the models it calls.

    simulated  in-process models: the simulator family (sim-small, sim-large) and test families
    local      a provider API on this machine (127.0.0.1 / localhost): the local llama server, a
               loopback test server
    cloud      a provider API elsewhere (Anthropic, OpenAI): needs a key to record, costs money

An item gets one marker per kind among its source, target and optimizer, so `-m "not cloud"`
runs only the items that never leave the machine, `-m local` the local-model items.
"""

from __future__ import annotations

from typing import Any, Iterable

import pytest

KINDS = {
    "simulated": "calls an in-process model (the simulator family or a test model)",
    "local": "calls a model served on this machine (the local llama server or another loopback server)",
    "cloud": "calls a cloud provider API (Anthropic, OpenAI): needs recorded cassettes or a key",
}


def register(config: pytest.Config) -> None:
    for kind, text in KINDS.items():
        config.addinivalue_line("markers", f"{kind}: skill-transfer item that {text}")


def model_kind(model: Any) -> str:
    """simulated, local or cloud (see the module docstring)."""
    if not getattr(model, "records_http", False):
        return "simulated"
    from ..models.providers import is_loopback_url

    target = getattr(model, "target", None)
    return "local" if is_loopback_url(getattr(target, "base_url", None)) else "cloud"


def mark_kinds(item: pytest.Item, models: Iterable[Any]) -> None:
    for kind in sorted({model_kind(m) for m in models}):
        item.add_marker(getattr(pytest.mark, kind))
