"""The source frontier: per target, each source's mean gain with its interval, efficiency, optimization dollars
and gain per dollar; the sources no other source beats on both price and gain are marked; harm is said."""

from __future__ import annotations

import json

import pytest
from fake_provider import FakeProvider
from plugin_support import make_seed

from pytest_skilltransfer.commands import cli
from pytest_skilltransfer.evidence.frontier import frontier, frontier_lines
from pytest_skilltransfer.evidence.item_record import ItemRecord


def _result(seed: str, source: str, gain: float, usd: float | None, headroom: float | None = 0.5,
            target: str = "t") -> ItemRecord:
    return ItemRecord.from_json({
        "seed": seed, "source": source, "target": target, "optimizer": source, "baseline_target": 0.0,
        "transferred": gain, "gain": _gain(gain), "headroom": None if headroom is None else _gain(headroom),
        "cost": {"optimize_source_usd": usd, "optimize_direct_usd": 0.4, "phases": {}}})


def _gain(mean: float) -> dict:
    return {"mean": mean, "ci_low": mean, "ci_high": mean, "n": 1, "p_value": 1.0}


SEEDS = [f"s{i}" for i in range(12)]


def test_a_source_is_dominated_only_by_one_at_least_as_good_with_confidence_and_no_dearer_per_seed() -> None:
    gains = [0.2, 0.4, 0.3, 0.1] * 3
    items = [_result(s, src, g + shift, usd) for s, g in zip(SEEDS, gains)
             for src, shift, usd in (("cheap", 0.0, 0.01), ("same-price-better", 0.6, 0.01),
                                     ("near", 0.02, 0.005), ("dear", 0.5, 0.2))]
    (block,) = frontier(items)
    rows = {r["source"]: r for r in block["sources"]}
    assert rows["cheap"]["dominated_by"] == ["same-price-better"]  # +0.60 on every seed, same price
    assert not rows["cheap"]["frontier"]
    # near is cheaper and +0.02 on every seed, yet the paired interval over 12 seeds still spans 0
    assert rows["cheap"]["against"]["near"]["ci_low"] < 0 < rows["cheap"]["against"]["near"]["ci_high"]
    assert rows["near"]["frontier"] and rows["same-price-better"]["frontier"]
    # same-price-better gains exactly what dear does at a twentieth of the price, but equal gains are not
    # "at least as good with confidence" (their paired interval spans 0 both ways): dear stays, and says its price
    assert rows["dear"]["frontier"] and not rows["dear"]["dominated_by"]
    assert rows["dear"]["gain_per_usd"] < rows["same-price-better"]["gain_per_usd"] / 10
    assert rows["cheap"]["usd_per_seed"] == pytest.approx(0.01)
    assert rows["cheap"]["gain_per_usd"] == pytest.approx(0.25 / 0.01)
    assert rows["dear"]["efficiency"] == pytest.approx(0.85 / 0.5 - 0.2)  # mean gain 0.75 over headroom 0.5
    assert block["direct"]["usd_per_seed"] == pytest.approx(0.4)


def test_sources_are_ranked_per_target_and_a_model_paired_with_itself_is_the_direct_reference() -> None:
    items = [_result(s, src, g, usd, headroom=None, target=tgt) for s in SEEDS[:6]
             for src, tgt, g, usd in (("a", "c", 0.5, 0.01), ("b", "c", 0.5, 0.02), ("c", "c", 0.7, 0.03),
                                      ("a", "d", 0.2, 0.01), ("b", "d", 0.6, 0.01))]
    blocks = {b["target"]: b for b in frontier(items)}
    assert [(r["rank"], r["source"]) for r in blocks["c"]["sources"]] == [(1, "a"), (2, "b")]  # the same gain for less
    assert [(r["rank"], r["source"]) for r in blocks["d"]["sources"]] == [(1, "b"), (2, "a")]
    assert blocks["c"]["direct"]["mean_gain"] == 0.7 and blocks["c"]["direct"]["usd_per_seed"] == pytest.approx(0.03)
    assert blocks["d"]["direct"] is None
    lines = frontier_lines(list(blocks.values()))
    assert sum(" c " in f" {line} " and "direct" not in line for line in lines if line.startswith("  ")) == 0


def test_a_cross_product_leaves_out_a_model_with_itself_where_the_target_has_other_sources() -> None:
    from pytest_skilltransfer.plugin.options import cross_product

    assert cross_product(["a", "b"], ["c", "d"]) == {("a", "c"), ("a", "d"), ("b", "c"), ("b", "d")}
    assert cross_product(["a", "b"], ["a", "b"]) == {("a", "b"), ("b", "a")}
    assert cross_product(["a"], ["a"]) == {("a", "a")}  # its only source: the item stays


def test_dollars_per_seed_and_paired_seeds_rank_the_issue_case_right() -> None:
    """A source at $0.10/seed over 14 seeds (+0.60) against one at $1.00/seed over one seed (+0.60): by total
    dollars and point means the cheap one looked dominated; per seed it is ten times cheaper, and one seed is
    too few for an interval or a comparison."""
    cheap = [_result(f"s{i}", "cheap", 0.9 if i % 2 else 0.3, 0.10) for i in range(14)]
    dear = [_result("s0", "dear", 0.6, 1.00)]
    (block,) = frontier(cheap + dear)
    rows = {r["source"]: r for r in block["sources"]}
    assert rows["cheap"]["frontier"] and not rows["cheap"]["dominated_by"]
    assert rows["cheap"]["ci_low"] > 0 and rows["cheap"]["verdict"] == "helps"
    assert (rows["dear"]["ci_low"], rows["dear"]["ci_high"], rows["dear"]["verdict"]) == (None, None, "too few seeds")
    assert rows["cheap"]["gain_per_usd"] == pytest.approx(6.0) and rows["dear"]["gain_per_usd"] == pytest.approx(0.6)
    assert rows["dear"]["against"]["cheap"]["shared_seeds"] == 1 and rows["dear"]["against"]["cheap"]["ci_low"] is None
    text = "\n".join(frontier_lines([block]))
    assert "+0.60 [+0.25, +0.84]" in text and "+0.60 (too few seeds)" in text and "[-0.95" not in text
    assert "$0.1000" in text and "+6.00/$" in text and "on the frontier" in text
    assert "dear - cheap: 1 shared seed(s), too few to compare (6 needed)" in text


def test_a_source_that_hurts_the_target_is_said_to() -> None:
    items = [_result(f"s{i}", "bad", -1.0, 0.0) for i in range(6)] + [_result(f"s{i}", "ok", 0.0, 0.1)
                                                                       for i in range(6)]
    (block,) = frontier(items)
    bad = next(r for r in block["sources"] if r["source"] == "bad")
    assert bad["verdict"] == "hurts" and bad["ci_high"] < 0
    text = "\n".join(frontier_lines([block]))
    assert "hurts the target" in text and "free" in text


def test_unpriced_sources_are_never_on_the_frontier() -> None:
    items = [_result(s, "a", 0.3, None) for s in SEEDS] + [_result(s, "b", 0.1, 0.2) for s in SEEDS]
    rows = {r["source"]: r for r in frontier(items)[0]["sources"]}
    assert not rows["a"]["frontier"] and rows["b"]["frontier"]


def test_three_sources_for_one_target_print_the_frontier_everywhere(pytester: pytest.Pytester,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
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
    # sim-large -> sim-large is not an item: the other pairs' direct reference is that run
    result.stdout.fnmatch_lines(["source frontier for target sim-large *",
                                 "  # * source * seeds * mean gain [[]95% CI[]] * efficiency * $ per seed * gain per $*",
                                 "  1 * sim-small *on the frontier", "  2 * fake-paid *$0.0*",
                                 "  * direct on sim-large *reference*"])
    report = json.loads((pytester.path / "r.json").read_text())
    assert {(r["source"], r["target"]) for r in report["results"]} == {("sim-small", "sim-large"), ("fake-paid", "sim-large")}
    (block,) = report["summary"]["frontier"]
    assert block["target"] == "sim-large" and [r["source"] for r in block["sources"]] == ["sim-small", "fake-paid"]
    assert [r["rank"] for r in block["sources"]] == [1, 2]
    assert any(r["frontier"] for r in block["sources"])
    assert report["summary"]["cost"]["optimization"]["direct_usd"] == 0.0
    markdown = (pytester.path / "r.md").read_text()
    assert "## Source frontier" in markdown and "cost by lane" in markdown
    page = (pytester.path / "r.html").read_text()
    frontier = page.split("<h2>Source frontier</h2>", 1)[1].split("<h2>", 1)[0]
    assert "source frontier for target sim-large" in frontier and frontier.count("<tr>") == 1 + 2 + 1  # and direct
    assert "on the frontier" in frontier and "<h2>Spend</h2>" in page and "optimize-direct" in page

    capsys.readouterr()
    cli.main(["merge", "r.json"])  # `python -m pytest_skilltransfer merge r.json`, in this process
    assert any(line.startswith("source frontier for target sim-large ") for line in capsys.readouterr().out.splitlines())
