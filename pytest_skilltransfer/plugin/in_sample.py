"""`--validate-on` naming the item's target: the portable arm's comparison is then in sample (the target vetoed the
optimization it is scored on), so the run warns once per item and the outcome makes no portability claim
(`reports.result_json`: `in sample`)."""

from __future__ import annotations

import warnings
from typing import Any

import pytest


def validates_on_target(target: str, models: tuple[str, ...], runner: Any) -> bool:
    """Whether the validation set names the target, by name or by the model it resolves to."""
    if target in models:
        return True
    try:
        wanted = runner.model(target).model_id
        return any(runner.model(name).model_id == wanted for name in models)
    except Exception:  # an unknown name is reported where the model is resolved
        return False


def warn_in_sample(spec: Any, runner: Any) -> None:
    """One warning when `--validate-on` names the item's target."""
    if spec.validate_on and validates_on_target(spec.target, spec.validate_on, runner):
        warnings.warn(pytest.PytestWarning(
            f"{spec.seed_path.name} ({spec.source} -> {spec.target}): --validate-on names the target {spec.target}: "
            "its veto shaped the portable skill it is then scored on, so the comparison is in sample and no "
            "'more portable' / 'less portable' is claimed; validate on a model other than the target (a held-out "
            "model) to measure portability"), stacklevel=1)
