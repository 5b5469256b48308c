"""The group-sequential design in a run: held-out tasks scored in waves, each pair stopped where its look decides
(or finds it futile), the design and the stop recorded in the JSON and the snapshot, and `fixed` scoring every
task at once, saying so."""

from __future__ import annotations

import json

import pytest
from plugin_support import make_seed, project

INI = "skilltransfer_design = group-sequential\nskilltransfer_pair = toy-a:toy-b toy-a:toy-stubborn\n"


def _items(pytester: pytest.Pytester) -> dict[str, dict]:
    report = json.loads((pytester.path / "r.json").read_text())
    return {r["target"]: r for r in report["results"]}


def test_pairs_stop_where_their_looks_decide(pytester: pytest.Pytester) -> None:
    """24 held-out tasks: toy-b gains on every task (decided at look 2, 12 tasks, its interval at 99.6%); toy-stubborn
    never moves (futile at look 1, 6 tasks: no effect shown, its interval at 99.9%). Every arm stops with its pair:
    the direct reference is scored on the same tasks."""
    root = project(pytester, ini=INI, seeds=())
    make_seed(root, "route", tasks=24)
    pytester.runpytest("--snapshot-update", "--skilltransfer-json=r.json", "-p", "no:randomly").assert_outcomes(passed=2)
    items = _items(pytester)
    gain, flat = items["toy-b"], items["toy-stubborn"]
    past = gain["sequential"].pop("reference")  # the run writes snapshots: the regression gate's full reference
    assert list(past) == [f"hd-{i:02d}" for i in range(12, 24)] and set(past.values()) == {1.0}
    phases = gain["cost"]["phases"]  # billed: the transferred skill's 24 answers, the baseline's 12
    assert sum(r["calls"] + r["cached"] for r in phases["transferred"]) == 24
    assert sum(r["calls"] + r["cached"] for r in phases["baseline"]) == 12
    assert gain["sequential"] == {"design": "group-sequential", "looks": [6, 12, 18, 24],
                                  "alpha_shares": [0.02, 0.08, 0.2, 0.7], "futility": "predictive",
                                  "futility_below": 0.05, "look": 2, "tasks": 12, "of": 24, "alpha_share": 0.08,
                                  "reason": "decided", "level": 0.996, "note": None}
    assert gain["gain"]["n"] == 12 and gain["gain"]["ci_low"] > 0 and gain["outcome"] == "transfers"
    assert len(gain["scores"]["direct"]["tasks"]) == len(gain["scores"]["baseline"]["tasks"]) == 12
    assert gain["family"]["alpha_share"] == 0.08 and gain["gate"]["level"] == pytest.approx(0.996)
    assert (flat["sequential"]["look"], flat["sequential"]["reason"], flat["gain"]["n"]) == (1, "futile", 6)
    assert flat["outcome"] == "no effect shown" and flat["family"]["futile"] is True
    assert flat["gain"]["p_value"] == 1.0 and flat["gain"]["ci_low"] > -1
    snapshot = next(root.glob("route/__snapshots__/*toy-b*.md")).read_text()
    assert ("- held-out design: group-sequential, looks at 6/12/18/24 task(s), alpha shares 0.02/0.08/0.2/0.7, "
            "futility: predictive probability below 0.05 or no task moved; stopped at look 2 of 4 (12 of 24 tasks): "
            "decided, interval at 99.6%") in snapshot
    assert "design=group-sequential" in snapshot
    assert ("- transferred past the stop (the regression gate's reference, not in the verdict): `hd-12=1 hd-13=1"
            in snapshot)
    pytester.runpytest("--skilltransfer-json=r.json", "-p", "no:randomly").assert_outcomes(passed=2)  # as recorded


def test_the_fixed_design_scores_every_task_and_says_so(pytester: pytest.Pytester) -> None:
    """`--transfer-design=fixed` scores all 24 tasks at 95%; restarts, which have no looks, run the fixed design
    with the reason recorded (never a silent switch)."""
    root = project(pytester, ini=INI, seeds=())
    make_seed(root, "route", tasks=24)
    pytester.runpytest("--snapshot-update", "--skilltransfer-json=r.json", "-p", "no:randomly",
                       "--transfer-design=fixed").assert_outcomes(passed=2)
    record = _items(pytester)["toy-b"]
    assert record["gain"]["n"] == 24 and "alpha_share" not in record["family"]
    assert record["sequential"] == {"design": "fixed", "looks": [24], "alpha_shares": [1.0], "futility": "none",
                                    "futility_below": None, "look": 1, "tasks": 24, "of": 24, "alpha_share": 1.0,
                                    "reason": "last look", "level": 0.95, "note": None}
    pytester.runpytest("--snapshot-update", "--skilltransfer-json=r.json", "-p", "no:randomly",
                       "--transfer-restarts=2").assert_outcomes(passed=2)
    record = _items(pytester)["toy-b"]
    assert record["sequential"]["design"] == "fixed" and record["sequential"]["note"].startswith("restarts")
    result = pytester.runpytest("--transfer-design=weekly", "-p", "no:randomly")
    assert "expected one of group-sequential, fixed" in result.stderr.str()


def test_an_open_min_score_keeps_the_looks_going(pytester: pytest.Pytester) -> None:
    """min_score 0.3: toy-stubborn's transferred score 0 over 6 tasks neither reaches 0.3 nor is ruled out at 99.9%
    (nor over 12 at 99.6%), and the last look would decide it, so its looks go on past the futile pair until 18
    tasks rule it out at 99%; the item fails min_score there. toy-b (1 on every task) stops at 12 as before, its
    min_score decided with its gain."""
    root = project(pytester, ini=INI, seeds=())
    make_seed(root, "route", thresholds={"min_score": 0.3}, tasks=24)
    pytester.runpytest("--snapshot-update", "--skilltransfer-json=r.json", "-p", "no:randomly").assert_outcomes(
        passed=1, failed=1)
    items = _items(pytester)
    flat, gain = items["toy-stubborn"], items["toy-b"]
    assert (flat["sequential"]["tasks"], flat["sequential"]["reason"], flat["gain"]["n"]) == (18, "futile", 18)
    score = next(g for g in flat["gate"]["gates"] if g["gate"] == "min_score")
    assert score["verdict"] == "fail" and "18 task(s)" in score["message"]
    assert (gain["sequential"]["tasks"], gain["sequential"]["reason"]) == (12, "decided")
