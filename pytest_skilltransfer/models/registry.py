"""Resolving a model name: the built-in backends (the simulator, its judge, the SDK providers) register their
families with `models.base.register_family` when imported here; a plugin's `pytest_skilltransfer_configure`
hook registers more. The only module that imports the backends, so `models.base` imports nothing above it."""

from __future__ import annotations

from . import providers, sim  # noqa: F401 (imported to register their families)
from .base import Model, build_registered, registered_names
from .sim import judge  # noqa: F401 (registers the simulated judge)


def known_models() -> list[str]:
    """Human-readable list of the names each family accepts."""
    return registered_names()


def resolve_model(name: str) -> Model:
    """Build the model a user-supplied name stands for, or raise ModelError listing known names."""
    return build_registered(name)
