"""Pure parts of the plugin: the gates, the snapshot text and the Markdown chart, on a fixed result."""

from __future__ import annotations

from typing import Any

from pytest_skilltransfer.evidence import stats
from pytest_skilltransfer.evidence.item_record import ItemRecord
from pytest_skilltransfer.plugin import gating, snapshots
from pytest_skilltransfer.reports import markdown_report
from pytest_skilltransfer.engine.seed_data import Thresholds


def _estimate(mean: float, n: int = 4) -> dict[str, Any]:
    low, high = stats.interval_of_sum(mean * n, n)
    return {"mean": mean, "ci_low": low, "ci_high": high, "n": n}


def _evaluation(values: list[float]) -> dict[str, Any]:
    return {"hard": _estimate(sum(values) / len(values), len(values)), "soft": _estimate(0.5, len(values)),
            "tasks": [{"task_id": f"t{i}", "hard": v, "soft": v, "samples": []} for i, v in enumerate(values)]}


def result(samples: int = 1, before: list[float] | None = None, after: list[float] | None = None,
           direct: list[float] | None = None) -> ItemRecord:
    """An item's record, as the JSON report holds it (`data`) and read back."""
    return ItemRecord.from_json(data(samples, before, after, direct))


def data(samples: int = 1, before: list[float] | None = None, after: list[float] | None = None,
         direct: list[float] | None = None) -> dict[str, Any]:
    before = before if before is not None else [0.0, 0.0, 1.0, 0.0]
    after = after if after is not None else [1.0, 0.0, 1.0, 0.0]
    gain = stats.paired_gain(before, after)
    efficiency = None
    if direct is not None:
        ratio = stats.efficiency_ratio(gain, stats.paired_gain(before, direct))
        efficiency = None if ratio is None else ratio.as_dict()
    return {
        "seed": "alpha", "source": "small", "target": "large", "config": {"samples": samples},
        "baseline_target": sum(before) / len(before), "transferred": sum(after) / len(after),
        "direct_target": None if direct is None else sum(direct) / len(direct), "transfer_gain": gain.mean,
        "gain": gain.as_dict(), "efficiency": None if efficiency is None else efficiency["mean"],
        "efficiency_ci": efficiency, "headroom": None, "learned_skill": "# Skill\n",
        "scores": {"baseline": _evaluation(before), "transferred": _evaluation(after),
                   "direct": _evaluation(direct) if direct is not None else None},
        "optimization": {"source": {"agent": "small", "optimizer": "small", "nights": []}, "direct": None},
    }


def test_gates_are_three_valued() -> None:
    many = result(before=[0.0] * 40, after=[1.0] * 30 + [0.0] * 10, direct=[1.0] * 40)
    passing = gating.evaluate(many, Thresholds(min_gain=0.4, min_score=0.5, min_efficiency=0.3))
    assert passing.verdict == "pass" and [g.verdict for g in passing.gates] == ["pass"] * 3
    failing = gating.evaluate(many, Thresholds(min_gain=0.95, min_score=0.95, min_efficiency=1.5))
    assert failing.verdict == "fail" and len(failing.failures) == 3
    assert failing.failures[0].startswith("gain +0.750 [+0.")
    assert failing.failures[0].endswith(f"task(s), p = {many.gain.p_value:.3g}) is below min_gain +0.950")
    few = gating.evaluate(result(), Thresholds(min_gain=0.25, min_score=0.5))
    assert few.verdict == "inconclusive" and not few.passed and len(few.inconclusive) == 2
    assert "neither shows min_gain +0.250 nor rules it out" in few.inconclusive[0]


def test_efficiency_gate_is_skipped_without_a_direct_run_and_inconclusive_without_headroom() -> None:
    outcome = gating.evaluate(result(direct=None), Thresholds(min_efficiency=0.5))
    assert outcome.passed and not outcome.gates
    assert outcome.notes == ("min_efficiency gate skipped: efficiency is undefined (no direct run (--no-direct))",)
    small = gating.evaluate(result(direct=[1.0, 1.0, 1.0, 1.0]), Thresholds(min_efficiency=0.5))
    assert small.verdict == "inconclusive" and "headroom is not significantly above 0" in small.inconclusive[0]


def test_regression_gate_tolerance_and_update() -> None:
    before = [0.0] * 8
    committed = {f"t{i}": 1.0 for i in range(8)}
    tolerance = Thresholds(regression_tolerance=0.2)
    assert gating.evaluate(result(before=before, after=[1.0] * 8), tolerance, committed=committed).passed
    dropped = gating.evaluate(result(before=before, after=[0.0] * 8), tolerance, committed=committed)
    assert dropped.verdict == "fail" and dropped.failures[0].startswith("regression: transferred change -1.000")
    assert gating.evaluate(result(before=before, after=[0.0] * 8), tolerance, committed=committed,
                           updating=True).passed
    assert gating.evaluate(result(), tolerance, committed=None).passed


def test_snapshot_text_escapes_control_bidi_and_zero_width_characters_visibly() -> None:
    """A committed snapshot is read as a diff in a terminal or a web view: nothing in it acts."""
    from pytest_skilltransfer.guards.terminal import is_safe

    hostile = data()
    hostile["learned_skill"] = "# Skill\n\x1b[2J\x07 ok\u202eevil\u200bhidden\tkept\n"
    hostile["optimization"]["source"]["nights"] = [
        {"night": 1, "val_before": 0.5, "val_after": 0.75, "accepted": True, "note": "\x1b]0;pwned\x07",
         "applied": [{"op": "add", "content": "Say \u2066hi\u2069"}]}]
    text = snapshots.render(ItemRecord.from_json(hostile))
    assert is_safe(text)
    assert "\\x1b[2J\\x07 ok\\u202eevil\\u200bhidden\tkept" in text and "\\u2066hi\\u2069" in text
    assert snapshots.parse_skill(text).startswith("# Skill\n\\x1b[2J")


def test_snapshot_text_carries_the_per_task_scores() -> None:
    text = snapshots.render(result())
    assert snapshots.parse_per_task(text) == {"t0": 1.0, "t1": 0.0, "t2": 1.0, "t3": 0.0}
    assert "- gain: +0.25 [-0." in text and "(exact unconditional), minimal detectable gain" in text
    assert text.endswith("## Learned skill\n\n````markdown\n# Skill\n````\n")


def test_markdown_gain_bar_marks_the_gain_its_interval_zero_and_the_threshold() -> None:
    item = ItemRecord.from_json({**data(), "gain": {"mean": 0.5, "ci_low": 0.2, "ci_high": 0.8, "n": 4, "p_value": 1},
                                 "gate": {"verdict": "pass", "passed": True,
                                          "gates": [{"gate": "min_gain", "verdict": "pass", "threshold": 0.3}]}})
    bar = markdown_report.gain_bar(item)
    assert len(bar) == markdown_report.PLOT_WIDTH
    assert bar == " " * 20 + "│" + " " * 3 + "──┊───●──────" + " " * 4  # one cell per 0.05 from -1
    straddling = markdown_report.gain_bar(ItemRecord.from_json(
        {**data(), "gain": {"mean": 0.0, "ci_low": -0.1, "ci_high": 0.1, "n": 4, "p_value": 1}}))
    assert straddling.strip() == "──●──"


def test_markdown_report_parses_with_a_headline_one_chart_and_a_section_per_failure() -> None:
    from markdown_it import MarkdownIt

    cost = {"calls": 1, "tokens": 2, "total_usd": 0.0, "optimize_source_usd": 0.0, "optimize_direct_usd": 0.0}
    items = []
    for seed, after in (("alpha", [1.0, 1.0, 1.0, 1.0]), ("beta", [0.0, 0.0, 1.0, 0.0]), ("gamma", [1.0, 0.0, 1.0, 0.0])):
        item = {**data(after=after), "seed": seed, "cost": cost, "item": f"seeds/{seed}/SKILL.md::transfer[small->large]"}
        outcome = gating.evaluate(ItemRecord.from_json(item),
                                  Thresholds(min_gain=0.5) if seed != "gamma" else Thresholds(min_gain=0.1))
        verdict = "fail" if seed == "beta" else outcome.verdict
        item["gate"] = {**outcome.as_dict(), "verdict": verdict, "passed": verdict == "pass", "snapshot": "ok"}
        items.append(ItemRecord.from_json(item))
    error = {"item": "seeds/delta/SKILL.md::transfer[small->large]", "seed": "delta", "source": "small",
             "target": "large", "when": "setup", "reason": "cassette miss"}
    text = markdown_report.render(items, [error])
    tokens = MarkdownIt().enable("table").parse(text)
    headings = [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open"]
    assert headings[0] == "Skill transfer: 4 item(s), 0 passed, **1 failed**, 2 inconclusive, **1 errored**"
    assert headings[1:] == ["Errored items (1)", "Needs a look", "fail: beta (small -> large)",
                            "inconclusive: alpha (small -> large)", "inconclusive: gamma (small -> large)",
                            "Gain per item"]
    rows = [t for t in tokens if t.type == "tr_open"]
    assert len(rows) == 2 * (1 + 3)  # the narrow table and, folded, the full one: a header and one row per item
    assert sum(1 for t in tokens if t.type == "fence") == 1  # one chart for every item
    html = MarkdownIt().enable("table").render(text)
    assert ("<li><strong>gain +0.75 [-0.25, +0.99] inconclusive for min_gain +0.50: 22 tasks would decide it"
            "</strong></li>") in html
    assert "<td><strong>FAIL</strong></td>" in html and "<code>seeds/delta/SKILL.md::transfer[small-&gt;large]</code>" in html


def test_markdown_gives_each_item_its_own_verdict() -> None:
    cost = {"calls": 1, "tokens": 2, "total_usd": 0.0, "optimize_source_usd": 0.0, "optimize_direct_usd": 0.0}
    matrix = {**data(), "cost": cost, "item": "seeds/alpha/SKILL.md::transfer[small->large]", "gate": {"passed": True, "verdict": "pass"}}
    hand = {**data(), "cost": cost, "item": "seeds/test_gates.py::test_alpha",
            "gate": {"passed": False, "verdict": "fail", "failures": ["gain too low"], "snapshot": "ok"}}
    text = markdown_report.render([ItemRecord.from_json(matrix), ItemRecord.from_json(hand)])
    narrow, full = text.split("<details>", 1)
    rows = [line for line in narrow.splitlines() if line.startswith("| alpha")]  # failures first
    assert [row.rsplit("|", 2)[-2].strip() for row in rows] == ["**FAIL**", "no gate"]
    assert rows[0].startswith("| alpha (hand-written test) |") and rows[1].startswith("| alpha | ")
    rows = [line for line in full.splitlines() if line.startswith("| alpha")]
    assert [row.rsplit("|", 2)[-2].strip() for row in rows] == ["no gate", "**FAIL**"]
    assert "test_alpha" in rows[1]
    assert "### fail: alpha (small -> large, hand-written test test_alpha)" in narrow
