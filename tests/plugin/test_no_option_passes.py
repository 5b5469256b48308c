"""No option turns a failure into a pass: over random tables, whenever the plain run (one optimization, one
sample, one judge sample, tasks as units, inconclusive failing) fails an item's harm, min_gain or regression gate,
the same evidence read with an option fails the item too, under every `--transfer-inconclusive` action: clusters,
restarts (restart 1 is the plain run), more samples per task (each task's first sample is the plain run's), more
judge samples (each rubric check's first vote is the plain run's), the direct reference on demand, `--validate-on`
(an arm beside the item that leaves its gates alone) and the run family's correction (`none` judges each item alone,
which only fails more). The clustered harm-probe (24 held-out tasks in 4 clusters, 23 worse) fails under every
action here; tests/evidence/test_clusters.py runs it end to end."""

from __future__ import annotations

import random

import pytest

from pytest_skilltransfer.engine.seed_data import Thresholds
from pytest_skilltransfer.evidence import stats
from pytest_skilltransfer.evidence.item_record import ItemRecord
from pytest_skilltransfer.plugin.gating import evaluate, item_fails

ACTIONS = ("fail", "xfail", "pass")


def _sample(sample_id: int, hard: float, votes: tuple[str, ...] = ()) -> dict:
    """One sample in the JSON shape: a rule check decides it, or, with `votes`, one rubric check by majority."""
    if not votes:
        return {"sample_id": sample_id, "hard": hard, "soft": hard, "failed": [] if hard else ["contains=x"]}
    passed = votes.count("pass") * 2 > len(votes)
    return {"sample_id": sample_id, "hard": float(passed), "soft": float(passed),
            "failed": [] if passed else ["rubric=right"],
            "rubric": [{"criterion": "right", "passed": passed, "votes": list(votes),
                        "unstable": len(set(votes)) > 1}]}


def _record(before: list[float], afters: list[list[float]], clusters: list[str | None] | None = None,
            samples: tuple[list[list[dict]], list[list[dict]]] | None = None, **fields: object) -> ItemRecord:
    """An item's record, as much of it as the gates read; `samples` gives each task's samples (baseline,
    transferred) and then a task's score is their mean."""
    clusters = clusters or [None] * len(before)
    if samples is not None:
        before = [stats.mean(s["hard"] for s in task) for task in samples[0]]
        afters = [[stats.mean(s["hard"] for s in task) for task in samples[1]]]
    gain = stats.clustered_gain(before, afters, clusters) if any(clusters) else stats.restart_gain(before, afters)
    tasks = [{"task_id": f"t{i}", "hard": stats.mean(a[i] for a in afters),
              **({"cluster": clusters[i]} if clusters[i] else {}),
              **({"restarts": [a[i] for a in afters]} if len(afters) > 1 else {}),
              **({"samples": samples[1][i]} if samples else {})} for i in range(len(before))]
    base = [{"task_id": f"t{i}", "hard": b, **({"cluster": clusters[i]} if clusters[i] else {}),
             **({"samples": samples[0][i]} if samples else {})}
            for i, b in enumerate(before)]
    judged = samples is not None and any("rubric" in s for task in samples[0] for s in task)
    before_score, after_score = stats.score(before).as_dict(), stats.score([t["hard"] for t in tasks]).as_dict()
    return ItemRecord.from_json({
        "seed": "a", "source": "s", "target": "t", "baseline_target": before_score["mean"],
        "transferred": after_score["mean"], "gain": gain.as_dict(), "direct_target": None,
        **({"judge": {"model": "j", "samples": 3}} if judged else {}),
        "scores": {"baseline": {"hard": before_score, "soft": before_score, "tasks": base},
                   "transferred": {"hard": after_score, "soft": after_score, "tasks": tasks}}, **fields})


def _more_samples(rng: random.Random, plain: list[float], k: int) -> list[list[dict]]:
    """k samples per task, the first the plain run's."""
    return [[_sample(0, v)] + [_sample(s, float(rng.random() < 0.5)) for s in range(1, k)] for v in plain]


def _judge_samples(rng: random.Random, plain: list[float], k: int) -> list[list[dict]]:
    """One sample per task judged k times, the first vote the plain run's."""
    return [[_sample(0, 0.0, ("pass" if v else "fail",) + tuple(rng.choice(("pass", "fail", "error"))
                                                               for _ in range(k - 1)))] for v in plain]


def _draw(rng: random.Random, n: int, restarts: int) -> tuple[list[float], list[list[float]]]:
    base_rate = rng.random()
    before = [float(rng.random() < base_rate) for _ in range(n)]
    afters = []
    for _ in range(restarts):
        rate = min(1.0, max(0.0, base_rate + rng.uniform(-0.9, 0.9)))
        afters.append([float(rng.random() < rate) for _ in range(n)])
    return before, afters


@pytest.mark.parametrize("n", [12, 24])
def test_no_option_passes_what_the_plain_run_fails(n: int) -> None:
    rng = random.Random(47 + n)
    failed = 0
    for _ in range(24):
        before, afters = _draw(rng, n, 3)
        committed = {f"t{i}": v for i, v in enumerate(_draw(rng, n, 1)[1][0])}
        thresholds = Thresholds(min_gain=rng.choice((None, -0.2, 0.1)), harm_tolerance=rng.choice((0.0, 0.1)),
                                regression_tolerance=0.05, min_efficiency=rng.choice((None, 0.5)))
        family = rng.choice((1, 10, 40))
        plain = evaluate(_record(before, afters[:1]), thresholds, committed, correction="bonferroni", family=family)
        if not any(g.verdict == stats.FAIL and g.name in ("harm_tolerance", "min_gain", "regression_tolerance")
                   for g in plain.gates):
            continue
        failed += 1
        size = rng.choice((2, 3, 4, 6))
        clusters = [f"c{i % (n // size)}" for i in range(n)]
        k = rng.choice((2, 3, 5))
        more = (_more_samples(rng, before, k), _more_samples(rng, afters[0], k))
        judged = (_judge_samples(rng, before, k), _judge_samples(rng, afters[0], k))
        variants = {
            "clusters": _record(before, afters[:1], clusters),
            "restarts": _record(before, afters),
            "clusters and restarts": _record(before, afters, clusters),
            "samples": _record(before, afters[:1], samples=more),
            "clusters and samples": _record(before, afters[:1], clusters, samples=more),
            "judge samples": _record(before, afters[:1], samples=judged),
            "direct on demand": _record(before, afters[:1], direct_skipped=True),
            "validate-on": _record(before, afters[:1], portable={"validate_on": ["v"], "in_sample": False}),
        }
        for name, record in variants.items():
            outcome = evaluate(record, thresholds, committed, correction="bonferroni", family=family)
            for action in ACTIONS:
                assert item_fails(outcome, action), (name, action, [g.message for g in outcome.gates])
        alone = evaluate(_record(before, afters[:1]), thresholds, committed, correction="none")
        assert all(item_fails(alone, action) for action in ACTIONS)
    assert failed >= 5  # the property was put to the test


def test_the_clustered_harm_probe_fails_under_every_action() -> None:
    """24 held-out tasks in 4 clusters, 23 of them worse: over clusters harm is inconclusive (too few clusters), the
    tasks each their own unit show it, and no `--transfer-inconclusive` action passes the item."""
    before, after = [1.0] * 24, [0.0] * 23 + [1.0]
    clusters = [f"c{i // 6}" for i in range(24)]
    outcome = evaluate(_record(before, [after], clusters), Thresholds(harm_tolerance=0.0, regression_tolerance=None))
    harm = next(g for g in outcome.gates if g.name == "harm_tolerance")
    assert harm.verdict == stats.FAIL and "23 of 24 task(s) got worse" in harm.message, harm.message
    assert "over clusters: harm neither shown nor ruled out" in harm.message
    assert all(item_fails(outcome, action) for action in ACTIONS)
