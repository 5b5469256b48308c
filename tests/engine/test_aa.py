"""The A/A check: one skill scored twice with different sample ids; no effect may be reported."""

from pathlib import Path

import pytest
from scripted_model import ScriptedModel, router_seed

from pytest_skilltransfer.engine.aa import aa_check
from pytest_skilltransfer.engine.protocol import SeedSession
from pytest_skilltransfer.engine.results import ProtocolConfig
from pytest_skilltransfer.models.registry import resolve_model

CHECKS = {"kind": "rule", "checks": [{"op": "contains", "arg": "Owner:"}]}


@pytest.fixture
def seed(tmp_path: Path):
    return router_seed(tmp_path / "router", CHECKS, train=6, held_out=24,
                       skill="# Router\nRoute the ticket and name its owner.\n")


def test_a_deterministic_model_answers_identically_and_shows_no_effect(seed):
    model = ScriptedModel("greedy", lambda skill, task, sample: f"{task}. Owner: @a" if int(task[-2:]) % 3 else task)
    check = aa_check(SeedSession(seed, ProtocolConfig(samples=2)), model, seed.skill)
    assert check.first_sample == 2
    assert [r.sample_id for r in model.requests] == [0, 1] * 24 + [2, 3] * 24  # new requests, never a repeat
    assert check.identical == 24 and check.gain.mean == 0 and check.gain.p_value == 1.0 and check.no_effect
    assert "24/24 tasks answered identically" in check.summary()


def test_sampling_noise_differs_task_by_task_but_the_interval_holds_zero(seed):
    check = aa_check(SeedSession(seed, ProtocolConfig()), resolve_model("sim-small"),
                     seed.skill + "\nAlways end with the line `Owner: <team>`.\n")
    assert check.identical < 24  # the simulator's noise is keyed by the sample id
    assert check.no_effect and check.gain.p_value > 0.05


def test_a_model_that_changes_with_the_sample_id_is_caught(seed):
    model = ScriptedModel("drifting", lambda skill, task, sample: f"{task}. Owner: @a" if sample else task)
    check = aa_check(SeedSession(seed, ProtocolConfig()), model, seed.skill)
    assert check.gain.mean == 1.0 and not check.no_effect and check.gain.p_value < 0.001


def test_a_sampled_check_sends_its_temperature_on_two_fresh_scorings(seed):
    model = ScriptedModel("greedy", lambda skill, task, sample: f"{task}. Owner: @a")
    session = SeedSession(seed, ProtocolConfig(samples=2))
    greedy = session.evaluate(model, seed.skill, "test")  # the protocol's own scoring: not reused when sampled
    sent = len(model.requests)
    check = aa_check(session, model, seed.skill, temperature=0.8)
    sampled = model.requests[sent:]
    assert [r.sample_id for r in sampled] == [0, 1] * 24 + [2, 3] * 24 and {r.temperature for r in sampled} == {0.8}
    assert check.first is not greedy and check.temperature == 0.8 and check.no_effect
    assert "at temperature 0.8" in check.summary()


def test_aa_temperature_marker_is_checked() -> None:
    from pytest_skilltransfer.plugin.aa_fixture import aa_temperature

    class Item:
        nodeid = "test_x.py::test_aa"

        def __init__(self, marker):
            self.marker = marker

        def get_closest_marker(self, name):
            return self.marker

    assert aa_temperature(Item(None)) is None
    assert aa_temperature(Item(pytest.mark.skilltransfer_aa(temperature=0.7).mark)) == 0.7
    for bad in (pytest.mark.skilltransfer_aa(temperature=0).mark, pytest.mark.skilltransfer_aa(temperature="hot").mark,
                pytest.mark.skilltransfer_aa(temp=0.7).mark):
        with pytest.raises(pytest.fail.Exception, match="skilltransfer_aa"):
            aa_temperature(Item(bad))


def test_the_plan_counts_both_scorings_of_a_sampled_check(seed):
    from pytest_skilltransfer.planning.plan import Planner

    planner = Planner(seed, ProtocolConfig())
    greedy = planner.aa_check("sim-small", "sim-small", "claude-sonnet-5-5")
    sampled = planner.aa_check("sim-small", "sim-small", "claude-sonnet-5-5", sampled=True)
    assert greedy.calls == 24 and sampled.calls == 48 and sampled.key != greedy.key
