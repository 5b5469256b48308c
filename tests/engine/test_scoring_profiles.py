"""Scoring profiles: the default one and gbrain skillopt-v1's published protocol, on the shared mirror."""

from __future__ import annotations

import json
import os
import statistics
from pathlib import Path

import pytest
from plugin_support import project

from pytest_skilltransfer.engine.protocol import SeedSession
from pytest_skilltransfer.engine.results import ProtocolConfig
from pytest_skilltransfer.engine.scoring import DEFAULT, GBRAIN, scoring_profile
from pytest_skilltransfer.engine.seeds import discover_seeds, load_seed
from pytest_skilltransfer.models.registry import resolve_model

GBRAIN_MIRROR = Path(os.environ.get("SKILLTRANSFER_GBRAIN_MIRROR")
                     or Path(__file__).resolve().parents[3] / "shared" / "external" / "gbrain-skillopt-v1")


def test_gbrain_scores_soft_per_rollout_median_per_task_mean_per_set():
    tasks = [[(0.0, 0.5), (1.0, 1.0), (0.0, 0.0)], [(1.0, 1.0), (1.0, 1.0), (0.0, 0.5)]]
    assert GBRAIN.task_score(tasks[0]) == 0.5 and GBRAIN.task_score(tasks[1]) == 1.0
    assert GBRAIN.set_score(tasks) == 0.75 and GBRAIN.gate_score(tasks, 0.5) == 0.75
    assert DEFAULT.set_score(tasks) == pytest.approx((1 / 3 + 2 / 3) / 2)
    assert GBRAIN.set_score([]) == 0.0


def test_gbrain_accepts_only_above_best_plus_a_twentieth_and_default_on_any_strict_gain():
    assert not GBRAIN.accepts(0.55, 0.5) and not GBRAIN.accepts(0.5, 0.5) and GBRAIN.accepts(0.56, 0.5)
    assert DEFAULT.accepts(0.51, 0.5) and not DEFAULT.accepts(0.5, 0.5)
    assert GBRAIN.samples == 3 and DEFAULT.samples == 1


def test_an_unknown_profile_names_the_known_ones():
    with pytest.raises(ValueError, match="known profiles: default, gbrain"):
        scoring_profile("strict")
    with pytest.raises(ValueError, match="unknown scoring profile"):
        ProtocolConfig(scoring="strict").validate()


@pytest.mark.skipif(not GBRAIN_MIRROR.is_dir(), reason=f"the gbrain skillopt-v1 mirror is not at {GBRAIN_MIRROR}")
def test_the_gbrain_profile_reproduces_gbrains_protocol_on_the_mirror():
    config = ProtocolConfig(scoring="gbrain", samples=GBRAIN.samples, limit_replay=0, limit_holdout=0)
    small, large = resolve_model("sim-small"), resolve_model("sim-large")
    paths = discover_seeds(GBRAIN_MIRROR)
    assert {p.name for p in paths} == {"seed-missing-structure", "seed-no-brain-first", "seed-no-verdict", "seed-verbose"}
    improved = 0
    for path in paths:
        result = SeedSession(load_seed(path), config).transfer(small, large)
        for evaluation in (result.baseline, result.transferred, result.direct):
            assert all(len(t.samples) == 3 for t in evaluation.tasks)
            medians = [statistics.median(s.soft for s in t.samples) for t in evaluation.tasks]
            assert evaluation.profile_score == pytest.approx(sum(medians) / len(medians))
        for night in result.learned.nights + result.direct_optimization.nights:
            if night.val_after is not None:
                assert night.accepted == (night.val_after > night.val_before + 0.05)
        improved += result.transferred.profile_score - result.baseline.profile_score > 0.05  # cat30's "improved"
    assert improved >= 3  # cat30's gate: at least ceil(0.75 x 4) seeds improved


def test_scoring_is_an_option_and_gbrain_implies_three_samples(pytester: pytest.Pytester) -> None:
    project(pytester, ini="skilltransfer_pair = toy-a:toy-b\n", seeds=("alpha",))
    report = pytester.path / "report.json"
    result = pytester.runpytest("--scoring=gbrain", f"--skilltransfer-json={report}", "-p", "no:randomly")
    assert result.ret in (0, 1)
    data = json.loads(report.read_text(encoding="utf-8"))
    run = data["results"][0]
    assert run["config"]["scoring"] == "gbrain" and run["config"]["samples"] == 3
    assert run["scoring"]["profile"] == "gbrain" and run["scores"]["baseline"]["scoring"]["profile"] == "gbrain"
    assert 0 <= run["scoring"]["baseline"] <= run["scoring"]["transferred"] <= 1
    bad = pytester.runpytest("--co", "--scoring=strict")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*--scoring: expected one of default, gbrain*"])


def test_the_command_line_takes_the_profile_too(capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_skilltransfer.commands.cli import main

    seeds = Path(__file__).resolve().parents[2] / "seeds"
    assert main(["--source", "sim-small", "--target", "sim-large", "--data-root", str(seeds), "--seeds",
                 "release-advisor", "--scoring", "gbrain", "--no-direct", "--json"]) == 0
    run = json.loads(capsys.readouterr().out)["results"][0]
    assert run["config"]["scoring"] == "gbrain" and run["config"]["samples"] == 3 and run["scoring"]["profile"] == "gbrain"
