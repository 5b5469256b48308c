"""Run-level reports, built where every result arrives: the xdist controller (or the only process).

Each call report of a transfer item carries its result as `report.skilltransfer` (JSON shape);
xdist serializes that attribute with the report, so `pytest_runtest_logreport` on the controller
sees every worker's results. Workers neither print nor write reports.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .options import Settings

REPORT_ATTRIBUTE = "skilltransfer"


def is_worker(config: pytest.Config) -> bool:
    """True in an xdist worker process."""
    return hasattr(config, "workerinput")


def plain_nodeid(nodeid: str) -> str:
    """A node id without the `@group` suffix that `--dist loadgroup` adds on pytest < 9.2."""
    return nodeid.rsplit("@", 1)[0] if nodeid.rfind("@") > nodeid.rfind("]") else nodeid


class TransferReporting:
    """Gathers results from reports; prints the summary table and writes the JSON / Markdown reports."""

    def __init__(self, config: pytest.Config, settings: Settings):
        self.config = config
        self.settings = settings
        self.results: dict[str, dict[str, Any]] = {}  # by item: a rerun (pytest-rerunfailures) replaces its try

    def ordered(self) -> list[dict[str, Any]]:
        """One result per item, in an order that does not depend on which worker finished first."""
        return sorted(self.results.values(), key=lambda r: (r["seed"], r["source"], r["target"], r["item"]))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        data = getattr(report, REPORT_ATTRIBUTE, None)
        if data is not None and not is_worker(self.config):
            self.results[data["item"]] = data

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if is_worker(self.config):
            return
        from ..result_json import run_report
        from . import markdown_report

        if self.settings.json_path:
            _write(self.settings.json_path, json.dumps(run_report(self.ordered()), indent=2) + "\n")
        if self.settings.md_path:
            _write(self.settings.md_path, markdown_report.render(self.ordered()))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if is_worker(self.config) or not self.results:
            return
        from ..report import price_difference, summary_line, text_table

        results = self.ordered()
        terminalreporter.write_sep("=", "skill transfer")
        for line in text_table(results).splitlines():
            terminalreporter.write_line(line)
        terminalreporter.write_line(summary_line(results))
        difference = price_difference(results)
        if difference:
            terminalreporter.write_line(difference)
        for label, path in (("JSON", self.settings.json_path), ("Markdown", self.settings.md_path)):
            if path:
                terminalreporter.write_line(f"{label} report: {path}")


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
