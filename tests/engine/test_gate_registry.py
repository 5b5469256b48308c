"""A gate is declared once (`engine.gate_specs`): every place that reads gates — seed.toml, the marker, the
options, the gating, the reports, the page's chart — follows the table, and a conftest adds a gate in one call."""

from __future__ import annotations

import json

import pytest

from plugin_support import TOY_CONFTEST, make_seed
from pytest_skilltransfer.engine.gate_specs import all_gates, chart_gates, claim_gates, family_gates, threshold_gates
from pytest_skilltransfer.engine.seed_data import Thresholds
from pytest_skilltransfer.plugin.options import add_options

GATE_HOOK = '''
from pytest_skilltransfer.evidence import stats
from pytest_skilltransfer.plugin.gating import Gate


def at_most_gain(result, threshold, level):
    """Fails when the transferred skill gains more than `threshold` (a gate nobody would want; easy to see)."""
    gain = result.gain  # the item's record (pytest_skilltransfer.evidence.item_record.ItemRecord)
    verdict = stats.FAIL if gain.mean > threshold else stats.PASS
    return Gate("max_gain", verdict, threshold, gain.mean, gain.ci_low, gain.ci_high,
                f"gain {gain.mean:+.2f} against max_gain {threshold:+.2f} at level {level:.4f}")


def pytest_skilltransfer_configure(config, registry):
    registry.add_gate("max_gain", at_most_gain, help="the gain is at most X", chart=1)
'''


def test_the_table_is_what_every_reader_uses() -> None:
    assert threshold_gates() == ("min_gain", "min_score", "min_efficiency", "regression_tolerance",
                                 "harm_tolerance", "noninferiority_margin")
    assert set(claim_gates()) == {"min_gain", "min_score", "min_efficiency", "noninferiority_margin", "expect"}
    assert "min_efficiency" not in family_gates() and "expect" in family_gates()
    assert chart_gates() == {"min_gain": 1, "harm_tolerance": -1, "noninferiority_margin": -1}
    assert Thresholds(min_gain=0.2).min_gain == 0.2 and Thresholds().harm_tolerance is None
    with pytest.raises(TypeError, match="unknown gate"):
        Thresholds(max_gain=0.1)

    class Group:
        options: list[str] = []

        def addoption(self, *names: str, **_: object) -> None:
            self.options += names

    class Parser:
        group = Group()

        def getgroup(self, *_: object) -> Group:
            return self.group

        def addini(self, *_: object, **__: object) -> None:
            pass

    parser = Parser()
    add_options(parser)
    assert {f"--{all_gates()[name].option}" for name in threshold_gates()} <= set(parser.group.options)


def test_a_conftest_adds_a_gate_that_runs_end_to_end(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(TOY_CONFTEST + GATE_HOOK)
    pytester.makeini("[pytest]\nskilltransfer_limit_replay = 0\nskilltransfer_limit_holdout = 0\n")
    make_seed(pytester.path / "seeds", "alpha", thresholds={"max_gain": 0.5})
    result = pytester.runpytest("--pair", "toy-a:toy-b", "--snapshot-update", "--skilltransfer-json", "r.json",
                                "--skilltransfer-html", "page.html")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*max_gain*"])
    gates = {g["gate"]: g for g in json.loads((pytester.path / "r.json").read_text())["results"][0]["gate"]["gates"]}
    assert gates["max_gain"]["verdict"] == "fail" and gates["max_gain"]["threshold"] == 0.5
    assert 'data-gate="max_gain"' in (pytester.path / "page.html").read_text()
    assert "max_gain" not in all_gates()  # the run's gate left with its run
    # the marker takes it too, and a lower bar passes
    pytester.makepyfile(test_gate='''
import pytest

@pytest.mark.skilltransfer(seed="seeds/alpha", source="toy-a", target="toy-b", max_gain=2.0)
def test_alpha(transfer_result):
    pass
''')
    marked = pytester.runpytest("test_gate.py", "--snapshot-update")
    marked.assert_outcomes(passed=1)
