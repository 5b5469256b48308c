"""Hooks a `conftest.py` (or a plugin) implements to extend skill transfer, pytest-style.

    def pytest_skilltransfer_configure(config, registry):
        registry.add_alias("cheap", "anthropic:claude-haiku-4-5")
        registry.add_model_family("echo", lambda name: name.startswith("echo-"), EchoModel, "echo-<x>: echoes")
        registry.add_judge_op("mentions_ticket", lambda text, arg: "TICKET-" in text, arg="none",
                              description="mentions a ticket id")
        registry.add_scrubbers(request=drop_user_field, response=None)

The hook is historic: a conftest.py loaded late (in a sub-folder, during collection) is called too.
`registry` is a `pytest_skilltransfer.plugin.extensions.Registry`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from .extensions import Registry


@pytest.hookspec(historic=True)
def pytest_skilltransfer_configure(config: pytest.Config, registry: "Registry") -> None:
    """Register model backends or aliases, extra judge ops and cassette scrubbers."""
