"""Rubric seeds through the plugin: judge options, errors, calibration, reports, and judge calls recorded
over both wire formats against a loopback provider, then replayed offline with identical results."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fake_provider import FakeProvider
from plugin_support import TOY_CONFTEST

CRITERION = 'The answer names an owner (an "Owner" line counts).'
JUDGE = {"kind": "rule", "checks": [{"op": "max_chars", "arg": 200}, {"op": "rubric", "arg": CRITERION}]}


def rubric_seed(root: Path, name: str = "owners", toml: str = "", calibration: list[dict] | None = None) -> Path:
    seed = root / name
    seed.mkdir(parents=True)
    (seed / "SKILL.md").write_text(f"# {name}\n\nRoute the ticket to a team.\n")
    line = lambda prefix, i: json.dumps({"task_id": f"{prefix}-{i:02d}", "task": f"Route ticket {i}", "judge": JUDGE})
    (seed / "benchmark.jsonl").write_text("\n".join(line("bm", i) for i in range(8)) + "\n")
    (seed / "held-out.jsonl").write_text("\n".join(line("hd", i) for i in range(4)) + "\n")
    if toml:
        (seed / "seed.toml").write_text(toml)
    if calibration is not None:
        (seed / "judge-calibration.jsonl").write_text("\n".join(json.dumps(c) for c in calibration) + "\n")
    return seed


CALIBRATION = [
    {"answer": "Routed: 3 Owner: @team", "criterion": CRITERION, "expected": "pass"},
    {"answer": "Routed: 3", "criterion": CRITERION, "expected": "fail"},
    {"answer": "Routed: 4 Owner: @db", "criterion": CRITERION, "expected": "pass"},
    {"answer": "Routed: 5, nobody in particular", "criterion": CRITERION, "expected": "fail"},
]


def toy_project(pytester: pytest.Pytester, ini: str = "", **seed: object) -> Path:
    pytester.makeconftest(TOY_CONFTEST)
    pytester.makeini("[pytest]\nskilltransfer_limit_replay = 0\nskilltransfer_limit_holdout = 0\nskilltransfer_design = fixed\n"
                     "skilltransfer_pair = toy-a:toy-b\nskilltransfer_nights = 1\n" + ini)
    return rubric_seed(pytester.path / "seeds", **seed)  # type: ignore[arg-type]


def test_a_rubric_seed_without_a_judge_fails_naming_the_seed_and_the_option(pytester: pytest.Pytester) -> None:
    toy_project(pytester)
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    assert "has rubric checks (" in result.stdout.str()
    assert ("benchmark.jsonl:1) but no judge model: pass --judge MODEL (ini: skilltransfer_judge) or set [judge] model"
            in result.stdout.str())


def test_judge_option_reports_agreement_and_calibration_in_every_report(pytester: pytest.Pytester) -> None:
    toy_project(pytester, calibration=CALIBRATION)
    result = pytester.runpytest("--judge=sim-judge", "--judge-samples=3", "--skilltransfer-json=r.json",
                                "--skilltransfer-md=r.md", "--snapshot-update")
    result.assert_outcomes(passed=1)
    result.stdout.re_match_lines([r"owners toy-a->toy-b: judge sim-judge x3: agreement \d\.\d\d over 12 verdicts, \d+ unstable, "
                                  r"calibration 4/4 = 1\.00 \[0\.40, 1\.00\] \(min 0\.80\)"])
    data = json.loads((pytester.path / "r.json").read_text())["results"][0]
    judge = data["judge"]
    assert (judge["model"], judge["samples"], judge["verdicts"]) == ("sim-judge", 3, 12)
    assert judge["calibration"]["accuracy"] == 1.0 and judge["calibration"]["disagreements"] == []
    assert data["scores"]["transferred"]["tasks"][0]["samples"][0]["rubric"][0]["criterion"] == CRITERION
    assert data["transferred"] == 1.0 and data["baseline_target"] == 0.0
    assert ("sim-judge", "judge") in {(r["model"], r["role"]) for r in data["cost"]["phases"]["baseline"]}
    assert "judge-calibration" in data["cost"]["phases"]
    assert "## Rubric judges" in (pytester.path / "r.md").read_text()


def test_a_miscalibrated_judge_fails_the_seed_with_the_disagreements(pytester: pytest.Pytester) -> None:
    wrong = [{**c, "expected": "fail" if c["expected"] == "pass" else "pass"} for c in CALIBRATION[:2]] + CALIBRATION[2:]
    toy_project(pytester, toml='[judge]\nmodel = "sim-judge"\nmin_accuracy = 0.9\n', calibration=wrong)
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    out = result.stdout.str()
    assert ("judge calibration failed for seed 'owners': accuracy sim-judge: 2/4 = 0.50 [0.07, 0.93] (min 0.90); "
            "2 disagreement(s) with the expected verdicts:") in out
    assert "judge-calibration.jsonl:1: expected fail, judge said pass (pass): " in out
    assert "judge-calibration.jsonl:2: expected pass, judge said fail (fail): " in out
    passing = pytester.runpytest("--judge-min-accuracy=off", "--snapshot-update")  # the command line wins
    passing.assert_outcomes(passed=1)


def test_a_judge_shows_unknown_model_errors_where_they_came_from(pytester: pytest.Pytester) -> None:
    toy_project(pytester, toml='[judge]\nmodel = "no-such-judge"\n')
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    assert "seed.toml [judge] model: unknown model 'no-such-judge'" in result.stdout.str()
    usage = pytester.runpytest("--judge=nope")
    assert usage.ret == pytest.ExitCode.USAGE_ERROR
    usage.stderr.fnmatch_lines(["*--judge: unknown model 'nope'*"])


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_judge_calls_record_over_the_wire_format_and_replay_offline_identically(
        pytester: pytest.Pytester, provider: str) -> None:
    fake = FakeProvider().start()
    url = fake.anthropic_url if provider == "anthropic" else fake.openai_url
    toy_project(pytester, calibration=CALIBRATION)
    pytester.makepyprojecttoml(f'''
        [tool.skilltransfer.models]
        judge = "{provider}:fake-judge@{url}"
    ''')
    args = ("--judge=judge", "--judge-samples=3", "--judge-min-accuracy=0")
    recorded = pytester.runpytest_subprocess(*args, "--record-mode=once", "--snapshot-update", "--skilltransfer-json=a.json")
    recorded.assert_outcomes(passed=1)
    fake.stop()
    served = len(fake.received)
    assert served > 0
    body = fake.received[0]["body"]
    if provider == "anthropic":
        assert body["tool_choice"] == {"type": "tool", "name": "record_verdict"}
    else:
        assert body["response_format"]["type"] == "json_schema" and body["response_format"]["json_schema"]["strict"]
    assert [p.name for p in (pytester.path / "cassettes" / "owners").glob("*.yaml")] == ["fake-judge.yaml"]

    replayed = pytester.runpytest_subprocess(*args, "--record-mode=none", "--skilltransfer-json=b.json")
    replayed.assert_outcomes(passed=1)
    assert len(fake.received) == served
    first, second = (json.loads((pytester.path / name).read_text()) for name in ("a.json", "b.json"))
    for report in (first, second):  # the regression gate runs only once a snapshot is committed
        report["results"][0].pop("gate")
    assert second == first
    judge = first["results"][0]["judge"]
    assert judge["model"] == "fake-judge" and judge["verdicts"] == 12 and judge["calibration"]["n"] == 4
    votes = [v for t in first["results"][0]["scores"]["baseline"]["tasks"] for s in t["samples"] for r in s["rubric"]
             for v in r["votes"]]
    assert set(votes) <= {"pass", "fail"} and len(votes) == 12

    (pytester.path / "seeds" / "owners" / "judge-calibration.jsonl").write_text(
        json.dumps({"answer": "new answer", "criterion": CRITERION, "expected": "pass"}) + "\n")
    missed = pytester.runpytest_subprocess(*args, "--record-mode=none")
    missed.assert_outcomes(errors=1)
    missed.stdout.fnmatch_lines(["*cassette miss: seed 'owners', model 'fake-judge', phase 'judge'*"])


def test_ini_keys_configure_the_judge_and_junit_carries_its_numbers(pytester: pytest.Pytester) -> None:
    toy_project(pytester, ini="skilltransfer_judge = sim-judge\nskilltransfer_judge_samples = 3\n"
                "skilltransfer_judge_min_accuracy = 0.9\n", calibration=CALIBRATION)
    result = pytester.runpytest("--snapshot-update", "--junitxml=report.xml")
    result.assert_outcomes(passed=1)
    assert "judge sim-judge x3:" in result.stdout.str() and "(min 0.90)" in result.stdout.str()
    import xml.etree.ElementTree as ET

    case = ET.parse(pytester.path / "report.xml").find(".//testcase")
    properties = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert properties["skilltransfer_judge"] == "sim-judge"
    assert properties["skilltransfer_judge_calibration_accuracy"] == "1.0"
    assert {"skilltransfer_judge_agreement", "skilltransfer_judge_unstable", "skilltransfer_judge_errors"} <= set(properties)


def test_a_judge_of_the_graded_models_family_is_warned_about(pytester: pytest.Pytester) -> None:
    fake = FakeProvider().start()
    try:
        toy_project(pytester)
        pytester.makepyprojecttoml(f'''
            [tool.skilltransfer.models]
            agent = "anthropic:fake-agent@{fake.anthropic_url}"
            judge = "anthropic:fake-judge@{fake.anthropic_url}"
        ''')
        result = pytester.runpytest_subprocess("--pair=agent:agent", "--judge=judge", "--record-mode=once",
                                               "--snapshot-update", "--limit-replay=2", "--limit-holdout=2",
                                               "--limit-test=2")
    finally:
        fake.stop()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["  warning: judge fake-judge shares the provider family 'anthropic' with fake-agent, "
                                 "which it grades; judges tend to favour their own family's answers*"])
