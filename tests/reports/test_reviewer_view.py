"""The reviewer's view of the page and the docs' samples, over one run of the main job's shards (shared by
every test here): each link opens its item, nothing scrolls sideways at 1,400 px, chart labels are never
cut, headers say what their table holds, numbers are rounded for people, invisible characters are escaped,
and the chart draws every gate threshold (opened in Debian's chromium; screenshots land in the test's temp
folder); every sample in README.md and docs/ equals what its command prints today (docs/samples.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from browser_support import launched_browser
from plugin_support import item_record

from pytest_skilltransfer.evidence.item_record import ItemRecord, records
from pytest_skilltransfer.guards.terminal import is_safe
from pytest_skilltransfer.reports import html_parts, html_report

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "docs"))
import samples  # noqa: E402  (docs/samples.py: the script that writes the docs' samples)

WIDE = {"width": 1400, "height": 900}


def main_job(tmp: Path, shards: list[Path]) -> dict[str, Any]:
    """The main job as CI's sharded workflow runs it (`CI=true pytest`, replayed offline, in the shards of
    docs/samples.py, then `merge`), with the merged report files and the merge's terminal output: the
    page of merged shards equals the unsharded run's (tests/reports/test_html_report.py). The shards are the
    test run's shared ones (`main_job_shards_reports`); "shards" is their folder."""
    paths = {kind: tmp / f"main.{kind}" for kind in ("json", "html", "md")}
    done = subprocess.run(
        [sys.executable, "-m", "pytest_skilltransfer", "merge", *map(str, shards), "--json", str(paths["json"]),
         "--html", str(paths["html"]), "--md", str(paths["md"])],
        cwd=ROOT, capture_output=True, text=True, timeout=600, env={**os.environ, "CI": "true"})
    assert done.returncode == 0, done.stdout + done.stderr
    return {**paths, "tmp": tmp, "shards": shards[0].parent, "stdout": done.stdout,
            "report": json.loads(paths["json"].read_text())}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory, main_job_shards_reports: list[Path]) -> dict[str, Any]:
    return main_job(tmp_path_factory.mktemp("main-job"), main_job_shards_reports)


@pytest.fixture(scope="module")
def browser() -> Any:
    yield from launched_browser()


def wide_page(browser: Any, path: Path, fragment: str = "") -> tuple[Any, Any]:
    context = browser.new_context(viewport=WIDE)
    page = context.new_page()
    page.goto(path.as_uri() + fragment)
    return context, page


def test_a_needs_a_look_link_opens_its_item_on_load_and_on_click(run: dict[str, Any], browser: Any) -> None:
    flagged = html_report.needs_a_look(records(run["report"]["results"]))
    first, second = (html_parts.anchor(r) for r in flagged[:2])
    context, page = wide_page(browser, run["html"], f"#{first}")
    try:
        assert page.evaluate(f"document.getElementById('{first}').open")
        assert page.evaluate(f"document.getElementById('{first}').getBoundingClientRect().top") < 50
        page.locator(f'.why a[href="#{second}"]').click()
        assert page.evaluate(f"document.getElementById('{second}').open")
        page.screenshot(path=str(run["tmp"] / "opened-from-link.png"))
    finally:
        context.close()


def test_nothing_scrolls_sideways_at_1400_px_and_chart_labels_fit(run: dict[str, Any], browser: Any) -> None:
    context, page = wide_page(browser, run["html"])
    try:
        page.screenshot(path=str(run["tmp"] / "first-screen.png"))
        assert page.evaluate("document.documentElement.scrollWidth") <= WIDE["width"]
        for item in page.locator("details.item").all():  # opened items too (their tables and diffs)
            item.evaluate("d => d.open = true")
        assert page.evaluate("document.documentElement.scrollWidth") <= WIDE["width"]
        left = page.evaluate("""Math.min(...Array.from(document.querySelectorAll('svg text')).map(t => {
            const svg = t.ownerSVGElement.getBoundingClientRect(); return t.getBoundingClientRect().left - svg.left;}))""")
        assert left >= 0  # no label starts before the chart's left edge
        page.locator("svg").first.screenshot(path=str(run["tmp"] / "chart.png"))
    finally:
        context.close()


def test_the_task_matrix_says_it_holds_every_task(run: dict[str, Any]) -> None:
    page = run["html"].read_text()
    assert "only the 0 task(s)" not in page
    said = set()
    for result in run["report"]["results"]:
        section = html_report.item_section(ItemRecord.from_json(result))
        tasks = result["scores"]["baseline"]["tasks"]
        differ = sum(1 for i, _ in enumerate(tasks) if len({(result["scores"][arm] or {"tasks": tasks})["tasks"][i]["hard"]
                                                            for arm in ("baseline", "transferred", "direct")}) > 1)
        assert f"all {len(tasks)} held-out task(s) x arms" in section
        said.add("filter" if differ else "alike")
        assert (f"show only the {differ} whose pass or fail differs" in section if differ
                else "every task passes or fails alike in every arm" in section)
    assert said == {"filter", "alike"}


def test_the_chart_draws_every_threshold_set() -> None:
    """min_gain, harm_tolerance and noninferiority_margin set: three dashed lines, each where its gate decides
    (a tolerance or margin t at gain -t)."""
    gates = [{"gate": name, "verdict": "inconclusive", "threshold": threshold} for name, threshold in
             (("min_gain", 0.2), ("harm_tolerance", 0.1), ("noninferiority_margin", 0.3), ("min_score", 0.5))]
    result = item_record(seed="s", source="a", target="b", item="seeds/s/SKILL.md::transfer[a->b]",
                         outcome="no effect shown", gain={"mean": 0.1, "ci_low": -0.2, "ci_high": 0.4, "n": 24,
                                                          "p_value": 0.5},
                         gate={"verdict": "inconclusive", "passed": False, "gates": gates})
    chart = html_report.gain_chart([result])
    drawn = {line.split('data-gate="')[1].split('"')[0]: line for line in chart.split("<line ") if "data-gate" in line}
    assert set(drawn) == {"min_gain", "harm_tolerance", "noninferiority_margin"}

    def at(gain: float) -> str:
        return f'x1="{html_report.LABEL_WIDTH + (gain + 1) / 2 * html_report.CHART_WIDTH:.1f}"'

    assert at(0.2) in drawn["min_gain"] and at(-0.1) in drawn["harm_tolerance"]
    assert at(-0.3) in drawn["noninferiority_margin"]


def test_long_labels_are_cut_in_the_middle_and_whole_in_their_title() -> None:
    result = item_record(seed="a-seed-with-a-very-long-name-" * 4, source="sim-small", target="smollm2-135m-anthropic",
                         outcome="transfers", gain={"mean": 0.5, "ci_low": 0.2, "ci_high": 0.8, "n": 24, "p_value": 0.01})
    chart = html_report.gain_chart([result])
    assert f"<title>{html_parts.esc(html_parts._label(result))}</title>" in chart
    assert "…" in chart and "-&gt; smollm2-135m-anthropic</text>" in chart and ">a-seed-with" in chart


def test_plan_numbers_are_rounded_for_people() -> None:
    plan = {"prices_effective": "2026-12-01", "total": {"calls": 1335, "expected_usd": 1.5101098750000002}}
    page = html_report.render({"results": [], "plan": plan})
    assert "1.5101098750000002" not in page and "<td>1.5101</td>" in page and "<td>1,335</td>" in page


def test_every_invisible_character_is_escaped(run: dict[str, Any]) -> None:
    report = json.loads(run["json"].read_text())
    result = report["results"][0]
    hidden = "zero\u200bwidth\u200c\u200d\u2060soft\u00ad"
    result["seed"] += hidden
    result["learned_skill"] += hidden
    result["scores"]["transferred"]["tasks"][0]["samples"][0]["answer"] = hidden
    page = html_report.render({**report, "results": [result], "errors": [
        {"item": hidden, "seed": "s", "source": "a", "target": "b", "when": "call", "reason": hidden}]})
    assert is_safe(page) and "zero\\u200bwidth\\u200c\\u200d\\u2060soft\\xad" in page
    from pytest_skilltransfer.reports.html_item import unfold

    assert is_safe(unfold(page.split('class="answer-store"', 1)[1]))


def test_a_regression_against_the_base_shows_its_cause_on_the_first_screen(pytester: pytest.Pytester,
                                                                             browser: Any) -> None:
    """In a temp git repository, a commit that regresses a skill: the page's first screen shows the SKILL.md
    diff against main, the checks it newly misses and the line that accepts the drop."""
    from test_plugin_compare import GOOD, WORSE, history

    history(pytester, GOOD, WORSE)
    pytester.runpytest_subprocess("--compare-to=main", "--skilltransfer-html=page.html").assert_outcomes(failed=1)
    context, page = wide_page(browser, pytester.path / "page.html")
    try:
        page.screenshot(path=str(pytester.path / "regression-first-screen.png"))
        cause = page.locator(".why .cause").first
        assert cause.bounding_box()["y"] + 200 < WIDE["height"]  # on the first screen
        text = page.locator(".why").inner_text()
        assert "cause, vs main (" in text and f"-{GOOD}" in text and f"+{WORSE}" in text
        assert "contains=Owner: on 3 of 3 task(s)" in text and "regression_tolerance = 0.12" in text
        assert "change vs main" in text and "vs snapshot" not in text
    finally:
        context.close()


def test_every_docs_sample_is_what_its_command_prints_today(run: dict[str, Any]) -> None:
    """The merged sample (docs/ci.md) is this run's merge output; the README's main-job table is the same table
    (merge prints what an unsharded run prints) with pytest's own count below; the shard line is this run's
    first shard; every other sample but the slow ones (`samples.SLOW`) is rerun. A stale sample names the
    command that rewrites it."""
    marked = samples.found()
    assert set(marked) == set(samples.SAMPLES), "every sample in docs/samples.py has its marker"
    fix = "stale: python docs/samples.py {} rewrites it from a real run"
    merged = samples.between(run["stdout"], r"=+ skill transfer \(merged")
    assert samples.normalized(merged) == samples.normalized(marked["merged"][1]), fix.format("merged")
    readme = marked["main-job"][1].splitlines()
    footer = readme.index(next(line for line in readme if "snapshot report summary" in line))
    assert readme[1:footer] == merged.splitlines()[1:], fix.format("main-job")
    items = sum(run["report"]["counts"].values())  # pytest's own count below it
    assert samples.normalized("\n".join(readme[footer + 1:])) == samples.normalized(
        f"{items} snapshots passed.\n{f' {items} passed in 1.00s '.center(80, '=')}"), fix.format("main-job")
    for name in sorted(set(samples.SAMPLES) - {"merged", "main-job"} - set(samples.SLOW)):
        text = samples.SAMPLES[name].produce(run["shards"])  # the shard line reuses this run's shards
        assert samples.normalized(text) == samples.normalized(marked[name][1]), fix.format(name)


def test_a_stale_sample_is_found(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text("<!-- sample: plan -->\n```text\nold figures\n```\n")
    assert samples.found(tmp_path)["plan"][1] == "old figures"
    (tmp_path / "docs" / "x.md").write_text("- a list item:\n\n  <!-- sample: restarts -->\n  ```text\n  a\n\n  b\n  ```\n")
    assert samples.found(tmp_path)["restarts"][1] == "a\n\nb"


def test_every_output_block_in_the_docs_is_a_sample_or_says_where_its_figures_come_from() -> None:
    """A `text` block is a command's output: written by docs/samples.py, or marked `<!-- figures: ... -->`
    with its reason in `samples.UNCHECKED`."""
    assert samples.unmarked() == [], "mark each with <!-- sample: NAME --> (docs/samples.py) or <!-- figures: ... -->"
    figures = sum(path.read_text(encoding="utf-8").count("<!-- figures: ")
                  for path in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
    assert figures == len(samples.UNCHECKED)
    assert samples.normalized("==== 46 passed in 5.51s ====") == samples.normalized("46 passed in 12.00s")
    assert samples.normalized("= 46 passed, 26 warnings in 5.51s =") == samples.normalized("46 passed in 1.00s")


def test_needs_a_look_names_portable_outcomes_and_seeds_unlearnable_as_written(run: dict[str, Any]) -> None:
    from pytest_skilltransfer.reports import markdown_report

    results = json.loads(run["json"].read_text())["results"]
    unlearnable = next(r for r in results if r["seed"] == "release-advisor" and r["target"] == "smollm2-135m")
    assert (unlearnable["baseline_target"], unlearnable["transferred"], unlearnable["direct_target"]) == (0, 0, 0)
    portable = next(r for r in results
                    if r["outcome"] == "transfers" and not html_report.needs_a_look([ItemRecord.from_json(r)]))
    comparison = {"mean": 0.0, "ci_low": -0.1, "ci_high": 0.1, "level": 0.98, "p_value": 1.0, "p_holm": 1.0,
                  "outcome": "no effect shown"}
    portable["portable"] = {
        "validate_on": ["sim-large"], "tolerance": 0.0, "outcome": "as portable",
        "transferred": {"hard": {"mean": portable["transferred"]}}, "optimization": None,
        "extra_cost": {"usd": 0.0, "calls": 0, "per_model": []},
        "family": {"comparisons": [{**comparison, "name": name, "label": name}
                                   for name in ("single", "multi", "multi_vs_single")]}}
    page = html_report.render({"results": results})
    look = page.split("<h2>Needs a look</h2>", 1)[1].split("<h2>", 1)[0]
    assert "unlearnable as written? even optimized directly on smollm2-135m the skill gains nothing" in look
    assert f"portable skill (validated on sim-large): as portable on {portable['target']}" in look
    markdown = markdown_report.render(records(results)).split("## Needs a look", 1)[1]
    assert "### unlearnable as written?: release-advisor (sim-small -> smollm2-135m)" in markdown
    assert f"### portable skill: {portable['seed']} ({portable['source']} -> {portable['target']})" in markdown
