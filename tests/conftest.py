"""The suite runs without the optional plugins that change how pytest runs (pytest-randomly reorders
and reseeds, pytest-recording owns --record-mode); the coexistence tests turn each on with `-p`."""

from __future__ import annotations

import pytest

OPTIONAL_PLUGINS_OFF = "-p no:randomly -p no:recording"


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytester whose runs (in-process and subprocess) start with the optional plugins off."""
    monkeypatch.setenv("PYTEST_ADDOPTS", OPTIONAL_PLUGINS_OFF)
    return pytester
