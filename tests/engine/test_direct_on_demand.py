"""The direct reference on demand: it runs only when the transferred skill shows no gain on the target, the
plan keeps it in its bound and expects it at its chance to run, and the reports say why it is missing."""

import json
from pathlib import Path

import pytest
from scripted_model import ScriptedModel, edits, router_seed

from pytest_skilltransfer.engine.protocol import SeedSession
from pytest_skilltransfer.engine.results import ProtocolConfig
from pytest_skilltransfer.planning.money import units_usd
from pytest_skilltransfer.planning.plan import Planner
from pytest_skilltransfer.evidence.item_record import ItemRecord
from pytest_skilltransfer.reports.report import seed_line
from pytest_skilltransfer.reports.result_json import result_to_json

CHECKS = {"kind": "rule", "checks": [{"op": "contains", "arg": "Owner:"}]}


@pytest.fixture
def seed(tmp_path: Path):
    return router_seed(tmp_path / "router", CHECKS, held_out=8)


def owner_rule(skill: str, task: str, sample: int) -> str:
    return f"Routed {task[-2:]}." + (" Owner: @infra" if "OWNER-LINE" in skill else "")


def run(seed, source: ScriptedModel, target: ScriptedModel, **config):
    protocol = ProtocolConfig(**{"limit_replay": 0, "limit_holdout": 0, "nights": 1, "direct_on_demand": True,
                                 **config})
    return SeedSession(seed, protocol).transfer(source, target)


def test_a_transfer_that_shows_a_gain_skips_the_direct_reference(seed):
    target = ScriptedModel("tgt", owner_rule, [edits("OWNER-LINE: end with `Owner: @team`.")])
    result = run(seed, ScriptedModel("src", owner_rule, [edits("OWNER-LINE: end with `Owner: @team`.")]), target)
    assert result.gain.low > 0
    assert result.direct is None and result.direct_optimization is None and result.direct_skipped
    assert target.reflect_prompts() == [], "the target was never asked to optimize"
    record = result_to_json(result)
    assert record["direct_skipped"] is True and record["direct_target"] is None
    assert "direct=not needed" in seed_line(ItemRecord.from_json(record))


def test_a_transfer_that_shows_no_gain_runs_the_direct_reference(seed):
    target = ScriptedModel("tgt", owner_rule, [edits("OWNER-LINE: end with `Owner: @team`.")])
    result = run(seed, ScriptedModel("src", owner_rule, [edits("Be helpful.")]), target)
    assert not result.gain.low > 0
    assert result.direct is not None and not result.direct_skipped
    assert result.direct.hard.mean == 1.0, "the target could learn: the skill did not travel"
    assert result_to_json(result)["direct_skipped"] is False


def test_every_restart_gets_its_direct_reference_when_needed(seed):
    target = ScriptedModel("tgt", owner_rule, [edits("OWNER-LINE one."), edits("OWNER-LINE two.")])
    result = run(seed, ScriptedModel("src", owner_rule, [edits("Be helpful."), edits("Be kind.")]), target,
                 restarts=2)
    assert [run.direct is not None for run in result.runs] == [True, True]


def test_the_plan_bounds_the_direct_reference_and_expects_it_at_its_chance_to_run(seed):
    always = Planner(seed, ProtocolConfig(direct_on_demand=False)).item("claude-haiku-5-5", "claude-opus-5-5",
                                                                        "claude-haiku-5-5", "claude-opus-5-5")
    planner = Planner(seed, ProtocolConfig(direct_on_demand=True, nights=2))
    on_demand = planner.item("claude-haiku-5-5", "claude-opus-5-5", "claude-haiku-5-5", "claude-opus-5-5")
    assert units_usd(on_demand) == pytest.approx(units_usd(always)), "the bound still holds the direct reference"
    direct = [u for u in on_demand if u.on_demand]
    assert {u.phase for u in direct} == {"optimize-direct", "direct"}
    # two nights keep nothing with probability 0.25; of the rest, half show no gain on the target
    assert planner.direct_chance() == pytest.approx(0.25 + 0.75 * 0.5)
    assert {u.chance for u in direct} == {planner.direct_chance()}
    if_all_run = units_usd(on_demand, "on-demand")
    assert units_usd(on_demand, "expected") + (1 - planner.direct_chance()) * if_all_run == pytest.approx(
        units_usd(always, "expected")), "the direct reference is expected at its chance to run, not left out"
    assert units_usd(on_demand, "expected") < units_usd(always, "expected")


def test_the_option_through_pytest(pytester: pytest.Pytester) -> None:
    from plugin_support import make_seed, project

    make_seed(project(pytester, seeds=()), "alpha", tasks=12)
    result = pytester.runpytest("--pair=toy-a:toy-b", "--pair=toy-a:toy-stubborn", "--transfer-direct-on-demand",
                                "--skilltransfer-json=r.json", "--no-snapshots", "-p", "no:randomly",
                                "--transfer-inconclusive=pass")
    report = {r["target"]: r for r in json.loads((pytester.path / "r.json").read_text())["results"]}
    assert report["toy-b"]["direct_skipped"] is True and report["toy-b"]["direct_target"] is None
    assert report["toy-stubborn"]["direct_skipped"] is False and report["toy-stubborn"]["direct_target"] is not None
    assert result.ret == 0, result.stdout.str()
    plain = pytester.runpytest("--pair=toy-a:toy-b", "--skilltransfer-json=r.json", "--no-snapshots")
    assert plain.ret == 0
    (record,) = json.loads((pytester.path / "r.json").read_text())["results"]
    assert record["direct_skipped"] is False and record["direct_target"] is not None, "off by default"


def test_on_demand_in_the_batch_lane_replays_offline_with_the_same_results(pytester: pytest.Pytester) -> None:
    """The direct reference is asked for after the transferred skill is scored, in its own batches; the
    cassettes then replay the run exactly, with the network gone."""
    from batch_provider import BatchProvider
    from plugin_support import project

    def results(name: str) -> list[dict]:
        report = json.loads((pytester.path / name).read_text())["results"]
        return [{k: r[k] for k in ("seed", "target", "transferred", "direct_target", "direct_skipped", "gain")}
                for r in report]

    with BatchProvider() as fake:
        project(pytester, ini="skilltransfer_pair = small:large large:small\nskilltransfer_nights = 1\n")
        pytester.makepyprojecttoml(f'''
            [tool.skilltransfer.models]
            small = "anthropic:fake-small@{fake.anthropic_url}"
            large = "openai:fake-large@{fake.openai_url}"
        ''')
        options = ("--transfer-direct-on-demand", "--transfer-inconclusive=pass", "-p", "no:randomly")
        batch = pytester.runpytest_subprocess("--record-mode=once", "--transfer-batch", "--transfer-batch-gather=0.3",
                                              "--transfer-batch-poll=0.05", "--snapshot-update",
                                              "--skilltransfer-json=batch.json", *options)
        assert batch.ret == 0, batch.stdout.str()
        assert fake.served_sync == 0 and not fake.paid_twice()
        fake.stop()
        replay = pytester.runpytest_subprocess("--record-mode=none", "--skilltransfer-json=replay.json", *options)
        assert replay.ret == 0, replay.stdout.str()
    assert results("replay.json") == results("batch.json")
    assert all(r["direct_skipped"] == (r["direct_target"] is None) for r in results("batch.json"))


def test_the_aa_check_runs_with_the_direct_reference_on_demand(pytester: pytest.Pytester) -> None:
    """A hand-written test with `transfer_aa` beside an item whose direct reference was skipped: the A/A check runs
    on the transferred skill and the test reads `direct_skipped` rather than the missing direct optimization."""
    from plugin_support import make_seed, project

    root = project(pytester, seeds=())
    make_seed(root, "alpha", tasks=12)
    (root / "test_aa_on_demand.py").write_text(
        "import pytest\n\n\n"
        "@pytest.mark.skilltransfer(seed='alpha', source='toy-a', target='toy-b')\n"
        "def test_aa(transfer_result, transfer_aa):\n"
        "    assert transfer_result.direct_skipped and transfer_result.direct_optimization is None\n"
        "    assert transfer_aa.no_effect, transfer_aa.summary()\n")
    result = pytester.runpytest("seeds/test_aa_on_demand.py", "--transfer-direct-on-demand", "--no-snapshots",
                                "-p", "no:randomly")
    result.assert_outcomes(passed=1)
