"""Suite-wide settings: retries keep their default budget but wait milliseconds, so fault tests stay fast."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pytest_skilltransfer.models import sdk_common


@pytest.fixture(autouse=True)
def _fast_backoff() -> Iterator[None]:
    previous = sdk_common.call_policy()
    sdk_common.configure_calls(sdk_common.CallPolicy(backoff_s=0.001, max_backoff_s=0.01))
    yield
    sdk_common.configure_calls(previous)
