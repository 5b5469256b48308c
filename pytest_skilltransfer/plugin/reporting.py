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

from ..guards.terminal import safe
from .options import Settings
from .spellings import SPELLINGS

REPORT_ATTRIBUTE = "skilltransfer"
ERROR_ATTRIBUTE = "skilltransfer_error"  # an item that errored before it had a result: why
FIX = pytest.StashKey[str]()  # an errored item's command that fixes it (a cassette miss: the re-record command)
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
        self.errors: dict[str, dict[str, Any]] = {}  # by item: errored before a result (a cassette miss, ...)
        self.interrupted: dict[str, Any] | None = None  # a stopped run: why and what was paid (`stopping`)

    def ordered(self) -> list[dict[str, Any]]:
        return ordered(list(self.results.values()))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if is_worker(self.config):
            return
        text = getattr(report, REPORT_ATTRIBUTE, None)
        if text is not None:
            data = json.loads(text)
            earlier = self.errors.pop(data["item"], None)
            if earlier is not None and earlier.get("cost"):  # a rerun: the errored try's spend stays in the bill
                from ..reports.result_json import with_earlier_try

                data = with_earlier_try(data, earlier["cost"])
            self.results[data["item"]] = data
        error = getattr(report, ERROR_ATTRIBUTE, None)
        if error is not None and error["item"] not in self.results:
            earlier = self.errors.get(error["item"])
            if earlier is not None and earlier.get("cost") and error.get("cost"):  # errored on each try: both spent
                from ..reports.result_json import with_earlier_try

                error = {**error, "cost": with_earlier_try({"cost": error["cost"]}, earlier["cost"])["cost"]}
            self.errors[error["item"]] = error

    def report(self) -> dict[str, Any]:
        """The JSON report: `run_report` of the results plus the run's own fields (shard, base ref)."""
        from ..reports.result_json import run_report

        report = run_report(self.ordered(), errored(self.errors))
        for fields in self.run_fields:
            report.update(fields())
        return report

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if is_worker(self.config):
            return
        from ..reports import markdown_report
        from .stopping import interruption, interruption_line

        self.interrupted = interruption(self.config)
        if self.interrupted is not None:
            self.run_fields.append(lambda: {"interrupted": self.interrupted})
        if self.settings.json_path:
            write(self.settings.json_path, json.dumps(self.report(), indent=2) + "\n")
        if self.settings.md_path:
            text = markdown_report.render(self.ordered(), errored(self.errors))
            if self.interrupted is not None:
                text = f"**{interruption_line(self.interrupted)}**\n\n{text}"
            path = self.settings.md_path
            text = ("\n" if path.is_file() and path.stat().st_size else "") + text
            write(self.settings.md_path, text, append=True)
        if self.settings.html_path:
            from ..reports import html_report

            write(self.settings.html_path, html_report.render(self.report()))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if is_worker(self.config) or not (self.results or self.errors or self.interrupted):
            return
        terminalreporter.write_sep("=", SECTION)
        if self.interrupted is not None:
            from .stopping import interruption_line

            terminalreporter.write_line(safe(interruption_line(self.interrupted)))
        spellings = self.config.stash.get(SPELLINGS, None)
        if spellings is not None and spellings.note():
            terminalreporter.write_line(safe(f"note: {spellings.note()}"))
        errors = errored(self.errors)
        lines = (summary_lines(self.ordered(), verbose=self.config.option.verbose > 0, errors=errors) if self.results
                 else spend_lines([], errors))  # what errored items spent stays in the bill
        for line in lines:
            terminalreporter.write_line(safe(line))
        if self.errors:  # (without errors the table counts every item; `merge` prints the same lines)
            counts = item_counts(self.ordered(), self.errors)
            terminalreporter.write_line("items: " + ", ".join(f"{n} {what}" for what, n in counts.items()))
        for error in errored(self.errors):
            from ..guards.redaction import redact_text

            terminalreporter.write_line(safe(redact_text(f"ERROR {error['item']}: {error['reason']}")))
        for label, path in (("JSON", self.settings.json_path), ("Markdown", self.settings.md_path),
                            ("HTML", self.settings.html_path)):
            if path:
                terminalreporter.write_line(safe(f"{label} report: {path}"))


def summary_lines(results: list[dict[str, Any]], verbose: bool = False,
                  errors: list[dict[str, Any]] | None = None) -> list[str]:
    """The terminal summary of a run's results: the table, the summary line, the price comparison, the
    bill (with what errored items spent), the rubric judges (`verbose`: with every unstable check), and
    before -> after against the base ref. `merge` prints the same lines for merged shards."""
    from ..reports.judge_report import judge_lines, unstable_lines
    from ..reports.report import pair_lines, price_difference, summary_line, text_table, unfinished_answers
    from ..reports.comparison import summary_lines as against_base
    from ..reports.portable import portable_lines

    lines = [*text_table(results).splitlines(), summary_line(results), *pair_lines(results), *portable_lines(results)]
    difference = price_difference(results)
    if difference:
        lines.append(difference)
    lines += spend_lines(results, errors)
    lines += unlearnable_lines(results)
    for result in results:
        unfinished = unfinished_answers(result)
        if unfinished:
            lines.append(f"unfinished answers in {result['seed']} ({result['source']} -> {result['target']}): {unfinished}")
    collapsed = {f"{r['seed']} ({r['source']} -> {r['target']}): {r['answers_collapse']['text']}": None
                 for r in results if (r.get("answers_collapse") or {}).get("text")}
    lines += list(collapsed)
    lines += list({f"{r['seed']}: fixed context chosen {r['context_chosen']}": None for r in results if r.get("context_chosen")})
    for result in results:
        for line in judge_lines([result]):
            lines += [line, *(f"  unstable: {text}" for text in (unstable_lines(result) if verbose else ()))]
    return lines + against_base(results)


def unlearnable_lines(results: list[dict[str, Any]]) -> list[str]:
    """One line per seed on which even the direct optimization gained nothing on any pair of the run (every item
    of the seed says so), naming the checks that no arm of any of its pairs ever passed."""
    by_seed: dict[str, list[dict[str, Any]]] = {}
    for result in results:
        by_seed.setdefault(result["seed"], []).append(result)
    lines = []
    for seed, items in by_seed.items():
        if not all(item.get("unlearnable") is not None for item in items):
            continue
        lists = [item["unlearnable"].get("checks_never_passed") or [] for item in items]
        never = [label for label in lists[0] if all(label in other for other in lists[1:])]
        pairs = sorted({f"{item['source']} -> {item['target']}" for item in items})
        lines.append(f"unlearnable: {seed}: even direct optimization gained nothing on any pair ({', '.join(pairs)}); "
                     "checks never passed in any arm: "
                     + (", ".join(never) if never else "none (each passed somewhere, never all together)"))
    return lines


def spend_lines(results: list[dict[str, Any]], errors: list[dict[str, Any]] | None = None) -> list[str]:
    """Cost per phase, role and lane (what errored items spent included), and the source frontier of
    every target tried with several sources."""
    from ..evidence.frontier import frontier, frontier_lines
    from ..evidence.summary import spent_by_errors, unique
    from ..pricing.cost_breakdown import breakdown, breakdown_lines

    items = unique(results)
    return breakdown_lines(breakdown(items + spent_by_errors(errors or []))) + frontier_lines(frontier(items))


def errored(errors: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return [errors[item] for item in sorted(errors)]


def item_counts(results: list[dict[str, Any]], errors: dict[str, dict[str, Any]]) -> dict[str, int]:
    from ..reports.result_json import item_counts as counts

    return counts(results, list(errors.values()))


def write(path: Path, text: str, append: bool = False) -> None:
    """Write a report (or append to one, e.g. $GITHUB_STEP_SUMMARY); key-shaped strings are redacted first."""
    from ..guards.redaction import redact_text
    from ..guards.report_files import compressed, encode

    path.parent.mkdir(parents=True, exist_ok=True)
    if compressed(path) and not append:  # REPORT.json.gz: gzip-compressed
        path.write_bytes(encode(path, redact_text(text)))
        return
    with path.open("a" if append else "w", encoding="utf-8") as handle:
        handle.write(redact_text(text))
