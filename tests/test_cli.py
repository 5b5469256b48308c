"""`python -m pytest_skilltransfer`: text and JSON output, exit codes, clear errors."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_skilltransfer.cli import main

ROOT = Path(__file__).resolve().parents[1]
SEEDS = str(ROOT / "seeds")
UPSTREAM_FIELDS = {"seed", "baseline_target", "direct_target", "transferred", "transfer_gain", "learned_skill_tail"}


def test_text_mode_prints_a_line_per_seed_and_a_summary(capsys):
    assert main(["--source", "sim-small", "--target", "sim-large", "--data-root", SEEDS,
                 "--seeds", "incident-summary,ticket-router"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].lstrip().startswith("incident-summary") and "baseline=" in out[0] and "gain " in out[0]
    assert out[1].lstrip().startswith("ticket-router")
    assert out[2].startswith("=== transfer sim-small -> sim-large: ") and "/2 positive" in out[2]


def test_json_mode_has_upstream_and_own_fields(capsys):
    assert main(["--source-backend", "sim", "--source-model", "small", "--target", "sim-large",
                 "--data-root", SEEDS, "--seeds", "release-advisor", "--no-direct", "--json", "--samples", "2"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert {"experiment", "source", "target", "tokens_source", "tokens_target", "results"} <= set(report)
    assert report["source"] == "sim-small" and report["tokens_source"] > 0
    result = report["results"][0]
    assert UPSTREAM_FIELDS <= set(result)
    assert result["direct_target"] is None and result["efficiency"] is None
    assert result["learned_skill"].endswith(result["learned_skill_tail"])
    assert {"ci_low", "ci_high", "mean", "n"} <= set(result["gain"])
    assert all(len(t["samples"]) == 2 for t in result["scores"]["baseline"]["tasks"])
    assert result["cost"]["total_usd"] == 0.0 and result["config"]["samples"] == 2


def test_unknown_model_lists_known_names(capsys):
    assert main(["--source", "sim-smal", "--target", "sim-large", "--data-root", SEEDS]) == 2
    err = capsys.readouterr().err
    assert "unknown model 'sim-smal'" in err and "sim-small" in err


def test_unknown_seed_and_missing_root(capsys, tmp_path):
    assert main(["--source", "sim-small", "--target", "sim-large", "--data-root", SEEDS, "--seeds", "nope"]) == 2
    assert "unknown seed(s) nope" in capsys.readouterr().err
    assert main(["--source", "sim-small", "--target", "sim-large", "--data-root", str(tmp_path)]) == 2
    assert "no seeds found under" in capsys.readouterr().err


def test_broken_seed_reports_file_and_line_without_traceback(tmp_path):
    seed = tmp_path / "broken"
    seed.mkdir()
    (seed / "SKILL.md").write_text("# S\n")
    (seed / "benchmark.jsonl").write_text('{"task_id": "a", "task": "t", "judge": {"kind": "rule", "checks": [{"op": "nope"}]}}\n')
    (seed / "held-out.jsonl").write_text("{oops\n")
    proc = subprocess.run([sys.executable, "-m", "pytest_skilltransfer", "--source", "sim-small", "--target", "sim-large",
                           "--data-root", str(tmp_path)], capture_output=True, text=True)
    assert proc.returncode == 2
    assert f"{seed / 'benchmark.jsonl'}:1: task 'a': check 1: unknown op 'nope'" in proc.stderr
    assert f"{seed / 'held-out.jsonl'}:1: malformed JSON" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("flag, value, message", [("--nights", "0", "nights must be at least 1"),
                                                  ("--limit-holdout", "-1", "limit_holdout must be 0")])
def test_bad_numbers_are_refused(capsys, flag, value, message):
    assert main(["--source", "sim-small", "--target", "sim-large", "--data-root", SEEDS, flag, value]) == 2
    assert message in capsys.readouterr().err


def test_table_labels_hand_written_tests():
    from pytest_skilltransfer.report import table_rows

    base = {"seed": "s", "source": "a", "target": "b", "baseline_target": 0.0, "transferred": 1.0, "direct_target": None,
            "gain": {"mean": 1.0, "ci_low": 1.0, "ci_high": 1.0}, "efficiency": None,
            "cost": {"calls": 1, "tokens": 2, "total_usd": 0.0}}
    rows = table_rows([{**base, "item": "seeds/s/SKILL.md::transfer[a->b]"}, {**base, "item": "seeds/test_x.py::test_gate"}])
    assert [r[0] for r in rows] == ["s", "s (test_gate)"]


def test_price_difference_compares_source_and_direct_optimization():
    from pytest_skilltransfer.report import price_difference

    cost = lambda src, direct: {"cost": {"optimize_source_usd": src, "optimize_direct_usd": direct}}
    assert price_difference([cost(0.01, 0.08), cost(0.01, 0.12)]) == (
        "optimization cost: on source $0.0200 vs direct on target $0.2000 (10.0x)")
    assert price_difference([cost(None, 0.1)]) is None
    assert price_difference([cost(0.01, None)]) is None
