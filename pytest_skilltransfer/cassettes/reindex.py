"""`python -m pytest_skilltransfer index [DIR ...] [--check]`: bring the index beside every model file
up to date, or (with `--check`, for CI) fail when one is missing or stale.

Recording writes the index with each model file, so this is needed only after a model file changed
by other means: a hand edit, a merge, files recorded before indexes existed. A stale index costs
speed, never correctness (the file is then read in full); `--check` keeps it from going unnoticed.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

from . import index
from .store import CassetteFileError, folder_lock, model_files, write_atomically
from .stored import open_model_file


def _seed_folders(root: Path) -> list[Path]:
    """Every folder under `root` (itself included) that holds model files."""
    folders = {p.parent for p in root.rglob("*.yaml") if not p.name.startswith(".")} if root.is_dir() else set()
    return sorted(f for f in folders if model_files(f))


def _status(path: Path) -> tuple[str, str | None]:
    """("current" | "stale" | "unindexable", the index text to write) for one model file."""
    opened = open_model_file(path, lambda entry: None)
    opened.file.close()
    if opened.index_text is not None:
        return "stale", opened.index_text
    return ("unindexable", None) if not opened.stored and opened.entries else ("current", None)


def run(roots: list[Path], check: bool) -> int:
    """Index (or check) every model file under `roots`; 0 when all are current afterwards."""
    counts = {"current": 0, "stale": 0, "written": 0, "unindexable": 0, "damaged": 0, "orphan": 0}
    for root in roots:
        if not root.is_dir():
            print(f"index: {root} is not a folder; give the cassette folder (default: cassettes)", file=sys.stderr)
            return 2
        for folder in _seed_folders(root):
            with contextlib.nullcontext() if check else folder_lock(folder):  # --check writes nothing
                for path in model_files(folder):
                    try:
                        state, text = _status(path)
                    except CassetteFileError as err:
                        counts["damaged"] += 1
                        print(f"damaged: {err}", file=sys.stderr)
                        continue
                    counts[state] += 1
                    if state == "stale" and not check:
                        write_atomically(index.index_path(path), text or "")
                        counts["written"] += 1
                    elif state != "current":
                        print(f"{state}: {path}" + (" (not in the layout recording writes: re-record it to index it)"
                                                    if state == "unindexable" else " (its index is missing or stale)"))
                for orphan in folder.glob(f"*.yaml{index.SUFFIX}"):
                    if not orphan.with_suffix("").exists():
                        counts["orphan"] += 1
                        if check:
                            print(f"orphan: {orphan} (its model file is gone)")
                        else:
                            orphan.unlink()
    total = counts["current"] + counts["stale"] + counts["unindexable"] + counts["damaged"]
    print(f"index: {total} model file(s): {counts['current']} current, {counts['stale']} stale"
          + (f" ({counts['written']} written)" if not check else "")
          + f", {counts['unindexable']} not indexable, {counts['damaged']} damaged, {counts['orphan']} orphan index(es)"
          + (" removed" if counts["orphan"] and not check else ""))
    if counts["damaged"]:
        return 1
    return 1 if check and (counts["stale"] or counts["orphan"]) else 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pytest_skilltransfer index",
        description="Write the index beside every cassette model file (<model>.yaml.index) so replay opens it "
                    "without parsing it; --check only reports missing or stale indexes and exits 1 if any.")
    parser.add_argument("dirs", nargs="*", type=Path, default=[Path("cassettes")],
                        help="cassette folders (default: cassettes)")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when an index is missing or stale")
    args = parser.parse_args(argv)
    return run(args.dirs, args.check)
