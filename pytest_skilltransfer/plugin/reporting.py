"""Run-level reports, built where every result arrives: the xdist controller (or the only process).

Each call report of a transfer item carries its result as `report.skilltransfer` (its record's JSON text);
xdist serializes that attribute with the report, so `pytest_runtest_logreport` on the controller
reads every worker's results back as records (`evidence.item_record`). Workers neither print nor write reports.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import pytest

from ..guards.terminal import safe
from .options import Settings
from .spellings import SPELLINGS

if TYPE_CHECKING:
    from ..evidence.item_record import ItemRecord

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


def ordered(results: list[ItemRecord]) -> list[ItemRecord]:
    """One result per item, in an order that does not depend on which worker (or shard) ran it."""
    return sorted(results, key=lambda r: (r.seed, r.source, r.target, r.item or ""))


def gate_failed(result: ItemRecord) -> bool:
    """True when the item's gate failed (an item without a gate record has not failed one)."""
    return result.gate is not None and result.gate.verdict == "fail"


class TransferReporting:
    """Gathers results from reports; prints the summary table and writes the JSON / Markdown reports."""

    def __init__(self, config: pytest.Config, settings: Settings):
        self.config = config
        self.settings = settings
        self.results: dict[str, ItemRecord] = {}  # by item: a rerun (pytest-rerunfailures) replaces its try
        self.run_fields: list[Callable[[], dict[str, Any]]] = []  # extra top-level JSON fields (shard, ref)
        self.errors: dict[str, dict[str, Any]] = {}  # by item: errored before a result (a cassette miss, ...)
        self.interrupted: dict[str, Any] | None = None  # a stopped run: why and what was paid (`stopping`)

    def ordered(self) -> list[ItemRecord]:
        return ordered(list(self.results.values()))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if is_worker(self.config):
            return
        text = getattr(report, REPORT_ATTRIBUTE, None)
        if text is not None:
            from ..evidence.item_record import ItemRecord

            record = ItemRecord.from_json(json.loads(text))
            assert record.item is not None
            earlier = self.errors.pop(record.item, None)
            if earlier is not None and earlier.get("cost"):  # a rerun: the errored try's spend stays in the bill
                from ..reports.result_json import with_earlier_try

                record = with_earlier_try(record, earlier["cost"])
            self.results[record.item] = record
        error = getattr(report, ERROR_ATTRIBUTE, None)
        if error is not None and error["item"] not in self.results:
            earlier = self.errors.get(error["item"])
            if earlier is not None and earlier.get("cost") and error.get("cost"):  # errored on each try: both spent
                from ..reports.result_json import with_spent

                error = {**error, "cost": with_spent(error["cost"], earlier["cost"])}
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
        report = self.report() if self.settings.json_path or self.settings.html_path else None
        if self.settings.json_path:
            write(self.settings.json_path, json.dumps(report, indent=2) + "\n")
        if self.settings.md_path:
            text = markdown_report.render(self.ordered(), errored(self.errors))
            if self.interrupted is not None:
                text = f"**{interruption_line(self.interrupted)}**\n\n{text}"
            path = self.settings.md_path
            text = ("\n" if path.is_file() and path.stat().st_size else "") + text
            write(self.settings.md_path, text, append=True)
        if self.settings.html_path:
            from ..reports import html_report

            write(self.settings.html_path, html_report.render(report, standing=self._standing()))

    def _standing(self) -> Any:
        """How the run ended (wall time, round trips) for its page, from the live progress of a run that recorded
        (`live_progress`; None otherwise: a replay's page is its JSON report's)."""
        progress = self.config.pluginmanager.get_plugin("skilltransfer-progress")
        if progress is None or not progress.shown():
            return None
        return progress.standing("stopped" if self.interrupted is not None else "finished")

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


def summary_lines(results: list[ItemRecord], verbose: bool = False,
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
            lines.append(f"unfinished answers in {result.seed} ({result.source} -> {result.target}): {unfinished}")
    collapsed = {f"{r.seed} ({r.source} -> {r.target}): {r.answers_collapse.text}": None
                 for r in results if r.answers_collapse is not None and r.answers_collapse.text}
    lines += list(collapsed)
    lines += list({f"{r.seed}: fixed context chosen {r.context_chosen}": None for r in results if r.context_chosen})
    for result in results:
        for line in judge_lines([result]):
            lines += [line, *(f"  unstable: {text}" for text in (unstable_lines(result) if verbose else ()))]
    return lines + against_base(results)


def unlearnable_lines(results: list[ItemRecord]) -> list[str]:
    """One line per seed on which even the direct optimization gained nothing on any pair of the run (every item
    of the seed says so), naming the checks that no arm of any of its pairs ever passed."""
    by_seed: dict[str, list[ItemRecord]] = {}
    for result in results:
        by_seed.setdefault(result.seed, []).append(result)
    lines = []
    for seed, items in by_seed.items():
        if not all(item.unlearnable is not None for item in items):
            continue
        lists = [item.unlearnable.checks_never_passed if item.unlearnable else () for item in items]
        never = [label for label in lists[0] if all(label in other for other in lists[1:])]
        pairs = sorted({f"{item.source} -> {item.target}" for item in items})
        lines.append(f"unlearnable: {seed}: even direct optimization gained nothing on any pair ({', '.join(pairs)}); "
                     "checks never passed in any arm: "
                     + (", ".join(never) if never else "none (each passed somewhere, never all together)"))
    return lines


def spend_lines(results: list[ItemRecord], errors: list[dict[str, Any]] | None = None) -> list[str]:
    """Cost per phase, role and lane (what errored items spent included), and the source frontier of
    every target tried with several sources."""
    from ..evidence.frontier import frontier, frontier_lines
    from ..evidence.summary import bill, unique
    from ..pricing.cost_breakdown import breakdown_lines

    items = unique(results)
    return breakdown_lines(bill(items, errors)) + frontier_lines(frontier(items))


def errored(errors: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return [errors[item] for item in sorted(errors)]


def item_counts(results: list[ItemRecord], errors: dict[str, dict[str, Any]]) -> dict[str, int]:
    from ..reports.result_json import item_counts as counts

    return counts(results, list(errors.values()))


def write(path: Path, text: str, append: bool = False) -> None:
    """Write a report (or append to one, e.g. $GITHUB_STEP_SUMMARY); key-shaped strings are redacted first."""
    from ..guards.redaction import redact_text
    from ..guards.report_files import encode
    from ..guards.whole_file import replace_whole

    path.parent.mkdir(parents=True, exist_ok=True)
    text = redact_text(text)
    if append:
        with path.open("a", encoding="utf-8") as handle:
            handle.write(text)
        return
    if path.is_symlink() or (path.exists() and not path.is_file()):  # a link, a device, a pipe: written in place
        path.write_bytes(encode(path, text))
        return
    replace_whole(path, [encode(path, text)])  # a reader (a browser reloading a running page) never sees half of it
