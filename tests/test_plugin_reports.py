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
    start = next(i for i, line in enumerate(result.outlines) if "skill transfer" in line)
    return result.outlines[start:start + 13]


def test_xdist_gives_the_same_results_and_reports_as_one_process(pytester: pytest.Pytester) -> None:
    project(pytester, ini=MATRIX, seeds=("alpha", "gamma"))
    make_seed(pytester.path / "seeds", "beta", thresholds={"min_gain": 0.6})
    serial, serial_json, serial_md = _run(pytester, "serial", "-n", "0", "--snapshot-update")
    parallel, parallel_json, parallel_md = _run(pytester, "report", "-n", "2", "-v")
    serial.assert_outcomes(passed=8, failed=1)
    parallel.assert_outcomes(passed=8, failed=1)
    parallel.stdout.fnmatch_lines(["scheduling tests via SeedScheduling"])
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
    assert failed[0]["gate"]["failures"] == ["gain +0.500 is below min_gain +0.600"]

    assert "| alpha | toy-a->toy-b | 0.00 | 1.00 | 1.00 | +1.00 [+1.00, +1.00] |" in markdown
    assert "- **beta** (toy-a -> toy-half): gain +0.500 is below min_gain +0.600" in markdown
    assert markdown.count("```mermaid\nxychart-beta") == 9
    assert '    title "alpha: toy-a -> toy-half"\n    x-axis ["baseline", "transferred", "direct"]' in markdown

    case = ET.parse(pytester.path / "report.xml").find(".//testcase[@name='transfer[toy-a->toy-half]']")
    assert case is not None
    properties = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert properties["skilltransfer_transferred"] == "0.5"
    assert properties["skilltransfer_gain_ci_high"] == "1.0"
    result.stdout.fnmatch_lines([
        "*= skill transfer =*",
        "seed   pair             baseline  transferred  direct  gain ± CI             eff.  calls  tokens  $",
        "alpha  toy-a->toy-b     0.00      1.00         1.00    +1.00 ?+1.00, +1.00?  1.00  *",
        "=== transfer toy-a -> toy-b, toy-a -> toy-half, toy-b -> toy-a: 9/9 positive, mean gain +0.83, cost $n/a ===",
        "JSON report: */report.json",
    ])
