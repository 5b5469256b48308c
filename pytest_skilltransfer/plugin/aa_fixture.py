"""The `transfer_aa` fixture: an A/A check beside a transfer test (`pytest_skilltransfer.engine.aa`).

It scores the test's transferred skill again on its target, over the same held-out tasks, with
sample ids past those the protocol used, through the same seed session and cassette; the test
asserts on the result (`AACheck.no_effect`, `AACheck.gain`). Its figures go to JUnit as
`skilltransfer_aa_*` properties and, with `-v`, to the progress output.

`@pytest.mark.skilltransfer_aa(temperature=0.8)` samples both scorings at that temperature, each call
seeded by its sample id: on a greedy model the two scorings are otherwise identical by construction.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

AA_MARKER = "skilltransfer_aa"
AA_MARKER_HELP = (f"{AA_MARKER}(temperature=None): the transfer_aa fixture samples both scorings at this temperature "
                  "(each call seeded by its sample id); without it the model's default (greedy on the local server)")

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
    temperature = aa_temperature(item)
    try:
        check = runner.aa(spec.seed_path, spec.target, transfer_result.learned.learned_skill, temperature)
    except (ModelError, ModelCallError) as exc:
        if hasattr(exc, "with_command"):
            exc = exc.with_command(rerecord_command(item, spec))
        pytest.fail(f"{spec.seed_path.name} ({spec.source} -> {spec.target}) A/A check: {exc}", pytrace=False)
    gain = check.gain
    item.user_properties.extend([
        ("skilltransfer_aa_difference", gain.mean), ("skilltransfer_aa_ci_low", gain.low),
        ("skilltransfer_aa_ci_high", gain.high), ("skilltransfer_aa_p_value", gain.p_value),
        ("skilltransfer_aa_identical", check.identical), ("skilltransfer_aa_temperature", check.temperature),
    ])
    runner.progress(f"{spec.seed_path.name}: {check.summary()}")
    return check


def aa_temperature(item: pytest.Item) -> float | None:
    """The `skilltransfer_aa(temperature=...)` of a test (None without the marker); a value that is not a
    number in (0, 2] fails the test naming the marker."""
    marker = item.get_closest_marker(AA_MARKER)
    if marker is None:
        return None
    unknown = set(marker.kwargs) - {"temperature"} or (marker.args and {"positional arguments"})
    if unknown:
        pytest.fail(f"{item.nodeid}: @pytest.mark.{AA_MARKER} takes only temperature=..., got {sorted(unknown)}",
                    pytrace=False)
    value = marker.kwargs.get("temperature")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 2:
        pytest.fail(f"{item.nodeid}: @pytest.mark.{AA_MARKER}(temperature={value!r}): use a number above 0 and at "
                    "most 2 (leave the marker out for the model's default)", pytrace=False)
    return float(value)
