"""Pure parts of the plugin: the gates, the snapshot text and the Markdown chart, on a fixed result."""

from __future__ import annotations

from typing import Any

from pytest_skilltransfer.plugin import gating, markdown_report, snapshots
from pytest_skilltransfer.seeds import Thresholds


def _estimate(mean: float, low: float, high: float) -> dict[str, float]:
    return {"mean": mean, "ci_low": low, "ci_high": high, "n": 4}


def result(samples: int = 1, direct: float | None = 0.75, efficiency: float | None = 0.67) -> dict[str, Any]:
    evaluation = lambda mean: {"hard": _estimate(mean, 0.0, 1.0), "soft": _estimate(mean, 0.0, 1.0), "tasks": []}
    return {
        "seed": "alpha", "source": "small", "target": "large", "config": {"samples": samples},
        "baseline_target": 0.25, "transferred": 0.5, "direct_target": direct, "transfer_gain": 0.25,
        "gain": _estimate(0.25, -0.25, 0.75), "efficiency": efficiency, "learned_skill": "# Skill\n",
        "scores": {"baseline": evaluation(0.25), "transferred": evaluation(0.5),
                   "direct": evaluation(direct) if direct is not None else None},
        "optimization": {"source": {"agent": "small", "optimizer": "small", "nights": []}, "direct": None},
    }


def test_gates_pass_and_fail_on_the_point_estimate() -> None:
    assert gating.evaluate(result(), Thresholds(min_gain=0.25, min_score=0.5, min_efficiency=0.6)).passed
    outcome = gating.evaluate(result(), Thresholds(min_gain=0.3, min_score=0.6, min_efficiency=0.7))
    assert outcome.failures == (
        "gain +0.250 is below min_gain +0.300",
        "transferred score 0.500 is below min_score 0.600",
        "efficiency 0.670 is below min_efficiency 0.700",
    )


def test_gates_use_the_lower_bound_with_samples_and_say_so() -> None:
    outcome = gating.evaluate(result(samples=3), Thresholds(min_gain=0.0))
    assert outcome.failures == ("gain -0.250 (lower 95% bound, samples > 1) is below min_gain +0.000",)
    assert outcome.notes == ("gain and score gates use the lower 95% bound because samples > 1",)


def test_efficiency_gate_is_skipped_without_a_direct_run() -> None:
    outcome = gating.evaluate(result(direct=None, efficiency=None), Thresholds(min_efficiency=0.5))
    assert outcome.passed
    assert outcome.notes == ("min_efficiency gate skipped: efficiency is undefined (no direct run (--no-direct))",)


def test_regression_gate_tolerance_and_update() -> None:
    tolerance = Thresholds(regression_tolerance=0.2)
    assert gating.evaluate(result(), tolerance, committed=0.7).passed
    assert not gating.evaluate(result(), tolerance, committed=0.75).passed
    assert gating.evaluate(result(), tolerance, committed=0.75, updating=True).passed
    assert gating.evaluate(result(), tolerance, committed=None).passed


def test_snapshot_text_carries_the_committed_score() -> None:
    text = snapshots.render(result())
    assert snapshots.TRANSFERRED_ROW.search(text).group(1) == "0.500"
    assert text.endswith("## Learned skill\n\n````markdown\n# Skill\n````\n")


def test_markdown_chart_is_a_mermaid_bar_chart() -> None:
    assert markdown_report.chart(result()) == [
        "```mermaid",
        "xychart-beta",
        '    title "alpha: small -> large"',
        '    x-axis ["baseline", "transferred", "direct"]',
        '    y-axis "held-out score on target" 0 --> 1',
        "    bar [0.25, 0.50, 0.75]",
        "```",
    ]


def test_markdown_gives_each_item_its_own_verdict() -> None:
    cost = {"calls": 1, "tokens": 2, "total_usd": 0.0, "optimize_source_usd": 0.0, "optimize_direct_usd": 0.0}
    matrix = {**result(), "cost": cost, "item": "seeds/alpha/SKILL.md::transfer[small->large]", "gate": {"passed": True}}
    hand = {**result(), "cost": cost, "item": "seeds/test_gates.py::test_alpha",
            "gate": {"passed": False, "failures": ["gain too low"], "snapshot": "ok"}}
    rows = [line for line in markdown_report.render([matrix, hand]).splitlines() if line.startswith("| alpha")]
    assert [row.rsplit("|", 2)[-2].strip() for row in rows] == ["pass", "**FAIL**"]
    assert "test_alpha" in rows[1]
