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
