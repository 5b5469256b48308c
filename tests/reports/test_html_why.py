"""The page and the Markdown summary say why, tried in chromium over a run with a harmed item.

The project's `howto-answers` seed replayed offline with `--transfer-min-gain=0.1`: its learned skill
("Be concise.") hurts sim-small, whose answers then miss `min_chars=300`, so the
item fails its gate. `ticket-router` transfers, and a hand-written test repeats one of its items.
Screenshots of the first screen and of the opened failing item are the ones in docs/
(`python tests/reports/test_html_why.py docs` writes them again).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from browser_support import launched_browser, open_page
from test_terminal_output import EVIL_CONFTEST, HOSTILE
from plugin_support import CHECKS
from shared_runs import once_per_run

from pytest_skilltransfer.evidence.item_record import ItemRecord, records
from pytest_skilltransfer.guards.terminal import is_safe
from pytest_skilltransfer.reports import html_parts, html_report, markdown_report

ROOT = Path(__file__).resolve().parents[2]
SEEDS = "howto-answers or ticket-router or router_skill"
HARMED = ("howto-answers", "sim-large", "sim-small")
LEARNED_LINE = "Be concise."


def run_harmed(tmp: Path) -> dict[str, Any]:
    """The run, with its JSON, HTML and Markdown reports and its terminal output."""
    paths = {kind: tmp / f"run.{kind}" for kind in ("json", "html", "md")}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-k", SEEDS, "--transfer-min-gain=0.1",
         f"--skilltransfer-json={paths['json']}", f"--skilltransfer-html={paths['html']}",
         f"--skilltransfer-md={paths['md']}"],
        cwd=ROOT, capture_output=True, text=True, timeout=600, env={**os.environ, "CI": "true"})
    assert done.returncode == 1, done.stdout + done.stderr  # the harmed item fails its gate
    (tmp / "run.out").write_text(done.stdout)
    return harmed_run(tmp)


def harmed_run(tmp: Path) -> dict[str, Any]:
    """`run_harmed`'s run read back from its folder."""
    paths = {kind: tmp / f"run.{kind}" for kind in ("json", "html", "md")}
    report = json.loads(paths["json"].read_text())
    return {**paths, "tmp": tmp, "report": report, "stdout": (tmp / "run.out").read_text(),
            "harmed": next(r for r in report["results"] if (r["seed"], r["source"], r["target"]) == HARMED)}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The harmed run, once per test run (`once_per_run`: the module's tests may run on several workers)."""
    return harmed_run(once_per_run(tmp_path_factory, "why", run_harmed))


@pytest.fixture(scope="module")
def browser() -> Any:
    yield from launched_browser()


def screenshots(browser: Any, page_path: Path, out: Path) -> tuple[Path, Path]:
    """The first screen, and the failing item opened at its top (JavaScript on, as a reader has it)."""
    context, page, _ = open_page(browser, page_path, javascript=True)
    try:
        first = out / "html-report-harmed.png"
        page.screenshot(path=str(first))
        item = page.locator(f"#{html_parts.anchor(ItemRecord.from_json(failing_item(page_path)))}")
        item.locator("> summary").click()
        page.evaluate("el => window.scrollTo(0, el.getBoundingClientRect().top + window.scrollY - 8)",
                      item.element_handle())
        opened = out / "html-report-harmed-item.png"
        page.screenshot(path=str(opened))
        return first, opened
    finally:
        context.close()


def failing_item(page_path: Path) -> dict[str, Any]:
    report = json.loads(page_path.with_suffix(".json").read_text())
    return next(r for r in report["results"] if (r["gate"] or {}).get("verdict") == "fail")


def test_the_harmed_item_fails_and_misses_a_check_its_learned_line_points_at(run: dict[str, Any]) -> None:
    harmed = run["harmed"]
    assert harmed["gate"]["verdict"] == "fail" and harmed["outcome"] == "hurts"
    check = next(c for c in harmed["checks"] if c["check"] == "min_chars=300")
    assert (check["baseline"], check["transferred"], check["newly_missed"], check["tasks"]) == (0, 12, 12, 24)
    assert harmed["checks"][0] == check  # sorted by change, the worst first
    assert LEARNED_LINE in harmed["learned_skill"] and LEARNED_LINE not in harmed["seed_skill"]


@pytest.mark.parametrize("javascript", [True, False], ids=["js-on", "js-off"])
def test_needs_a_look_says_why_on_the_first_screen(run: dict[str, Any], browser: Any, javascript: bool) -> None:
    context, page, requests = open_page(browser, run["html"], javascript)
    try:
        entry = page.locator("ul.why > li").first
        assert entry.is_visible() and entry.bounding_box()["y"] + 200 < 900  # read without scrolling
        text = " ".join(entry.inner_text().split())
        assert text.startswith("howto-answers sim-large -> sim-small hurts fail gain -0.50")
        # the gate's one-line reason, at the run family's level
        assert "gain -0.50 [-0.84, -0.06] (99.9125% CI) below min_gain +0.10" in text
        assert "min_chars=300 newly missed on 12 of 24 task(s)" in text
        assert f"+ - {LEARNED_LINE}" in text
        assert ("rerun: pytest 'seeds/howto-answers/SKILL.md::transfer[sim-large->sim-small]' "
                "--transfer-pair 'sim-large->sim-small'") in text
        assert requests == [run["html"].as_uri()]
    finally:
        context.close()


def test_the_checks_by_arms_table_matches_the_json(run: dict[str, Any], browser: Any) -> None:
    harmed = run["harmed"]
    context, page, _ = open_page(browser, run["html"], javascript=True)
    try:
        item = page.locator(f"#{html_parts.anchor(ItemRecord.from_json(harmed))}")
        item.locator("> summary").click()
        rows = item.locator("table.checks tr").all_inner_texts()[1:]
        shown = [re.split(r"\t", row.strip()) for row in rows]
        expected = [[c["check"], str(c["baseline"]), str(c["transferred"]),
                     "-" if c["direct"] is None else str(c["direct"]), f"{c['change']:+d}", str(c["newly_missed"]),
                     str(c["fixed"])] for c in harmed["checks"]]
        assert shown == expected
        run_rows = [re.split(r"\t", row.strip()) for row in page.locator("table.run-checks tr").all_inner_texts()[1:]]
        assert run_rows == [[c["check"], str(c["items"]), str(c["baseline"]), str(c["transferred"]), str(c["direct"]),
                             f"{c['change']:+d}"] for c in run["report"]["checks"]][:len(run_rows)]
        assert run_rows and [r[0] for r in run_rows][:2] == ["min_chars=300", "max_chars=900"]
    finally:
        context.close()


def test_badges_headline_and_summaries_give_one_count(run: dict[str, Any], browser: Any) -> None:
    summary = run["report"]["summary"]
    outcomes = summary["outcomes"]
    assert (summary["hypotheses"], outcomes) == (4, {"transfers": 2, "hurts": 1, "no effect shown": 1, "shown alone": 0,
                                                     "undecidable": 0})
    context, page, _ = open_page(browser, run["html"], javascript=True)
    try:
        badges = {b.get_attribute("data-count"): int(b.inner_text().split()[0])
                  for b in page.locator("[data-count]").all()}
        assert badges == outcomes
        assert page.locator("h1").inner_text() == "Skill transfer: 4 (seed, pair) + 1 hand-written test(s)"
        assert f"{outcomes['transfers']} transfer, {outcomes['hurts']} hurt, 1 no effect shown" in page.locator(
            "h2:has-text('Summary') + p").inner_text()
        assert page.locator("tr.item-row").count() == page.locator("svg circle").count() == 4  # the matrix items
        assert page.locator("tr.hand-row").count() == 1
        assert "test_router_skill_learned_on_the_small_model_helps_the_large_one" in page.locator(
            "tr.hand-row").inner_text()
        page.locator('button[data-filter="transfers"]').click()
        assert page.locator("tr.item-row:visible").count() == outcomes["transfers"]
    finally:
        context.close()
    markdown = run["md"].read_text()
    assert "over 4 (seed, pair):** 2 transfer, **1 hurt**, 1 no effect shown · 1 hand-written test(s)" in markdown
    assert ("of 4 (seed, pair), Bonferroni over 4/40 item(s) (FWER 5%): "
            "2 transfer, 1 hurt, 1 no effect shown") in run["stdout"]
    assert "sim-small -> sim-large, hand-written tests (each counted once" in run["stdout"]
    assert "(test~" not in run["stdout"]


def test_the_search_box_filters_items_and_tasks(run: dict[str, Any], browser: Any) -> None:
    context, page, _ = open_page(browser, run["html"], javascript=True)
    try:
        items = page.locator("details.item")
        total = items.count()
        box = page.locator("#search")
        box.fill("ticket-router")
        assert page.locator("details.item:visible").count() == 3 and page.locator("tr.item-row:visible").count() == 2
        box.fill("held-007")  # a task id: every item has it, and opens to show it
        harmed = page.locator(f"#{html_parts.anchor(ItemRecord.from_json(run['harmed']))}")
        assert harmed.get_attribute("open") is not None
        assert harmed.locator("tr[data-task]:visible").count() == 1
        assert "task(s) match" in page.locator("#search-note").inner_text()
        box.fill("no such text anywhere")
        assert page.locator("details.item:visible").count() == 0
        box.fill("")
        assert page.locator("details.item:visible").count() == total
    finally:
        context.close()
    context, page, _ = open_page(browser, run["html"], javascript=False)
    try:  # without JavaScript the box is hidden and everything reads
        assert not page.locator("#search").is_visible() and page.locator("details.item:visible").count() == total
    finally:
        context.close()


def test_the_markdown_first_screen_names_the_failing_item_and_why(run: dict[str, Any]) -> None:
    first_screen = "\n".join(run["md"].read_text().splitlines()[:15])
    assert "### fail: howto-answers (sim-large -> sim-small)" in first_screen
    assert "**gain -0.50 [-0.84, -0.06] (99.9125% CI) below min_gain +0.10**" in first_screen
    assert f"`min_chars=300` on **12 of 24 tasks** ← may be caused by learned: `+ - {LEARNED_LINE}`" in first_screen
    table = run["md"].read_text().split("| seed | pair | gain [95% CI] | outcome (run family) | verdict |", 1)[1]
    assert table.split("\n")[2] == "| howto-answers | sim-large->sim-small | -0.50 [-0.72, -0.25] | **hurts** | **FAIL** |"
    assert "<details><summary>" in table


def test_screenshots_show_the_first_screen_and_the_opened_failing_item(run: dict[str, Any], browser: Any) -> None:
    first, opened = screenshots(browser, run["html"], run["tmp"])
    assert first.stat().st_size > 10_000 and opened.stat().st_size > 10_000


def test_control_and_bidi_characters_are_escaped_visibly(pytester: pytest.Pytester, browser: Any) -> None:
    """ESC, BEL, NUL, CR, U+202E and U+2066 in the task text, the skill and the answers: none reaches the page
    or the Markdown raw; each is written as the terminal writes it."""
    pytester.makeconftest(EVIL_CONFTEST)
    pytester.makeini("[pytest]\nskilltransfer_limit_replay = 0\nskilltransfer_limit_holdout = 0\n"
                     "skilltransfer_nights = 1\nskilltransfer_no_direct = true\n")
    seed = pytester.path / "seeds" / "alpha"
    seed.mkdir(parents=True)
    (seed / "SKILL.md").write_text(f"# alpha\n\nRoute the ticket {HOSTILE}.\n")
    line = lambda p, i: json.dumps({"task_id": f"{p}-{i:02d}", "task": f"Route {HOSTILE} ticket {i}", "judge": CHECKS})
    (seed / "benchmark.jsonl").write_text("\n".join(line("bm", i) for i in range(8)) + "\n")
    (seed / "held-out.jsonl").write_text("\n".join(line("hd", i) for i in range(4)) + "\n")
    (seed / "seed.toml").write_text("[thresholds]\nmin_gain = 0.5\n")
    pytester.runpytest_subprocess("--pair", "toy-a:evil-b", "--skilltransfer-html=r.html", "--skilltransfer-md=r.md",
                                  "--skilltransfer-json=r.json")
    raw = json.loads((pytester.path / "r.json").read_text())["results"][0]
    assert HOSTILE in raw["seed_skill"] and HOSTILE in raw["scores"]["baseline"]["tasks"][0]["samples"][0]["answer"]
    for name in ("r.html", "r.md"):
        text = (pytester.path / name).read_text()
        assert is_safe(text), (name, sorted({hex(ord(c)) for c in text if not is_safe(c)}))
    page_text = (pytester.path / "r.html").read_text()
    assert "\\x1b[2J" in page_text and "\\x07" in page_text and "\\u202e" in page_text and "\\u2066" in page_text
    assert markdown_report.render([ItemRecord.from_json({**raw, "seed": f"alpha{HOSTILE}"})]).count("\\u202e") >= 2
    context, page, _ = open_page(browser, pytester.path / "r.html", javascript=True)
    try:
        page.locator("details.item > summary").first.click()
        page.locator("details[data-task] > summary").first.click()
        shown = page.locator("details[data-task]").first.inner_text()
        assert "\\x1b[2J\\x1b]0;pwned\\x07\\x00\\x0d\\u202eevil\\u2066" in shown and is_safe(shown)
        assert "\\u202e" in page.locator("pre.diff").first.inner_text()  # the skill, in the diff
    finally:
        context.close()


def test_frontier_spend_budget_and_plan_are_on_the_page_when_the_report_has_them(run: dict[str, Any]) -> None:
    report = json.loads(json.dumps(run["report"]))
    block = report["summary"]["frontier"][0]
    cheaper = {**block["sources"][0], "source": "sim-tiny", "mean_gain": -0.2, "ci_low": -0.5, "ci_high": 0.1,
               "optimize_usd": 0.001, "verdict": "inconclusive", "frontier": False}
    block["sources"].append(cheaper)
    report["budget"] = {"limit_usd": 5.0, "charged_usd": 1.25, "in_flight_usd": 0.0, "live_calls": 12,
                        "charged_in_full": 0, "refused": 0}
    report["plan"] = [{"item": "seeds/a/SKILL.md::transfer[x->y]", "calls": 120, "bound_usd": 0.42}]
    page = html_report.render(report)
    frontier = page.split("<h2>Source frontier</h2>", 1)[1].split("<h2>", 1)[0]
    assert f"source frontier for target {block['target']}" in frontier and "sim-tiny" in frontier
    assert "reference: optimized on the target" in frontier
    spend = page.split("<h2>Spend</h2>", 1)[1].split("<h2>", 1)[0]
    assert "optimize-source" in spend and "<td>1.2500</td>" in spend and "<td>5.0000</td>" in spend
    plan = page.split("<h2>Plan</h2>", 1)[1].split("<h2>", 1)[0]
    assert "<td>0.4200</td>" in plan and "<td>120</td>" in plan
    assert "<h2>Plan</h2>" not in html_report.render(run["report"])  # absent when the report has none


def test_a_report_written_before_checks_were_recorded_renders_the_same(run: dict[str, Any]) -> None:
    report = json.loads(json.dumps(run["report"]))
    old = {**report, "results": [{k: v for k, v in r.items() if k != "checks"} for r in report["results"]]}
    old.pop("checks")
    assert html_report.render(old) == html_report.render(report)
    assert markdown_report.render(records(old["results"])) == markdown_report.render(records(report["results"]))


if __name__ == "__main__":  # python tests/reports/test_html_why.py docs: the screenshots in docs/, from this run
    import tempfile

    out = Path(sys.argv[1])
    with tempfile.TemporaryDirectory() as folder:
        made = run_harmed(Path(folder))
        for browser in launched_browser():
            for path in screenshots(browser, made["html"], out):
                print(f"wrote {path}")
