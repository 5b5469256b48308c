"""`python -m pytest_skilltransfer html REPORT.json -o PAGE.html`: the page of a JSON report (or a merged one)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..guards.report_files import read_text
from ..plugin.reporting import write
from ..reports import html_report


def main(argv: list[str] | None = None) -> int:
    """`python -m pytest_skilltransfer html REPORT.json -o PAGE.html`: the page of a JSON report (or a merged one)."""
    parser = argparse.ArgumentParser(prog="python -m pytest_skilltransfer html",
                                     description="Build the self-contained HTML page from a JSON report "
                                                 "(--skilltransfer-json, or merge --json).")
    parser.add_argument("report", type=Path, metavar="REPORT.json")
    parser.add_argument("-o", "--output", type=Path, metavar="PAGE.html", required=True)
    parser.add_argument("--history", action="store_true",
                        help="add a section: each seed x pair's gain across the commits that changed its snapshot "
                             "(read from the git repository of the current folder)")
    args = parser.parse_args(argv)
    try:
        report = json.loads(read_text(args.report))
    except OSError as exc:
        print(f"error: {args.report}: cannot read it ({exc.strerror})", file=sys.stderr)
        return 2
    except ValueError as exc:
        print(f"error: {args.report}: not a JSON report ({exc})", file=sys.stderr)
        return 2
    if not isinstance(report, dict) or not isinstance(report.get("results"), list):
        print(f"error: {args.report}: not a skilltransfer JSON report (no \"results\" list)", file=sys.stderr)
        return 2
    history = ""
    if args.history:
        from ..reports.history_view import html_section, series
        from .history import GitError, read_points, toplevel

        seeds = tuple(sorted({r["seed"] for r in report["results"]}))
        try:
            history = html_section(series(read_points(toplevel(Path(".")), seeds=seeds)))
        except GitError as exc:
            print(f"error: --history: {exc}", file=sys.stderr)
            return 2
    write(args.output, html_report.render(report, history))
    print(f"HTML report: {args.output}")
    return 0
