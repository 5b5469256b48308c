"""Clustered held-out tasks: clusters are the units of the gain's test and interval, unclustered seeds unchanged."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from plugin_support import item_record, make_seed, project
from pytest_skilltransfer.evidence import stats
from pytest_skilltransfer.engine.task_files import read_tasks
from pytest_skilltransfer.engine.seed_data import SeedProblem

RULE = {"kind": "rule", "checks": [{"op": "contains", "arg": "Owner:"}]}


def copies(values: list[float], size: int) -> list[float]:
    return [v for v in values for _ in range(size)]


# -- the statistics ------------------------------------------------------------------------------

CLUSTER_GAINS = [1, 1, 0, 0, 1, 0, 1, -1, 1, 1]  # one binary move per cluster


def test_copies_within_clusters_count_once() -> None:
    """Ten clusters of four identical tasks carry the evidence of ten tasks, not forty."""
    after = [float(max(g, 0)) for g in copies(CLUSTER_GAINS, 4)]
    before = [float(max(-g, 0)) for g in copies(CLUSTER_GAINS, 4)]
    clusters = copies([f"c{i}" for i in range(10)], 4)
    tasks = stats.paired_gain(before, after)
    clustered = stats.clustered_gain(before, [after], clusters)
    ten = stats.paired_gain(before[::4], after[::4])  # one task per cluster
    assert clustered.clustered and clustered.n == 10 and clustered.tasks == 40
    assert (clustered.low, clustered.high, clustered.p_value) == pytest.approx((ten.low, ten.high, ten.p_value))
    assert clustered.mean == pytest.approx(tasks.mean) == pytest.approx(0.5)
    assert clustered.design_effect == pytest.approx(39 / 9)  # (n - 1) / (C - 1) for exact copies: about the size
    assert clustered.high - clustered.low > 1.7 * (tasks.high - tasks.low)
    assert tasks.low > 0 and clustered.low < 0  # forty "independent" tasks would claim a transfer
    for gain in (tasks, clustered):  # the p-value and the interval come from one test
        assert (gain.p_value <= 0.05) == (gain.low > 0 or gain.high < 0)
    record = clustered.as_dict()
    assert {k: record[k] for k in ("unit", "clusters", "tasks", "n")} == {"unit": "cluster", "clusters": 10,
                                                                          "tasks": 40, "n": 10}


def test_without_a_shared_cluster_nothing_changes() -> None:
    """No cluster of two or more tasks: exactly the per-task gain, and the same JSON shape."""
    rng = random.Random(3)
    before = [float(rng.random() < 0.4) for _ in range(24)]
    after = [float(rng.random() < 0.7) for _ in range(24)]
    plain = stats.paired_gain(before, after)
    for clusters in ([None] * 24, [f"own-{i}" for i in range(24)], [None] * 23 + ["alone"]):
        assert stats.clustered_gain(before, [after], clusters) == plain
    assert "unit" not in plain.as_dict()


def test_unequal_clusters_weigh_the_same_and_a_p_value_agrees_with_its_interval() -> None:
    """The estimand with clusters is the mean over clusters; the per-task mean is reported beside it."""
    before = [0.0] * 12
    after = [1.0] * 9 + [0.0, 0.0, 0.0]
    clusters = ["big"] * 9 + ["a", "b", "c"]
    gain = stats.clustered_gain(before, [after], clusters)
    assert gain.n == 4 and gain.mean == pytest.approx(0.25) and gain.task_mean == pytest.approx(0.75)
    assert stats.undecidable_units(gain.n) and gain.p_value > 0.05 and gain.low < 0 < gain.high


def test_restarts_average_within_clusters_first() -> None:
    """With restarts each restart's tasks are averaged within clusters, then the two-level machinery runs."""
    before = [0.0] * 24
    afters = [[float((i + r) % 3 == 0) for i in range(24)] for r in range(3)]
    clusters = [f"c{i // 3}" for i in range(24)]
    gain = stats.clustered_gain(before, afters, clusters)
    means = lambda values: stats.cluster_means(values, clusters)  # noqa: E731
    direct = stats.restart_gain(means(before), [means(a) for a in afters])
    assert (gain.n, gain.tasks, gain.low, gain.high, gain.p_value) == (8, 24, direct.low, direct.high, direct.p_value)
    assert len(gain.restart_gains) == 3


def test_the_regression_gate_counts_clusters() -> None:
    before = {f"t{i}": 1.0 for i in range(24)}
    after = {f"t{i}": 0.0 if i < 8 else 1.0 for i in range(24)}  # 8 of 24 drop, all in two clusters
    plain = stats.regression(before, after, 0.0)
    clustered = stats.regression(before, after, 0.0, clusters={f"t{i}": f"c{i // 4}" for i in range(24)})
    assert plain.verdict == stats.FAIL and clustered.verdict == stats.PASS
    assert "over 6 cluster(s) of 24 common task(s)" in clustered.message()


# -- coverage with intra-cluster correlation (seeded simulation) ----------------------------------

CLUSTERS, SIZE, RUNS = 12, 5, 300
KINDS = ((0.1, 0.9), (0.5, 0.3))  # (P(pass) before, after) of a cluster's tasks: helped strongly, or hurt a little
TRUE_GAIN = ((0.9 - 0.1) + (0.3 - 0.5)) / 2  # each kind equally likely; equal cluster sizes


def simulate(rng: random.Random) -> tuple[list[float], list[float], list[str]]:
    """One held-out set: each cluster's kind drawn at random, its tasks' scores independent given the kind."""
    before, after, clusters = [], [], []
    for c in range(CLUSTERS):
        p_before, p_after = KINDS[rng.random() < 0.5]
        for _ in range(SIZE):
            before.append(float(rng.random() < p_before))
            after.append(float(rng.random() < p_after))
            clusters.append(f"c{c}")
    return before, after, clusters


def covers(n: int, up: float, down: float, value: float) -> bool:
    """The 95% interval holds `value` exactly when the test rejects it on neither side."""
    return stats.gain_decision(n, up, down, value) == stats.INCONCLUSIVE


def test_cluster_units_cover_where_task_units_do_not() -> None:
    rng = random.Random(20261203)
    task_hits = cluster_hits = 0
    for _ in range(RUNS):
        before, after, clusters = simulate(rng)
        differences = [a - b for b, a in zip(before, after)]
        means = stats.cluster_means(differences, clusters)
        task_hits += covers(len(differences), sum(d for d in differences if d > 0),
                            -sum(d for d in differences if d < 0), TRUE_GAIN)
        cluster_hits += covers(len(means), sum(m for m in means if m > 0), -sum(m for m in means if m < 0), TRUE_GAIN)
    assert cluster_hits / RUNS >= 0.93
    assert task_hits / RUNS < 0.85  # the task-unit interval treats correlated tasks as independent


# -- the loader and the schema -------------------------------------------------------------------


@pytest.mark.parametrize("value", ["", "   ", 3, None, ["a"]])
def test_a_bad_cluster_is_a_problem_with_file_and_line(tmp_path: Path, value: object) -> None:
    path = tmp_path / "held-out.jsonl"
    good = {"task_id": "t-1", "task": "Write it.", "cluster": "billing", "judge": RULE}
    path.write_text(json.dumps(good) + "\n" + json.dumps({**good, "task_id": "t-2", "cluster": value}) + "\n")
    problems: list[SeedProblem] = []
    tasks = read_tasks(path, problems)
    assert [t.cluster for t in tasks] == ["billing"]
    assert [str(p) for p in problems] == [
        f"{path}:2: task 't-2': 'cluster' must be a non-empty string naming the task's family (a topic or "
        f"paraphrase group), got {json.dumps(value)}; remove it to make the task a cluster of its own"]


# -- end to end ----------------------------------------------------------------------------------


def test_a_clustered_seed_reports_clusters_and_the_design_effect(pytester: pytest.Pytester) -> None:
    project(pytester, ini="skilltransfer_source = toy-a\nskilltransfer_target = toy-half\n", seeds=())
    root = pytester.path / "seeds"
    make_seed(root, "flat", tasks=40)
    make_seed(root, "topics", tasks=40, cluster_size=5)  # 8 clusters: 3 or 2 of each 5 tasks improve
    result = pytester.runpytest_subprocess("--snapshot-update", "--skilltransfer-json=out.json",
                                           "--transfer-min-gain=0.1", "--transfer-min-score=0.1",
                                           "--skilltransfer-md=out.md",
                                           "--skilltransfer-html=out.html", "--junitxml=junit.xml")
    report = {r["seed"]: r for r in json.loads((pytester.path / "out.json").read_text())["results"]}
    flat, topics = report["flat"]["gain"], report["topics"]["gain"]
    assert "unit" not in flat and flat["n"] == 40
    assert (topics["unit"], topics["clusters"], topics["tasks"], topics["n"]) == ("cluster", 8, 40, 8)
    assert topics["mean"] == flat["mean"] == 0.5 and topics["design_effect"] is not None
    assert topics["ci_high"] - topics["ci_low"] > flat["ci_high"] - flat["ci_low"]
    assert [t.get("cluster") for t in report["topics"]["scores"]["baseline"]["tasks"][4:6]] == ["topic-0", "topic-1"]
    assert all("cluster" not in t for t in report["flat"]["scores"]["transferred"]["tasks"])
    result.stdout.fnmatch_lines([
        "*INCONCLUSIVE gain +0.500 ?-0.*, +0.*? (95% CI, 8 cluster(s) of 40 task(s), p = *) neither shows min_gain "
        "+0.100 nor rules it out; the same per-cluster result over * cluster(s) (now 8) would decide it*",
        "*passing min_gain +0.10 with 80% power needs * clusters *",
        "  baseline      0.00  ?0.00, 0.37?   0.50",  # Clopper-Pearson over 8 cluster means, not 40 tasks
        "  gain +0.50 ?-0.*, +0.*? over 8 cluster(s) of 40 task(s), design effect *, p = 0.* (8 improved, 0 worse, "
        "0 tied clusters)*",
    ], consecutive=False)
    result.stdout.fnmatch_lines(["seed *clusters*", "flat *-*transfers*pass*",
                                 "topics *8 of 40, deff *no effect shown*inconclusive*"], consecutive=False)
    score_gate = next(g for g in report["topics"]["gate"]["gates"] if g["gate"] == "min_score")
    assert "transferred score 0.500 [0.157, 0.843] (95% CI, 8 cluster(s) of 40 task(s))" in score_gate["message"]
    effect = f"{topics['design_effect']:.2f}"
    markdown = (pytester.path / "out.md").read_text()
    assert f"| 8 of 40, deff {effect} |" in markdown and "clusters: held-out tasks grouped by `cluster`" in markdown
    page = (pytester.path / "out.html").read_text()
    assert f"over 8 cluster(s) of 40 task(s), design effect {effect}" in page
    assert f'<td class="num">8 of 40, deff {effect}</td>' in page and '<span class="cluster">topic-0</span>' in page
    snapshot = next((root / "topics" / "__snapshots__").rglob("*.md")).read_text()
    assert f"- gain: +0.50 [" in snapshot and f"over 8 cluster(s) of 40 task(s), design effect {effect}, p = " in snapshot
    junit = (pytester.path / "junit.xml").read_text()
    assert 'name="skilltransfer_clusters" value="8"' in junit and 'name="skilltransfer_tasks" value="40"' in junit
    assert f'name="skilltransfer_design_effect" value="{topics["design_effect"]}"' in junit


def test_too_few_clusters_for_any_verdict_is_said_plainly(pytester: pytest.Pytester) -> None:
    project(pytester, ini="skilltransfer_source = toy-a\nskilltransfer_target = toy-contrary\n", seeds=())
    make_seed(pytester.path / "seeds", "three-topics", tasks=12, cluster_size=4)
    result = pytester.runpytest_subprocess("--snapshot-update", "--skilltransfer-json=out.json")
    result.stdout.fnmatch_lines([
        "*seed three-topics: 3 cluster(s) of 12 held-out task(s) can never show a significant gain or harm*"
        "add clusters*(at least 6)*",
    ], consecutive=False)
    report = json.loads((pytester.path / "out.json").read_text())["results"][0]
    assert report["outcome"] == "undecidable at 3 clusters"


def test_an_inconclusive_clustered_harm_never_passes_what_the_tasks_fail(pytester: pytest.Pytester) -> None:
    """24 held-out tasks in 4 clusters, every task worse: over clusters no verdict is possible (inconclusive), so
    the harm gate reads the tasks, as the run without clusters does, and fails; `--transfer-inconclusive=pass`
    cannot turn it green."""
    project(pytester, ini="skilltransfer_source = toy-a\nskilltransfer_target = toy-contrary\n", seeds=())
    make_seed(pytester.path / "seeds", "harm-probe", tasks=24, cluster_size=6)
    for action in ("pass", "xfail", "fail"):
        result = pytester.runpytest_subprocess("--snapshot-update", f"--transfer-inconclusive={action}",
                                               "-p", "no:cacheprovider")
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines(["*FAILED harm: the learned skill makes toy-contrary worse than its own baseline "
                                     "over the held-out tasks: gain -1.000 *24 task(s), each its own unit) lies below "
                                     "-0.000*over clusters: harm neither shown nor ruled out: gain -1.000 *4 cluster(s) of 24 task(s)*too few "
                                     "clusters*"],
                                    consecutive=False)


def test_a_declared_outcome_cannot_be_shown_by_too_few_clusters() -> None:
    from pytest_skilltransfer.plugin.gating import evaluate
    from pytest_skilltransfer.engine.seed_data import Thresholds

    gain = stats.clustered_gain([1.0] * 12, [[0.0] * 12], [f"c{i % 5}" for i in range(12)])
    result = item_record(source="a", target="b", gain=gain.as_dict(), scores={"transferred": _arm([])})
    assert result.gain.to_json() == gain.as_dict()  # the clustered keys come and go together
    for expected in ("no effect shown", "hurts"):
        outcome = evaluate(result, Thresholds(harm_tolerance=0.0), expected=expected)
        assert outcome.verdict == stats.INCONCLUSIVE
        assert "too few clusters for any verdict: 5 cluster(s)" in outcome.inconclusive[0]
    six = stats.clustered_gain([1.0] * 12, [[0.0] * 12], [f"c{i % 6}" for i in range(12)])
    result = item_record(source="a", target="b", gain=six.as_dict(), scores={"transferred": _arm([])})
    assert evaluate(result, Thresholds(harm_tolerance=0.0), expected="hurts").verdict == stats.PASS
    assert evaluate(result, Thresholds(harm_tolerance=0.0)).verdict == stats.FAIL  # 6 clusters all worse: harm


def _arm(tasks: list[dict]) -> dict:
    score = {"mean": 0.0, "ci_low": 0.0, "ci_high": 1.0, "n": len(tasks)}
    return {"hard": score, "soft": score, "tasks": tasks}


def test_compare_to_takes_the_base_score_over_clusters_as_this_run_does() -> None:
    from pytest_skilltransfer.plugin.compare_to import _mean_over_units

    committed = {"a": 1.0, "b": 1.0, "c": 1.0, "d": 0.0}
    tasks = [{"task_id": t, **({"cluster": "x"} if t != "d" else {})} for t in committed]
    result = item_record(scores={"transferred": _arm(tasks)})
    assert _mean_over_units(committed, result) == pytest.approx(0.5)  # two units: cluster x (1.0) and d (0.0)
    assert _mean_over_units(committed, item_record(scores={"transferred": _arm([])})) == pytest.approx(0.75)
