"""The source frontier: per target, each source's mean gain with its interval, efficiency, optimization dollars
and gain per dollar; the sources no other source beats on both price and gain are marked; harm is said."""

from __future__ import annotations

import json
import sys

import pytest
from fake_provider import FakeProvider
from plugin_support import make_seed

from pytest_skilltransfer.evidence.frontier import frontier, frontier_lines


def _result(seed: str, source: str, gain: float, usd: float | None, headroom: float | None = 0.5,
            target: str = "t") -> dict:
    return {"seed": seed, "source": source, "target": target, "optimizer": source,
            "gain": {"mean": gain}, "headroom": None if headroom is None else {"mean": headroom},
            "cost": {"optimize_source_usd": usd, "optimize_direct_usd": 0.4, "phases": {}}}


def test_the_frontier_marks_sources_no_other_beats_on_both_price_and_gain() -> None:
    items = [_result(s, src, g, usd) for s in ("s1", "s2", "s3")
             for src, g, usd in (("cheap", 0.2, 0.01), ("mid", 0.1, 0.05), ("dear", 0.4, 0.2))]
    (block,) = frontier(items)
    rows = {r["source"]: r for r in block["sources"]}
    assert rows["cheap"]["frontier"] and rows["dear"]["frontier"]
    assert not rows["mid"]["frontier"]  # cheap is both cheaper and better
    assert rows["cheap"]["gain_per_usd"] == pytest.approx(0.2 / (0.03 / 3))
    assert rows["dear"]["efficiency"] == pytest.approx(0.8)
    assert block["direct"]["optimize_usd"] == pytest.approx(1.2)


def test_a_source_that_hurts_the_target_is_said_to() -> None:
    items = [_result(f"s{i}", "bad", -1.0, 0.0) for i in range(6)] + [_result(f"s{i}", "ok", 0.0, 0.1)
                                                                       for i in range(6)]
    (block,) = frontier(items)
    bad = next(r for r in block["sources"] if r["source"] == "bad")
    assert bad["verdict"] == "hurts" and bad["ci_high"] < 0
    text = "\n".join(frontier_lines([block]))
    assert "hurts the target" in text and "free" in text


def test_unpriced_sources_are_never_on_the_frontier() -> None:
    items = [_result("s1", "a", 0.3, None), _result("s1", "b", 0.1, 0.2)]
    rows = {r["source"]: r for r in frontier(items)[0]["sources"]}
    assert not rows["a"]["frontier"] and rows["b"]["frontier"]


def test_three_sources_for_one_target_print_the_frontier_everywhere(pytester: pytest.Pytester) -> None:
    with FakeProvider() as fake:
        pytester.makeini("[pytest]\nskilltransfer_nights = 1\nskilltransfer_limit_holdout = 0\n")
        for name in ("alpha", "beta"):
            make_seed(pytester.path / "seeds", name, tasks=4)
        pytester.makepyprojecttoml(f'''
            [tool.skilltransfer.models]
            paid = "openai:fake-paid@{fake.openai_url}"
            [tool.skilltransfer.prices]
            "fake-paid" = {{ input = 1.0, output = 4.0 }}
        ''')
        result = pytester.runpytest_subprocess("--source=sim-small,sim-large,paid", "--target=sim-large",
                                               "--record-mode=once", "--snapshot-update", "--skilltransfer-json=r.json",
                                               "--skilltransfer-md=r.md", "--skilltransfer-html=r.html", "-n", "2")
    assert result.parseoutcomes().get("errors") is None
    result.stdout.fnmatch_lines(["source frontier for target sim-large *",
                                 "  source * seeds * mean gain [[]95% CI[]] * efficiency * optimization * gain per $*",
                                 "  sim-large *", "  sim-small *", "  fake-paid *$0.0*", "  direct on sim-large *reference*"])
    report = json.loads((pytester.path / "r.json").read_text())
    (block,) = report["summary"]["frontier"]
    assert block["target"] == "sim-large" and len(block["sources"]) == 3
    assert any(r["frontier"] for r in block["sources"])
    assert report["summary"]["cost"]["optimization"]["direct_usd"] == 0.0
    markdown = (pytester.path / "r.md").read_text()
    assert "## Source frontier" in markdown and "cost by lane" in markdown
    page = (pytester.path / "r.html").read_text()
    frontier = page.split("<h2>Source frontier</h2>", 1)[1].split("<h2>", 1)[0]
    assert "source frontier for target sim-large" in frontier and frontier.count("<tr>") == 1 + 3 + 1  # and direct
    assert "on the frontier" in frontier and "<h2>Spend</h2>" in page and "optimize-direct" in page

    merged = pytester.run(sys.executable, "-m", "pytest_skilltransfer", "merge", "r.json")
    merged.stdout.fnmatch_lines(["source frontier for target sim-large *"])
