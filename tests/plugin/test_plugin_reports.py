"""Reports: the terminal table, JSON, Markdown and JUnit XML, and `-n 2` giving what `-n 0` gives."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from plugin_support import make_seed, project


MATRIX = "skilltransfer_source = toy-a\nskilltransfer_target = toy-b toy-half\nskilltransfer_pair = toy-b:toy-a\n"


def _run(pytester: pytest.Pytester, name: str, *args: str) -> tuple[pytest.RunResult, str, str]:
    result = pytester.runpytest_subprocess(*args, f"--skilltransfer-json={name}.json", f"--skilltransfer-md={name}.md",
                                           f"--junitxml={name}.xml")
    return result, (pytester.path / f"{name}.json").read_text(), (pytester.path / f"{name}.md").read_text()


def _table(result: pytest.RunResult) -> list[str]:
    start = next(i for i, line in enumerate(result.outlines) if "= skill transfer =" in line)
    end = next(i for i in range(start, len(result.outlines)) if result.outlines[i].startswith("=== transfer"))
    return result.outlines[start:end]


def test_xdist_gives_the_same_results_and_reports_as_one_process(pytester: pytest.Pytester) -> None:
    project(pytester, ini=MATRIX, seeds=("alpha", "gamma"))
    make_seed(pytester.path / "seeds", "beta", thresholds={"min_gain": 0.8}, tasks=40)
    pytester.runpytest_subprocess("--snapshot-update")
    serial, serial_json, serial_md = _run(pytester, "serial", "-n", "0")
    parallel, parallel_json, parallel_md = _run(pytester, "report", "-n", "2", "-v")
    serial.assert_outcomes(passed=8, failed=1)
    parallel.assert_outcomes(passed=8, failed=1)
    parallel.stdout.fnmatch_lines(["scheduling tests via SeedScheduling"])
    # each seed's collection warning once, though every worker collects every seed
    assert parallel.parseoutcomes()["warnings"] == serial.parseoutcomes()["warnings"] > 0
    assert parallel_json == serial_json
    assert parallel_md == serial_md
    assert _table(parallel) == _table(serial)
    check_reports(pytester, parallel, parallel_json, parallel_md)


def check_reports(pytester: pytest.Pytester, result: pytest.RunResult, raw_json: str, markdown: str) -> None:
    """The JSON, Markdown, JUnit and terminal reports of the run above."""
    report = json.loads(raw_json)
    assert {"experiment", "source", "target", "tokens_source", "tokens_target", "results"} <= set(report)
    assert report["source"] == ["toy-a", "toy-b"]
    results = report["results"]
    assert [(r["seed"], r["source"], r["target"]) for r in results][:3] == [
        ("alpha", "toy-a", "toy-b"), ("alpha", "toy-a", "toy-half"), ("alpha", "toy-b", "toy-a")]
    first = results[0]
    assert first["item"] == "seeds/alpha/SKILL.md::transfer[toy-a->toy-b]"
    assert (first["baseline_target"], first["transferred"], first["transfer_gain"]) == (0.0, 1.0, 1.0)
    assert {"gain", "efficiency", "scores", "learned_skill", "optimization", "cost", "config"} <= set(first)
    failed = [r for r in results if not r["gate"]["passed"]]
    assert [(r["seed"], r["target"]) for r in failed] == [("beta", "toy-half")]
    assert failed[0]["gate"]["verdict"] == "fail"
    assert failed[0]["gate"]["failures"] == ["gain +0.500 [+0.337, +0.669] (95% CI, 40 task(s), p = 2.53e-06) "
                                             "is below min_gain +0.800"]
    assert (first["gain"]["p_value"], first["gain"]["mdg"], first["gain"]["n"]) == (0.125, None, 4)
    summary = report["summary"]
    assert (summary["correction"], summary["hypotheses"]) == ("none", 9)
    assert summary["undecidable"] == 6  # the 4-task items: their smallest p, 0.125, can never pass 0.05
    assert summary["outcomes"] == {"transfers": summary["significant_gains"], "hurts": 0, "shown alone": 0,
                                   "no effect shown": 9 - summary["significant_gains"] - 6, "undecidable": 6}
    assert summary["verdicts"] == {"pass": 8, "fail": 1, "inconclusive": 0}
    pair = summary["pairs"][0]
    assert (pair["source"], pair["target"], pair["seeds"], pair["mean_gain"]) == ("toy-a", "toy-b", 3, 1.0)
    assert (pair["ci_low"], pair["ci_high"], pair["seeds_needed"]) == (None, None, 6)  # too few seeds

    first_screen, folded = markdown.split("<details>", 1)
    assert first_screen.index("### fail: beta (toy-a -> toy-half)") < first_screen.index("| seed | pair | gain [95% CI] |")
    assert "| beta | toy-a->toy-half | +0.50 [+0.34, +0.67] | transfers | **FAIL** |" in first_screen
    alpha_row = next(line for line in folded.splitlines() if line.startswith("| alpha | toy-a->toy-b |"))
    # 28 calls paid: the direct skill equals the transferred one, so its evaluation's answers are reused, not paid again
    assert alpha_row.endswith("| 28 | 610 | n/a | undecidable at 4 tasks | 4/4 | unchanged vs snapshot |"), alpha_row
    beta_row = next(line for line in folded.splitlines() if line.startswith("| beta | toy-a->toy-b |"))
    assert "| <.001 | " in beta_row and beta_row.endswith("| transfers | 40/40 | pass |"), beta_row
    assert markdown.startswith("# Skill transfer: 9 item(s), 8 passed, **1 failed**, 0 inconclusive, 0 errored\n")
    assert "### fail: beta (toy-a -> toy-half)\n\n- **gain +0.50 [+0.34, +0.67] below min_gain +0.80**\n" in markdown
    assert ("- toy-a -> toy-b: 1 transfer, 0 hurt, 0 no effect shown, 2 undecidable; mean gain over 3 seed(s) +1.00 "
            "(too few seeds for an interval over seeds: 6 needed)") in markdown
    assert markdown.count("```") == 2 and "## Gain per item" in markdown  # one chart for all nine items
    assert "\nbeta toy-a->toy-half  " in markdown

    cases = ET.parse(pytester.path / "report.xml").findall(".//testcase[@name='transfer[toy-a->toy-half]']")
    case = next((c for c in cases if ".alpha." in f".{c.get('classname')}."), None)  # xdist finishes in any order
    assert case is not None
    properties = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert properties["skilltransfer_transferred"] == "0.5"
    assert properties["skilltransfer_gain_ci_high"] == "0.9324"  # exact: P(up <= 2 | n = 4, 0.9324) = 0.025
    assert (properties["skilltransfer_outcome"], properties["skilltransfer_verdict"]) == (
        "undecidable at 4 tasks", "unchanged vs snapshot")
    assert properties["skilltransfer_gate_regression_tolerance"] == "pass"
    result.stdout.fnmatch_lines([
        "*= skill transfer =*",
        "seed   base  transf.  gain [95% CI]         p      mdg   eff.  outcome                 const  verdict",
        "toy-a -> toy-b:",
        "alpha  0.00  1.00     +1.00 ?*, +1.00?  *  >1    -     undecidable at 4 tasks  4/4    unchanged vs snapshot",
        "toy-a -> toy-half:",
        "beta   0.00  0.50     +0.50 ?+0.*, +0.*?  <.001  0.*  1.00  transfers               40/40  fail",
        "=== transfer toy-a -> toy-b, toy-a -> toy-half, toy-b -> toy-a: of 9 (seed, pair), each item alone at 95% "
        "(no error control over the run): * transfer, 0 hurt, * no effect shown, 6 undecidable (too few held-out "
        "units for any finding at the family's level); mean gain +0.83, cost $n/a ===",
        "toy-a -> toy-b: 1 transfer, 0 hurt, 0 no effect shown, 2 undecidable; mean gain over 3 seed(s) +1.00 "
        "(too few seeds for an interval over seeds: 6 needed)",
        "JSON report: */report.json",
    ], consecutive=False)
    assert max(len(line) for line in _table(result)[1:]) < 120  # header, rule, pair headings and nine rows


def test_restarts_reach_every_report(pytester: pytest.Pytester) -> None:
    """Three restarts that agree on +0.50 over 40 tasks: the bound over restarts assumes nothing about how
    optimizations vary, so three cannot show the population's mean gain above 0.1, and the report says so."""
    project(pytester, ini="skilltransfer_pair = toy-a:toy-half\nskilltransfer_restarts = 3\n", seeds=())
    make_seed(pytester.path / "seeds", "beta", tasks=40)
    result, raw_json, markdown = _run(pytester, "r", "--snapshot-update", "--transfer-min-gain=0.1")
    result.assert_outcomes(failed=1)
    data = json.loads(raw_json)["results"][0]
    assert data["config"]["restarts"] == 3 and [r["restart"] for r in data["restarts"]] == [1, 2, 3]
    spread = data["gain"]["restarts"]
    assert {k: spread[k] for k in ("count", "gains", "sd", "min", "max", "span")} == {
        "count": 3, "gains": [0.5, 0.5, 0.5], "sd": 0.0, "min": 0.5, "max": 0.5, "span": [0.0, 1.0]}
    assert 0 < spread["these"]["ci_low"] < 0.5 and spread["first"]["mean"] == 0.5  # these 3 skills; restart 1 alone
    assert data["gain"]["ci_low"] < 0 < 0.5 < data["gain"]["mdg"] and data["outcome"] == "no effect shown"
    assert data["scores"]["transferred"]["hard"]["restart_means"] == [0.5, 0.5, 0.5]
    gate = data["gate"]["gates"][0]
    assert gate["gate"] == "min_gain" and gate["verdict"] == "inconclusive" and gate["tasks_for_power"] is None
    result.stdout.fnmatch_lines(["*no number of held-out tasks decides it: the bound over 3 restarts alone spans*",
                                 "*passing min_gain +0.10 with 80% power takes more restarts than 3*"])
    result.stdout.fnmatch_lines(["seed  base  transf.  gain ?95% CI?         restarts   these skills ?95% CI?  p *",
                                 "toy-a -> toy-half:",
                                 "beta  0.00  0.50     +0.50 ?-0.*, +1.00?  3 sd 0.00  +0.50 ?+0.3*, +0.6*?   *"])
    assert "| restarts |" in markdown and "| 3 sd 0.00 |" in markdown
    snapshot = (pytester.path / "seeds" / "beta" / "__snapshots__" / "transfer[toy-a_to_toy-half].md").read_text()
    assert "- restarts: 1 (split seed 42) +0.500, 2 (split seed 43) +0.500, 3 (split seed 44) +0.500; sd 0.000" in snapshot
    case = ET.parse(pytester.path / "r.xml").find(".//testcase")
    properties = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert (properties["skilltransfer_restarts"], properties["skilltransfer_restart_gain_sd"]) == ("3", "0.0")
    assert "skilltransfer_tasks_for_min_gain" not in properties
    bad = pytester.runpytest_subprocess("--min-delta=2")
    bad.stderr.fnmatch_lines(["*--min-delta: must be within ?0, 1?, got 2.0*"])


def test_the_terminal_table_of_the_project_seeds_fits_120_columns() -> None:
    """The real matrix over the repository's seeds (replayed), with a gate that makes verdicts inconclusive."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-n", "0",
                           "--transfer-min-gain=0.5"], cwd=root, capture_output=True, text=True,
                          env={**os.environ, "CI": "true"}, timeout=600)
    lines = proc.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if "= skill transfer =" in line)
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("=== transfer"))
    table = lines[start + 1:end]
    assert len(table) >= 2 + 20 and any(line.rstrip().endswith("inconclusive") for line in table), table
    assert max(map(len, table)) < 120, "\n".join(table)
    assert {"sim-small -> smollm2-135m:", "sim-small -> smollm2-135m-anthropic:"} <= set(table)  # pair headings
