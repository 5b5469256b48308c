"""Sharded runs merged into one report: equal to the unsharded run's, gating across the merged set."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_skilltransfer.commands.merge import main as merge
from shared_runs import main_job_unsharded

ROOT = Path(__file__).resolve().parents[2]
SHARDS = 3
MAIN_JOB_PAGE_BOUND = 6_000_000  # bytes of the main job's HTML page
VOLATILE = ("duration", "durations", "seconds", "elapsed", "timings", "started", "finished")


def without_volatile(value: Any) -> Any:
    """A report with timings (and other run-dependent fields) removed at every depth."""
    if isinstance(value, dict):
        return {k: without_volatile(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [without_volatile(v) for v in value]
    return value


def table(lines: list[str]) -> list[str]:
    """The summary table and the lines under it, up to the report paths."""
    start = next(i for i, line in enumerate(lines) if line.startswith("seed ") and "outcome" in line)
    end = next(i for i, line in enumerate(lines) if line.startswith(("JSON report:", "Markdown report:")))
    return lines[start:end]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, main_job_shards_reports: list[Path]) -> dict[str, Any]:
    """The unsharded run (once per test run: `main_job_unsharded`) and the test run's shared shards of the main job
    (`main_job_shards_reports`, run as docs/samples.py runs them, also for the reviewer's view): (JSON, terminal
    lines) each."""
    tmp = tmp_path_factory.mktemp("shards")
    folder = main_job_unsharded(tmp_path_factory)
    whole = (json.loads((folder / "whole.json").read_text()), (folder / "whole.md").read_text(),
             (folder / "whole.out").read_text().splitlines())
    assert len(main_job_shards_reports) == SHARDS
    shards = [(json.loads(path.read_text()), path.with_suffix(".out").read_text().splitlines())
              for path in main_job_shards_reports]
    return {"tmp": tmp, "whole": whole, "whole_html": folder / "whole.html", "shards": shards,
            "paths": main_job_shards_reports}


def test_three_shards_merged_equal_the_unsharded_run_and_keep_seeds_whole(runs: dict[str, Any],
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    tmp = runs["tmp"]
    whole_json, whole_md, whole_lines = runs["whole"]
    seeds_per_shard = [{r["seed"] for r in report["results"]} for report, _ in runs["shards"]]
    assert all(seeds_per_shard) and sum(map(len, seeds_per_shard)) == len(set().union(*seeds_per_shard))
    assert set().union(*seeds_per_shard) == {r["seed"] for r in whole_json["results"]}
    for report, _ in runs["shards"]:
        assert {f"seeds/{s}" for s in {r["seed"] for r in report["results"]}} == set(report["shard"]["seeds"])

    code = merge([*map(str, runs["paths"]), "--json", str(tmp / "merged.json"), "--md", str(tmp / "merged.md"),
                  "--html", str(tmp / "merged.html")])
    printed = capsys.readouterr().out.splitlines()
    assert code == 0
    merged = json.loads((tmp / "merged.json").read_text())
    assert without_volatile(merged) == without_volatile(whole_json)
    assert (tmp / "merged.md").read_text() == whole_md
    assert (tmp / "merged.html").read_text() == runs["whole_html"].read_text()
    assert runs["whole_html"].stat().st_size < MAIN_JOB_PAGE_BOUND  # the README states the bound
    assert table(printed) == table(whole_lines)
    assert printed[0].startswith("=") and "skill transfer (merged from 3 report(s))" in printed[0]


def test_merge_refuses_an_incomplete_or_overlapping_set(runs: dict[str, Any], tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    first, second, third = map(str, runs["paths"])
    assert merge([first, third]) == 2
    assert capsys.readouterr().err.strip() == "error: shard(s) 1 of 3 missing: give every shard's report"
    assert merge([first, second, third, first]) == 2
    assert "shard 0 given twice" in capsys.readouterr().err
    other = json.loads(Path(third).read_text())
    other["shard"]["count"] = 4
    (tmp_path / "other.json").write_text(json.dumps(other))
    assert merge([first, second, str(tmp_path / "other.json")]) == 2
    assert "different --num-shards" in capsys.readouterr().err
    (tmp_path / "damaged.json").write_text("{not json")
    assert merge([first, second, str(tmp_path / "damaged.json")]) == 2
    assert f"error: {tmp_path / 'damaged.json'}: not a JSON report" in capsys.readouterr().err


def test_merge_fails_when_a_merged_gate_fails_and_names_it(runs: dict[str, Any], tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    reports = [json.loads(path.read_text()) for path in runs["paths"]]
    failing = copy.deepcopy(reports[1])
    result = failing["results"][0]
    result["gate"] = {**result["gate"], "passed": False, "verdict": "fail", "failures": ["gain +0.000 is below min_gain +0.500"]}
    paths = []
    for index, report in enumerate([reports[0], failing, reports[2]]):
        paths.append(str(tmp_path / f"{index}.json"))
        Path(paths[-1]).write_text(json.dumps(report))
    assert merge([*paths, "--md", str(tmp_path / "summary.md")]) == 1
    err = capsys.readouterr().err
    assert err.splitlines() == ["1 gate(s) failed:",
                                f"  FAILED {result['item']}: gain +0.000 is below min_gain +0.500"]
    assert "**FAIL**" in (tmp_path / "summary.md").read_text()  # the summary is written before the exit


def test_the_readme_shows_what_the_shards_print_and_the_workflows_commands(runs: dict[str, Any]) -> None:
    import re

    readme = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    shard_line = next(line for line in runs["shards"][0][1] if line.startswith("skilltransfer shard 0 of 3"))
    assert f"  {shard_line}\n" in readme
    workflow = (ROOT / "examples" / "github-actions" / "skilltransfer.yml").read_text(encoding="utf-8")
    folded = [" ".join(block.split()) for block in re.findall(r"run: >-\n((?:          .*\n)+)", workflow)]
    documented = [" ".join(block.replace("\\\n", " ").split()) for block in re.findall(r"```bash\n(.*?)```", readme, re.S)]
    options = lambda command: sorted(set(re.findall(r"(--[a-z][a-z0-9-]+)", command)))
    for start in ("pytest -n auto --shard-id", "python -m pytest_skilltransfer merge"):
        ours = next(c for c in folded if c.startswith(start))
        shown = next(c for block in documented for c in block.split(" && ") if start in c)
        assert options(shown) == options(ours), start


def test_merge_fails_for_an_item_its_shard_failed_beyond_the_gates(runs: dict[str, Any], tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    reports = [json.loads(path.read_text()) for path in runs["paths"]]
    item = reports[2]["shard"]["items"][0]
    reports[2]["shard"]["failed"] = [item]  # e.g. a hand-written test's own assertion
    reports[2]["shard"]["errors"] = ["seeds/broken"]  # e.g. a seed that failed to collect
    paths = []
    for index, report in enumerate(reports):
        paths.append(str(tmp_path / f"{index}.json"))
        Path(paths[-1]).write_text(json.dumps(report))
    assert merge(paths) == 1
    assert capsys.readouterr().err.splitlines() == [
        "2 item(s) failed or errored in their shard:",
        f"  FAILED {item} (the test failed in shard 2)",
        "  ERROR seeds/broken (errored in shard 2)",
    ]


def test_every_item_of_the_main_job_reads_back_as_its_record_and_writes_the_same_json(runs: dict[str, Any]) -> None:
    from pytest_skilltransfer.evidence.item_record import ItemRecord

    results = runs["whole"][0]["results"]
    assert len(results) == 46
    for data in results:
        record = ItemRecord.from_json(data)
        assert json.dumps(record.to_json()) == json.dumps(data)  # every key, in the same order
        assert ItemRecord.from_json(record.to_json()) == record
        assert record.gate is not None and record.gate.label and record.family is not None
        assert not record.extra and not record.gain.extra and not record.cost.extra  # every key is declared


OLD_REPORT = ROOT / "tests" / "commands" / "reports" / "before-model-names.json.gz"  # 4 items of a run before the
# JSON carried the names given (`source_name`), the family, the constant answer and the answers' collapse


def test_a_report_of_an_earlier_version_loads_and_merges(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import gzip

    from pytest_skilltransfer.evidence.item_record import ItemRecord

    old = json.loads(gzip.decompress(OLD_REPORT.read_bytes()))
    for data in old["results"]:
        record = ItemRecord.from_json(data)
        assert "source_name" not in data and record.source_name is None and record.family is None
        assert json.dumps(record.to_json()) == json.dumps(data)  # nothing lost, nothing added
    code = merge([str(OLD_REPORT), "--json", str(tmp_path / "merged.json"), "--md", str(tmp_path / "merged.md"),
                  "--html", str(tmp_path / "merged.html")])
    printed = capsys.readouterr().out
    assert code == 0, printed
    merged = json.loads((tmp_path / "merged.json").read_text())
    assert [r["item"] for r in merged["results"]] == sorted(r["item"] for r in old["results"])
    assert merged["summary"]["items"] and merged["counts"]["passed"] == 4
    assert "status-report" in printed and "docs-style" in (tmp_path / "merged.md").read_text()


def test_a_report_of_a_newer_record_version_is_a_clear_error() -> None:
    from pytest_skilltransfer.evidence.item_record import ItemRecord, RecordError

    with pytest.raises(RecordError, match="record_version 2; this version of pytest-skilltransfer reads up to 1"):
        ItemRecord.from_json({"seed": "s", "source": "a", "target": "b", "record_version": 2})
