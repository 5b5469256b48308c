"""`python -m pytest_skilltransfer merge SHARD.json... [--md FILE] [--json FILE] [--html FILE]`: one report from shards.

The shards' JSON reports (`--skilltransfer-json` of runs with `--shard-id/--num-shards`) are checked
to be one complete set: the same shard count, every id from 0 to N-1 exactly once, no item and no
seed in two shards, the same base ref. Their results are then rendered by the very functions an
unsharded run uses (`run_report` with its run-level statistics over all merged items, the
terminal summary lines, the Markdown report), so the merged JSON equals an unsharded run's.

Exit codes: 0 every merged gate passed; 1 a gate failed, or a shard recorded a failed or errored
item (each is named on stderr); 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..evidence.item_record import ItemRecord, RecordError
from ..guards.report_files import read_text
from ..guards.terminal import safe

SHARD_FIELD = "shard"


class MergeError(Exception):
    """Shard reports that do not make one complete set, or cannot be read."""


def load(path: Path) -> dict[str, Any]:
    """One shard's JSON report; a missing or damaged file names itself."""
    try:
        report = json.loads(read_text(path))
    except OSError as exc:
        raise MergeError(f"{path}: cannot read it ({exc.strerror})") from None
    except ValueError as exc:
        raise MergeError(f"{path}: not a JSON report ({exc})") from None
    if not isinstance(report, dict) or not isinstance(report.get("results"), list):
        raise MergeError(f"{path}: not a skilltransfer JSON report (no \"results\" list); "
                         "write one with pytest --skilltransfer-json=PATH")
    for index, result in enumerate(report["results"]):
        try:
            ItemRecord.from_json(result)
        except RecordError as exc:
            raise MergeError(f"{path}: result {index + 1} cannot be read: {exc}") from None
    return report


def check_set(reports: list[tuple[Path, dict[str, Any]]]) -> None:
    """Raise MergeError unless the reports are the complete shards of one run."""
    records = [(path, report.get(SHARD_FIELD)) for path, report in reports]
    unsharded = [str(path) for path, record in records if not record]
    if unsharded and len(reports) > 1:
        raise MergeError(f"{', '.join(unsharded)}: no shard record; merge the reports of runs with "
                         "--shard-id/--num-shards")
    if unsharded:
        return
    counts = {record["count"] for _, record in records}
    if len(counts) > 1:
        raise MergeError("the reports come from different --num-shards: "
                         + ", ".join(f"{p} ({r['count']})" for p, r in records))
    count = counts.pop()
    by_id: dict[int, list[Path]] = {}
    for path, record in records:
        by_id.setdefault(record["id"], []).append(path)
    twice = {shard: paths for shard, paths in by_id.items() if len(paths) > 1}
    if twice:
        raise MergeError("; ".join(f"shard {s} given twice ({', '.join(map(str, p))})" for s, p in sorted(twice.items())))
    missing = sorted(set(range(count)) - set(by_id))
    if missing:
        raise MergeError(f"shard(s) {', '.join(map(str, missing))} of {count} missing: give every shard's report")
    _disjoint(records, "seeds", "seed")
    _disjoint(records, "items", "item")
    refs = {json.dumps(report.get("compare_to"), sort_keys=True) for _, report in reports}
    if len(refs) > 1:
        raise MergeError("the shards compared with different base refs (--compare-to): "
                         + ", ".join(f"{p}: {(r.get('compare_to') or {}).get('ref', 'none')}" for p, r in reports))


def _disjoint(records: list[tuple[Path, dict[str, Any]]], key: str, word: str) -> None:
    owner: dict[str, Path] = {}
    for path, record in records:
        for name in record.get(key, []):
            if name in owner:
                raise MergeError(f"{word} {name} is in two shards ({owner[name]} and {path})")
            owner[name] = path


def merged_results(reports: list[dict[str, Any]]) -> list[ItemRecord]:
    """Every shard's results as records, in the order one unsharded run lists them."""
    from ..plugin.reporting import ordered

    return ordered([ItemRecord.from_json(r) for report in reports for r in report["results"]])


def merged_report(reports: list[dict[str, Any]]) -> dict[str, Any]:
    """The JSON report of the merged set, exactly as one unsharded run writes it."""
    from ..reports.result_json import run_report

    errors = sorted((e for report in reports for e in report.get("errors", [])), key=lambda e: e["item"])
    report = run_report(merged_results(reports), errors)
    base = reports[0].get("compare_to") if reports else None
    if base:
        report["compare_to"] = base
    return report


def failed_gates(results: list[ItemRecord]) -> list[str]:
    """`<node id>: reasons` for every item whose gate failed."""
    from ..plugin.reporting import gate_failed

    lines = []
    for result in results:
        gate = result.gate
        if gate is not None and gate_failed(result):
            snapshot = gate.snapshot or "ok"
            reasons = [*gate.failures, *([snapshot] if snapshot not in ("ok", "updated") else [])]
            name = result.item or f"{result.seed} ({result.source} -> {result.target})"
            lines.append(f"{name}: " + "; ".join(reasons))
    return lines


def failed_tests(reports: list[dict[str, Any]], gated: set[str]) -> list[str]:
    """Items a shard recorded as failed or errored beyond their gates (a test's own assertion, a
    cassette miss, a broken seed), as `FAILED <id>` / `ERROR <id>` with the shard that ran them."""
    lines = []
    for report in reports:
        record = report.get(SHARD_FIELD) or {}
        where = f"in shard {record.get('id')}"
        lines += [f"FAILED {nodeid} (the test failed {where})" for nodeid in record.get("failed", []) if nodeid not in gated]
        lines += [f"ERROR {nodeid} (errored {where})" for nodeid in record.get("errors", [])]
    return lines


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m pytest_skilltransfer merge",
        description="Merge the JSON reports of sharded runs (--shard-id/--num-shards) into the report of one run.")
    parser.add_argument("reports", nargs="+", type=Path, metavar="SHARD.json", help="every shard's JSON report")
    parser.add_argument("--md", type=Path, metavar="FILE", help="write the Markdown report (e.g. $GITHUB_STEP_SUMMARY)")
    parser.add_argument("--json", type=Path, metavar="FILE", help="write the merged JSON report")
    parser.add_argument("--html", type=Path, metavar="FILE", help="write the self-contained HTML page")
    return parser


def main(argv: list[str] | None = None) -> int:
    from ..plugin.reporting import SECTION, gate_failed, spend_lines, summary_lines, write
    from ..reports import markdown_report

    args = build_parser().parse_args(argv)
    try:
        reports = [(path, load(path)) for path in args.reports]
        check_set(reports)
    except MergeError as exc:
        print(safe(f"error: {exc}"), file=sys.stderr)
        return 2
    merged = merged_report([report for _, report in reports])
    results = merged_results([report for _, report in reports])
    shards = len(reports)
    print(f" {SECTION} (merged from {shards} report(s)) ".center(80, "="))
    errors = merged["errors"]
    lines = summary_lines(results, errors=errors) if results else (spend_lines([], errors) or ["no transfer items ran"])
    for line in lines:
        print(safe(line))
    if args.json:
        write(args.json, json.dumps(merged, indent=2) + "\n")
        print(f"JSON report: {args.json}")
    if args.md:
        write(args.md, markdown_report.render(results, merged["errors"]))
        print(f"Markdown report: {args.md}")
    if args.html:
        from ..reports import html_report

        write(args.html, html_report.render(merged))
        print(f"HTML report: {args.html}")
    failed = failed_gates(results)
    if failed:
        print(f"{len(failed)} gate(s) failed:", file=sys.stderr)
        for line in failed:
            print(safe(f"  FAILED {line}"), file=sys.stderr)
    gated = {r.item or "" for r in results if gate_failed(r)}
    broken = failed_tests([report for _, report in reports], gated)
    if broken:
        print(f"{len(broken)} item(s) failed or errored in their shard:", file=sys.stderr)
        for line in broken:
            print(safe(f"  {line}"), file=sys.stderr)
    return 1 if failed or broken else 0
