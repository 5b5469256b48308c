"""The HTML page, opened in a real headless browser (Debian's chromium, driven by Playwright) from file://.

The page is the main job's (the project's own seeds replayed offline, the real-model and the rubric seeds
among them), once unsharded and once as its shards merged: both pages must be equal. Each
page is loaded with JavaScript on and off; no request may leave the page; a screenshot is taken.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from browser_support import launched_browser, open_page
from shared_runs import main_job_unsharded

from pytest_skilltransfer.commands.merge import main as merge
from pytest_skilltransfer.evidence.item_record import ItemRecord
from pytest_skilltransfer.reports import html_item, html_parts, html_report


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory, main_job_shards_reports: list[Path]) -> dict[str, Any]:
    """The main job's unsharded run (its page, JSON report and terminal output) and the page of its three shards
    merged: the runs the merge tests compare, each made once per test run (tests/shared_runs.py)."""
    whole = main_job_unsharded(tmp_path_factory)
    tmp = tmp_path_factory.mktemp("pages")
    assert merge([*map(str, main_job_shards_reports), "--html", str(tmp / "merged.html")]) == 0
    return {"tmp": tmp, "json": whole / "whole.json", "whole": whole / "whole.html", "merged": tmp / "merged.html",
            "stdout": (whole / "whole.out").read_text()}


@pytest.fixture(scope="module")
def browser() -> Any:
    yield from launched_browser()


def test_the_run_writes_the_page_and_says_where(pages: dict[str, Any]) -> None:
    assert f"HTML report: {pages['whole']}" in pages["stdout"]
    text = pages["whole"].read_text()
    assert text.startswith("<!DOCTYPE html>") and "Content-Security-Policy" in text
    for fetching in ("<link", "<img", "<iframe", "<script src", "@import", "url("):
        assert fetching not in text


def test_merged_shards_give_the_same_page_as_the_unsharded_run(pages: dict[str, Any]) -> None:
    assert pages["merged"].read_text() == pages["whole"].read_text()


def test_a_page_rebuilt_from_the_json_report_is_the_same_page(pages: dict[str, Any], tmp_path: Path) -> None:
    from pytest_skilltransfer.commands.cli import main

    out = tmp_path / "again.html"
    assert main(["html", str(pages["json"]), "-o", str(out)]) == 0
    assert out.read_text() == pages["whole"].read_text()


@pytest.mark.parametrize("javascript", [True, False], ids=["js-on", "js-off"])
@pytest.mark.parametrize("which", ["whole", "merged"])
def test_the_page_loads_from_disk_with_no_request_leaving_it(pages: dict[str, Any], browser: Any, which: str,
                                                            javascript: bool) -> None:
    context, page, requests = open_page(browser, pages[which], javascript)
    try:
        report = json.loads(pages["json"].read_text())
        items = page.locator("details.item")
        assert items.count() == len(report["results"])
        matrix = [r for r in report["results"] if "::transfer[" in r["item"]]  # hand-written tests draw no dot
        assert 0 < len(matrix) < len(report["results"]) and page.locator("svg circle").count() == len(matrix)
        assert page.locator("tr.item-row").count() == len(matrix)
        assert page.locator("tr.hand-row").count() == len(report["results"]) - len(matrix)
        first = items.first
        first.locator("> summary").click()
        shown = next(r for r in report["results"] if html_parts.anchor(ItemRecord.from_json(r)) == first.get_attribute("id"))
        assert first.locator("table.matrix tr").count() == 1 + len(shown["scores"]["baseline"]["tasks"])
        page.screenshot(path=str(pages["tmp"] / f"{which}-{'js' if javascript else 'nojs'}.png"), full_page=False)
        assert requests == [pages[which].as_uri()]
    finally:
        context.close()


def test_the_differs_filter_works_without_javascript(pages: dict[str, Any], browser: Any) -> None:
    context, page, _ = open_page(browser, pages["whole"], javascript=False)
    try:
        items = page.locator("details.item")
        item = next(items.nth(i) for i in range(items.count())
                    if items.nth(i).locator("table.matrix tr.same").count() and items.nth(i).locator("tr.differs").count())
        item.locator("> summary").click()
        same, differs = item.locator("table.matrix tr.same"), item.locator("table.matrix tr.differs")
        assert same.first.is_visible() and differs.first.is_visible()
        item.locator("input.differs-box").check()
        assert not same.first.is_visible() and differs.first.is_visible()
    finally:
        context.close()


def test_the_javascript_filters_show_only_the_chosen_outcome(pages: dict[str, Any], browser: Any) -> None:
    context, page, _ = open_page(browser, pages["whole"], javascript=True)
    try:
        report = json.loads(pages["json"].read_text())
        wanted = report["summary"]["outcomes"]["transfers"]  # after Holm, as the badges count
        page.locator('button[data-filter="transfers"]').click()
        assert page.locator("tr.item-row:visible").count() == wanted
        page.locator('button[data-filter="all"]').click()
        assert page.locator("tr.item-row:visible").count() == len([r for r in report["results"] if "::transfer[" in r["item"]])
    finally:
        context.close()


def test_an_items_section_shows_answers_checks_the_skill_diff_and_the_nights(pages: dict[str, Any]) -> None:
    report = json.loads(pages["json"].read_text())
    result = next(r for r in report["results"] if r["seed"] == "docs-style")
    text = html_item.item_section(ItemRecord.from_json(result))
    sample = result["scores"]["baseline"]["tasks"][0]["samples"][0]
    answers = html_item.unfold(text)  # the answers per task are stored compressed in the page
    assert html_parts.esc(sample["answer"][:40]) in answers and html_parts.esc(sample["answer"][:40]) not in text
    for check in sample["failed"]:
        assert html_parts.esc(check) in answers
    assert "SKILL.md (learned)" in text and '<span class="add">+' in text
    assert "night 1:" in text


@pytest.mark.parametrize("javascript", [True, False], ids=["js-on", "js-off"])
def test_opening_an_item_shows_its_answers_from_the_compressed_store(pages: dict[str, Any], browser: Any,
                                                                   javascript: bool) -> None:
    """Each item's answers are in the page only compressed; opening the item unfolds them (JavaScript on), and
    without JavaScript a note says they are folded away while the rest of the item reads."""
    report = json.loads(pages["json"].read_text())
    result = next(r for r in report["results"] if r["seed"] == "docs-style")
    task = result["scores"]["baseline"]["tasks"][0]
    answer = task["samples"][0]["answer"]
    assert html_parts.esc(answer[:60]) not in pages["whole"].read_text()
    context, page, requests = open_page(browser, pages["whole"], javascript)
    try:
        item = page.locator(f"#{html_parts.anchor(ItemRecord.from_json(result))}")
        item.locator("> summary").click()
        assert item.locator("table.matrix").is_visible()
        drill = item.locator(f'details[data-task="{task["task_id"]}"]')
        if javascript:
            drill.locator("> summary").click()  # waits for the unfolded answers
            shown = drill.inner_text()
            assert " ".join(answer.split())[:60] in " ".join(shown.split())
            assert item.locator(".answer-store[data-z]").count() == 0
            assert "Answers folded away" not in item.inner_text()
            other = next(r for r in report["results"] if r["seed"] == "release-advisor")
            words = " ".join(other["scores"]["baseline"]["tasks"][0]["samples"][0]["answer"].split())[:30]
            page.locator("#search").fill(words)  # answers of items not yet opened: the search unfolds them
            other_id = html_parts.anchor(ItemRecord.from_json(other))
            found = page.locator(f"#{other_id}")
            page.wait_for_function("id => document.getElementById(id).open", arg=other_id)
            assert found.locator("details[data-task]:visible").count() >= 1
        else:
            assert drill.count() == 0
            assert "Answers folded away" in item.locator(".answer-store").inner_text()
        assert requests == [pages["whole"].as_uri()]
    finally:
        context.close()


def test_an_answer_store_unfolds_to_what_was_stored() -> None:
    fragment = '<details data-task="t-1"><summary>t-1</summary><pre>r\u00e9sum\u00e9 &amp; \\x1b</pre></details>' * 50
    store = html_item.answer_store(fragment)
    assert html_item.unfold(store) == fragment and len(store) < len(fragment) / 4
    assert html_item.answer_store(fragment) == store  # deterministic: merged shards give the same page


def test_failed_and_hurting_items_are_listed_first_with_their_reason(pages: dict[str, Any]) -> None:
    report = json.loads(pages["json"].read_text())
    good = report["results"][0]
    hurt = json.loads(json.dumps(good))
    hurt["seed"] = "zz-harmful"
    hurt["gain"].update({"mean": -0.5, "ci_low": -0.8, "ci_high": -0.2})
    hurt["outcome"] = "hurts"
    hurt["gate"] = {"verdict": "fail", "passed": False, "gates": [
        {"gate": "harm_tolerance", "verdict": "fail", "threshold": 0.0, "estimate": -0.5, "ci_low": -0.8, "ci_high": -0.2,
         "message": "harm shown: gain -0.500 [-0.800, -0.200] (95% CI, 24 task(s)) lies wholly below -0.000"}]}
    page = html_report.render({**report, "results": [*report["results"], hurt]})
    attention = page.split("<h2>Needs a look</h2>", 1)[1].split("<h2>", 1)[0]
    assert "zz-harmful" in attention and "gain -0.50 [-0.80, -0.20] below harm_tolerance +0.00" in attention
    chart = page.split("<svg", 1)[1].split("</svg>", 1)[0]
    assert chart.index("zz-harmful") < chart.index(good["seed"])


def test_secrets_are_redacted_in_the_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_skilltransfer.plugin.reporting import write

    monkeypatch.setenv("OPENAI_API_KEY", "sk-proj-" + "A1b2C3d4" * 4)
    page = html_report.render({"results": [], "errors": [
        {"item": "x", "source": "a", "target": "b", "when": "setup", "reason": "key " + os.environ["OPENAI_API_KEY"]}]})
    write(tmp_path / "p.html", page)
    written = (tmp_path / "p.html").read_text()
    assert os.environ["OPENAI_API_KEY"] not in written and "[redacted: OPENAI_API_KEY]" in written
