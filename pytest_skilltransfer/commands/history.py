"""`python -m pytest_skilltransfer history`: each seed x pair's gain across the commits that changed its
snapshot, read from git (`git log` over the committed snapshot files, their texts through one
`git cat-file --batch`), no other store. Prints a table and a small chart per seed; `--html PAGE` writes
them as a page, `--json` prints the rows."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from ..reports import history_view as report

SNAPSHOTS = ":(glob)**/__snapshots__/**/*.md"


class GitError(Exception):
    """git could not be run or read the repository."""


def _git(cwd: Path, *args: str, stdin: bytes | None = None) -> bytes:
    try:
        done = subprocess.run(["git", *args], cwd=cwd, input=stdin, capture_output=True, timeout=120)
    except FileNotFoundError:
        raise GitError("git is not installed") from None
    if done.returncode != 0:
        raise GitError(done.stderr.decode(errors="replace").strip() or f"git {args[0]} failed")
    return done.stdout


def toplevel(folder: Path) -> Path:
    """The git repository's top folder holding `folder`."""
    return Path(_git(folder, "rev-parse", "--show-toplevel").decode().strip())


def read_points(root: Path, under: str = "", seeds: tuple[str, ...] = ()) -> list[report.Point]:
    """Every committed version of every snapshot under `under` (default: the whole repository), newest first."""
    log = _git(root, "log", "--format=%x00%H%x09%cs%x09%s", "--name-only", "--no-renames", "--",
               f":(glob){under.rstrip('/') + '/' if under else ''}**/__snapshots__/**/*.md").decode(errors="replace")
    wanted: list[tuple[str, str, str, str]] = []
    for block in log.split("\0")[1:]:
        head, _, names = block.partition("\n")
        commit, date, subject = (head.split("\t", 2) + ["", ""])[:3]
        for name in filter(None, (n.strip() for n in names.splitlines())):
            if seeds and not any(f"/{seed}/" in f"/{name}" for seed in seeds):
                continue
            wanted.append((commit, date, subject, name))
    if not wanted:
        return []
    out = _git(root, "cat-file", "--batch", stdin="".join(f"{c}:{n}\n" for c, _, _, n in wanted).encode())
    points, at = [], 0
    for commit, date, subject, name in wanted:
        header_end = out.index(b"\n", at)
        header = out[at:header_end].split()
        at = header_end + 1
        if header[-1] == b"missing":  # deleted by this commit
            continue
        size = int(header[2])
        text = out[at:at + size].decode("utf-8", errors="replace")
        at += size + 1
        point = report.parse(text, name, commit, date, subject)
        if point is not None:
            points.append(point)
    return points


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pytest_skilltransfer history",
        description="Each seed x pair's gain with its 95%% interval across the commits that changed its snapshot, "
                    "read from git: a table and a small chart per seed.")
    parser.add_argument("--root", type=Path, default=Path("."), help="a folder of the git repository (default: .)")
    parser.add_argument("--seeds", default="", help="comma-separated seed names (default: every seed)")
    parser.add_argument("--under", default="", help="only snapshots under this folder of the repository (e.g. seeds)")
    parser.add_argument("--html", type=Path, metavar="PAGE.html", help="also write the charts and table as a page")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON instead of the text")
    args = parser.parse_args(argv)
    seeds = tuple(s.strip() for s in args.seeds.split(",") if s.strip())
    try:
        history = report.series(read_points(toplevel(args.root), args.under, seeds))
    except GitError as exc:
        print(f"error: {args.root}: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(report.table_rows(history), indent=1))
    else:
        print("\n".join(report.text_lines(history)))
    if args.html:
        from ..plugin.reporting import write
        from ..reports.html_parts import CSP, CSS

        page = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                f'<meta http-equiv="Content-Security-Policy" content="{CSP}"><title>Skill transfer history</title>'
                f"<style>{CSS}</style></head><body><h1>Skill transfer: gain over commits</h1>"
                f"{report.html_section(history)}</body></html>\n")
        write(args.html, page)
        print(f"HTML history: {args.html}")
    return 0
