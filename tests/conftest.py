"""The suite runs without the optional plugins that change how pytest runs (pytest-randomly reorders
and reseeds, pytest-recording owns --record-mode); the coexistence tests turn each on with `-p`.
Provider retries keep their default budget but wait milliseconds, so fault tests stay fast."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pytest_skilltransfer.models import sdk_common

OPTIONAL_PLUGINS_OFF = "-p no:randomly -p no:recording"


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytester whose runs (in-process and subprocess) start with the optional plugins off."""
    monkeypatch.setenv("PYTEST_ADDOPTS", OPTIONAL_PLUGINS_OFF)
    return pytester


@pytest.fixture(autouse=True)
def _fast_backoff() -> Iterator[None]:
    previous = sdk_common.call_policy()
    sdk_common.configure_calls(sdk_common.CallPolicy(backoff_s=0.001, max_backoff_s=0.01))
    yield
    sdk_common.configure_calls(previous)
