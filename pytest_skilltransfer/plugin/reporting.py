"""Run-level reports, built where every result arrives: the xdist controller (or the only process).

Each call report of a transfer item carries its result as `report.skilltransfer` (JSON shape);
xdist serializes that attribute with the report, so `pytest_runtest_logreport` on the controller
sees every worker's results. Workers neither print nor write reports.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import pytest

from .options import Settings

REPORT_ATTRIBUTE = "skilltransfer"
SECTION = "skill transfer"


def is_worker(config: pytest.Config) -> bool:
    """True in an xdist worker process."""
    return hasattr(config, "workerinput")


def plain_nodeid(nodeid: str) -> str:
    """A node id without the `@group` suffix that `--dist loadgroup` adds on pytest < 9.2."""
    return nodeid.rsplit("@", 1)[0] if nodeid.rfind("@") > nodeid.rfind("]") else nodeid


def ordered(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One result per item, in an order that does not depend on which worker (or shard) ran it."""
    return sorted(results, key=lambda r: (r["seed"], r["source"], r["target"], r["item"]))


def gate_failed(result: dict[str, Any]) -> bool:
    """True when the item's gate failed (an item without a gate record has not failed one)."""
    gate = result.get("gate")
    if not gate:
        return False
    return gate["verdict"] == "fail" if "verdict" in gate else not gate["passed"]


class TransferReporting:
    """Gathers results from reports; prints the summary table and writes the JSON / Markdown reports."""

    def __init__(self, config: pytest.Config, settings: Settings):
        self.config = config
        self.settings = settings
        self.results: dict[str, dict[str, Any]] = {}  # by item: a rerun (pytest-rerunfailures) replaces its try
        self.run_fields: list[Callable[[], dict[str, Any]]] = []  # extra top-level JSON fields (shard, ref)

    def ordered(self) -> list[dict[str, Any]]:
        return ordered(list(self.results.values()))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        data = getattr(report, REPORT_ATTRIBUTE, None)
        if data is not None and not is_worker(self.config):
            self.results[data["item"]] = data

    def report(self) -> dict[str, Any]:
        """The JSON report: `run_report` of the results plus the run's own fields (shard, base ref)."""
        from ..result_json import run_report

        report = run_report(self.ordered())
        for fields in self.run_fields:
            report.update(fields())
        return report

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if is_worker(self.config):
            return
        from . import markdown_report

        if self.settings.json_path:
            write(self.settings.json_path, json.dumps(self.report(), indent=2) + "\n")
        if self.settings.md_path:
            write(self.settings.md_path, markdown_report.render(self.ordered()))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if is_worker(self.config) or not self.results:
            return
        terminalreporter.write_sep("=", SECTION)
        for line in summary_lines(self.ordered()):
            terminalreporter.write_line(line)
        for label, path in (("JSON", self.settings.json_path), ("Markdown", self.settings.md_path)):
            if path:
                terminalreporter.write_line(f"{label} report: {path}")


def summary_lines(results: list[dict[str, Any]]) -> list[str]:
    """The terminal summary of a run's results: the table, the summary line, the price comparison,
    and before -> after against the base ref. `merge` prints the same lines for merged shards."""
    from ..report import pair_lines, price_difference, summary_line, text_table, unfinished_answers
    from .compare import summary_lines as against_base

    lines = [*text_table(results).splitlines(), summary_line(results), *pair_lines(results)]
    from ..judge_report import judge_lines

    difference = price_difference(results)
    if difference:
        lines.append(difference)
    for result in results:
        unfinished = unfinished_answers(result)
        if unfinished:
            lines.append(f"unfinished answers in {result['seed']} ({result['source']} -> {result['target']}): {unfinished}")
    return lines + judge_lines(results) + against_base(results)


def write(path: Path, text: str) -> None:
    """Write a report; any key value or token-shaped string left in it is redacted first."""
    from ..redaction import redact_text

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(redact_text(text), encoding="utf-8")
