"""No option turns a failure into a pass: over random tables, whenever the plain run (one optimization, one
sample, tasks as units, inconclusive failing) fails an item's harm, min_gain or regression gate, the same
evidence read with an option fails the item too: clusters, every `--transfer-inconclusive` action, restarts
(restart 1 is the plain run), the direct reference on demand, and the run family's
correction (`none` judges each item alone, which only fails more). `--validate-on` adds an arm beside the item and
leaves its gates alone (`test_validate_on.py`); more samples per task are other evidence (their first sample is
the plain run's), so they are not in this property; uncertain judge verdicts only turn a pass into
inconclusive (`gating._judge_stability` re-gates a pass alone)."""

from __future__ import annotations

import random

import pytest

from pytest_skilltransfer.engine.seed_data import Thresholds
from pytest_skilltransfer.evidence import stats
from pytest_skilltransfer.evidence.item_record import ItemRecord
from pytest_skilltransfer.plugin.gating import evaluate, item_fails

ACTIONS = ("fail", "xfail", "pass")


def _record(before: list[float], afters: list[list[float]], clusters: list[str | None] | None = None,
            **fields: object) -> ItemRecord:
    """An item's record, as much of it as the gates read."""
    clusters = clusters or [None] * len(before)
    gain = stats.clustered_gain(before, afters, clusters) if any(clusters) else stats.restart_gain(before, afters)
    tasks = [{"task_id": f"t{i}", "hard": stats.mean(a[i] for a in afters),
              **({"cluster": clusters[i]} if clusters[i] else {}),
              **({"restarts": [a[i] for a in afters]} if len(afters) > 1 else {})} for i in range(len(before))]
    base = [{"task_id": f"t{i}", "hard": b, **({"cluster": clusters[i]} if clusters[i] else {})}
            for i, b in enumerate(before)]
    before_score, after_score = stats.score(before).as_dict(), stats.score([t["hard"] for t in tasks]).as_dict()
    return ItemRecord.from_json({
        "seed": "a", "source": "s", "target": "t", "baseline_target": before_score["mean"],
        "transferred": after_score["mean"], "gain": gain.as_dict(), "direct_target": None,
        "scores": {"baseline": {"hard": before_score, "soft": before_score, "tasks": base},
                   "transferred": {"hard": after_score, "soft": after_score, "tasks": tasks}}, **fields})


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
    for _ in range(40):
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
        variants = {
            "clusters": _record(before, afters[:1], clusters),
            "restarts": _record(before, afters),
            "clusters and restarts": _record(before, afters, clusters),
            "direct on demand": _record(before, afters[:1], direct_skipped=True),
        }
        for name, record in variants.items():
            for action in ACTIONS:
                outcome = evaluate(record, thresholds, committed, correction="bonferroni", family=family)
                assert item_fails(outcome, action), (name, action, [g.message for g in outcome.gates])
        alone = evaluate(_record(before, afters[:1]), thresholds, committed, correction="none")
        assert all(item_fails(alone, action) for action in ACTIONS)
    assert failed >= 5  # the property was put to the test
