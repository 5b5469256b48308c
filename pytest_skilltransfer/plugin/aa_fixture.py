"""The `transfer_aa` fixture: an A/A check beside a transfer test (`pytest_skilltransfer.engine.aa`).

It scores the test's transferred skill again on its target, over the same held-out tasks, with
sample ids past those the protocol used, through the same seed session and cassette; the test
asserts on the result (`AACheck.no_effect`, `AACheck.gain`). Its figures go to JUnit as
`skilltransfer_aa_*` properties and, with `-v`, to the progress output.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from ..engine.aa import AACheck
    from ..engine.results import TransferResult


@pytest.fixture
def transfer_aa(request: pytest.FixtureRequest, transfer_result: "TransferResult") -> "AACheck":
    """The A/A check of this test's pair: the transferred skill scored twice on the target."""
    from ..models.base import ModelCallError, ModelError
    from .rerecord_command import rerecord_command
    from .state import SPEC, runner_of

    item = request.node
    spec = item.stash[SPEC]
    runner = runner_of(request.config)
    try:
        check = runner.aa(spec.seed_path, spec.target, transfer_result.learned.learned_skill)
    except (ModelError, ModelCallError) as exc:
        if hasattr(exc, "with_command"):
            exc = exc.with_command(rerecord_command(item, spec))
        pytest.fail(f"{spec.seed_path.name} ({spec.source} -> {spec.target}) A/A check: {exc}", pytrace=False)
    gain = check.gain
    item.user_properties.extend([
        ("skilltransfer_aa_difference", gain.mean), ("skilltransfer_aa_ci_low", gain.low),
        ("skilltransfer_aa_ci_high", gain.high), ("skilltransfer_aa_p_value", gain.p_value),
        ("skilltransfer_aa_identical", check.identical),
    ])
    runner.progress(f"{spec.seed_path.name}: {check.summary()}")
    return check
