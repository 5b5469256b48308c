"""The plan's expected figure calibrated from the cassettes: once the cassettes hold enough calls of a model,
the plan expects replies and prompts of the sizes those calls showed, and a seed recorded next costs what the
plan expected for it (within 30%), while its bound stays a bound."""

from __future__ import annotations

import json
import re

import pytest
from fake_provider import FakeProvider
from plugin_support import copy_project_seed, loopback_project, make_seed

from pytest_skilltransfer.models.base import Usage
from pytest_skilltransfer.planning.calibration import Calibration

PRICES = '"fake-*" = { input = 1.0, output = 5.0 }'


def _item_rows(lines: list[str]) -> dict[str, list[str]]:
    return {cells[0]: cells for cells in (re.split(r"\s{2,}", line.strip()) for line in lines)
            if cells[0].startswith("seeds/")}


@pytest.mark.parametrize("second", ["beta", "release-advisor"])
def test_a_seed_recorded_after_others_costs_what_the_calibrated_plan_expected(pytester: pytest.Pytester,
                                                                              second: str) -> None:
    """Calibrated on a toy seed, then a seed like it (`beta`) and a project seed of 24 held-out tasks."""
    with FakeProvider() as fake:
        loopback_project(pytester, fake, PRICES)
        make_seed(pytester.path / "seeds", "alpha", tasks=12)
        options = ["--pair=small:large", "-p", "no:randomly"]  # the default protocol
        assumed = _item_rows(pytester.runpytest_subprocess("--plan", *options).stdout.lines)
        first = pytester.runpytest_subprocess("--record-mode=once", "--snapshot-update", *options)
        assert first.ret == 0, first.stdout.str()

        if second == "beta":
            make_seed(pytester.path / "seeds", "beta", tasks=12)
        else:
            copy_project_seed(pytester.path / "seeds", second)
        planned = pytester.runpytest_subprocess("--plan", "--skilltransfer-json=plan.json", *options)
        assert planned.ret == 0, planned.stdout.str()
        planned.stdout.fnmatch_lines(["expected figures calibrated from 1 recorded item*",
                                      "  baseline fake-large agent: paid *x the expected prompt tokens, *x the expected reply tokens"])
        rows = _item_rows(planned.stdout.lines)
        beta = next(cells for name, cells in rows.items() if name.startswith(f"seeds/{second}/"))
        bound, expected = float(beta[4]), float(beta[5])
        alpha = next(name for name in rows if name.startswith("seeds/alpha"))
        assert float(rows[alpha][4]) == float(assumed[alpha][4]), "calibration never moves a bound"
        calibration = json.loads((pytester.path / "plan.json").read_text())["plan"]["calibration"]
        assert calibration["items"] == 1 and "baseline fake-large agent" in calibration["ratios"]

        run = pytester.runpytest_subprocess("--record-mode=once", "--snapshot-update",
                                            "--skilltransfer-json=r.json", *options)
        assert run.ret == 0, run.stdout.str()
        report = json.loads((pytester.path / "r.json").read_text())
        (paid,) = [r["cost"]["total_usd"] for r in report["results"] if r["seed"] == second]
    print(f"{second}: paid ${paid:.6f}, expected ${expected:.6f} (calibrated; {paid / expected:.2f}x), bound ${bound:.6f}")
    assert paid <= bound
    assert 0.7 * expected <= paid <= 1.3 * expected


def test_a_key_no_recorded_item_showed_keeps_the_assumptions() -> None:
    from pytest_skilltransfer.engine.ledger import Tally
    from pytest_skilltransfer.planning.calibration import calibrated
    from pytest_skilltransfer.planning.plan import Share, Unit

    seen = Unit(("s", "baseline", "m"), "baseline", (Share("m", "agent", 10, 1000, 500, 10, 400, 200),))
    other = Unit(("s", "direct", "m"), "direct", (Share("m", "agent", 10, 1000, 500, 10, 400, 200),))
    calibration = Calibration()
    calibration.observe([seen], {"baseline": {("m", "agent"): Tally(calls=10, usage=Usage(200, 50))}})
    assert calibration.ratios("baseline", "m", "agent") == (0.5, 0.25)
    new_seen, new_other = calibrated([seen, other], calibration)
    assert (new_seen.shares[0].expected_input, new_seen.shares[0].expected_output) == (200, 50)
    assert new_seen.shares[0].input_tokens == 1000, "bounds never move"
    assert new_other == other
