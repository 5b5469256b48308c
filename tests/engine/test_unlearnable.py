"""A seed no arm can learn is named: when even the direct optimization gains nothing, the result JSON, the
terminal summary and the page say so, with the checks that never passed in any arm."""

from __future__ import annotations

from test_sim_any_check import build

from pytest_skilltransfer.engine.protocol import SeedSession
from pytest_skilltransfer.engine.results import ProtocolConfig
from pytest_skilltransfer.models.registry import resolve_model
from pytest_skilltransfer.plugin.reporting import unlearnable_lines
from pytest_skilltransfer.evidence.item_record import ItemRecord
from pytest_skilltransfer.reports.html_item import item_section
from pytest_skilltransfer.reports.result_json import result_to_json

# a lookbehind no reader turns into an example, beside a check every answer passes
UNTEACHABLE = [{"op": "regex", "arg": "(?<=ref-)[0-9]{40}"}, {"op": "max_chars", "arg": 5000}]


def run(seed, source="sim-small", target="sim-large"):
    session = SeedSession(seed, ProtocolConfig())
    return session.transfer(resolve_model(source), resolve_model(target))


def test_an_unlearnable_seed_names_the_checks_no_arm_ever_passed(tmp_path):
    result = run(build(tmp_path / "never", "", UNTEACHABLE, ""))
    assert result.unlearnable and result.never_passed == ("regex=(?<=ref-)[0-9]{40}",)
    record = result_to_json(result)
    assert record["unlearnable"] == {"checks_never_passed": ["regex=(?<=ref-)[0-9]{40}"]}
    (line,) = unlearnable_lines([ItemRecord.from_json(record)])
    assert line == ("unlearnable: never: even direct optimization gained nothing on any pair (sim-small -> sim-large); "
                    "checks never passed in any arm: regex=(?<=ref-)[0-9]{40}")
    learned = {**record, "source": "sim-large", "target": "sim-small"}
    del learned["unlearnable"]
    both = [ItemRecord.from_json(record), ItemRecord.from_json(learned)]
    assert unlearnable_lines(both) == []  # the direct optimization gained on another pair
    page = item_section(ItemRecord.from_json(record))
    assert "<b>Nothing learnable on this pair:</b> even direct optimization on sim-large gained nothing" in page
    assert "<code>regex=(?&lt;=ref-)[0-9]{40}</code>" in page


def test_a_learnable_seed_says_nothing_of_the_kind(tmp_path):
    result = run(build(tmp_path / "hex", "", [{"op": "regex", "arg": "#[0-9a-fA-F]{6}"}], ""))
    assert not result.unlearnable and result.never_passed == ()
    assert "unlearnable" not in result_to_json(result)
