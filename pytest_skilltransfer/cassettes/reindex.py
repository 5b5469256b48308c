"""`python -m pytest_skilltransfer index [DIR ...] [--check]`: bring the index beside every model file
up to date and fold journals killed recorders left, or (with `--check`, for CI) fail when an index is
missing, stale or wrong (rows checked against the file) or a journal is not folded. Both report
batches of the folder's batch manifest that no run collected (with `--check` they fail it too).

Recording writes the index with each model file, so this is needed only after a model file changed
by other means: a hand edit, a merge, files recorded before indexes existed. A stale index costs
speed, never correctness (the file is then read in full); `--check` keeps it from going unnoticed.

Each index also names the SDK versions its requests were verified under (`models.fidelity`): replay
skips importing the SDK only under them. After an SDK upgrade this command verifies the requests
again with the installed SDK (nothing is sent) and names the new versions when every request
rebuilds exactly; a file whose requests rebuild differently is reported, and replays through the
SDK, where those requests are misses until it is re-recorded. `--check` reports these, but does
not fail on them.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

from . import index
from .journal import LOCK_SUFFIX, PREFIX, SUFFIX, claim_orphans, journals, read_journal
from .seedstore import fold
from .store import CassetteFileError, folder_lock, model_files, scan_text, sdk_stamp, write_atomically
from .stored import open_model_file


def _seed_folders(root: Path) -> list[Path]:
    """Every folder under `root` (itself included) that holds model files or recording journals."""
    if not root.is_dir():
        return []
    folders = {p.parent for p in root.rglob("*.yaml") if not p.name.startswith(".")}
    folders |= {p.parent for p in root.rglob(f"{PREFIX}*{SUFFIX}")}
    return sorted(f for f in folders if model_files(f) or journals(f))


def _row(slot: index.Slot) -> tuple[object, ...]:
    return slot.offset, slot.length, slot.line, slot.key, slot.model, slot.problem, slot.answer, slot.seal


def _status(path: Path, check: bool) -> tuple[str, str | None]:
    """("current" | "stale" | "wrong" | "unverified" | "unindexable", the index text to write) for one
    model file.

    An index naming the file's digest is also checked row by row against the file read in full
    ("wrong" when a row points at another interaction than it says), so a current index is a true one.
    A current index without the installed SDK's fingerprint is "unverified" (replay then goes through
    the SDK, see `models.fidelity`); unless `check`, the requests are verified under the installed SDK
    and the text to write carries its fingerprint when they all rebuild exactly."""
    opened = open_model_file(path, lambda entry: None)
    try:
        scan = scan_text(path, opened.file.text(), lambda entry: entry)
    finally:
        opened.file.close()
    if opened.index_text is None and not opened.stored and opened.entries:
        return "unindexable", None
    current = index.read(path, opened.file.digest, opened.file.size)
    sdk = current.sdk if current is not None else None
    if check:
        stamp = sdk
    else:
        stamp = sdk_stamp(scan.kept) if scan.kept and not _installed(sdk) else sdk
    text = index.render(path, opened.file.digest, scan.slots, stamp) if scan.slots is not None else None
    if opened.index_text is not None:
        return "stale", text
    if not opened.stored and not opened.rejected:
        return "current", None
    indexed = current.slots if current is not None else []
    if scan.slots is not None and [_row(s) for s in scan.slots] != [_row(s) for s in indexed]:
        return "wrong", text
    if scan.kept and not _installed(sdk):
        return "unverified", text
    return "current", None


def _installed(sdk: str | None) -> bool:
    """Whether `sdk` (an index's fingerprint) names the installed versions of its SDK."""
    if not sdk:
        return False
    from ..models.fidelity import fingerprint

    provider = sdk.split("==", 1)[0]
    return fingerprint(provider) == sdk


def _journals(folder: Path, check: bool, counts: dict[str, int]) -> None:
    """Report (`check`) or fold (otherwise, with the folder lock held) the journals a recorder left."""
    if check:
        for path in journals(folder):
            held = _held(path)
            counts["unfolded"] += 1
            state = "recording in progress" if held else "left by a killed recorder"
            print(f"unfolded: {path} ({len(read_journal(path))} interaction(s), {state}; "
                  "`python -m pytest_skilltransfer index` folds it into the model files)")
        return
    orphans = claim_orphans(folder)
    recovered = [entry for orphan in orphans for entry in orphan.entries]
    try:
        fold(folder, recovered)
    except BaseException:
        for orphan in orphans:
            orphan.release()
        raise
    for orphan in orphans:
        orphan.remove()
        counts["folded"] += 1
    counts["unfolded"] += len(journals(folder))  # still held by a running recorder


def _held(journal: Path) -> bool:
    """Whether a running recorder holds this journal."""
    from filelock import FileLock, Timeout

    lock = FileLock(str(journal.with_name(journal.name[: -len(SUFFIX)] + LOCK_SUFFIX)), timeout=0)
    try:
        lock.acquire()
    except Timeout:
        return True
    lock.release()
    return False


def run(roots: list[Path], check: bool, batches: bool = True) -> int:
    """Index (or check) every model file under `roots`; 0 when all are current afterwards (and, with
    `check` and `batches`, no batch of a manifest is uncollected)."""
    counts = {"current": 0, "stale": 0, "wrong": 0, "unverified": 0, "written": 0, "unindexable": 0, "damaged": 0,
              "orphan": 0,
              "unfolded": 0, "folded": 0}
    for root in roots:
        if not root.is_dir():
            print(f"index: {root} is not a folder; give the cassette folder (default: cassettes)", file=sys.stderr)
            return 2
        for folder in _seed_folders(root):
            with contextlib.nullcontext() if check else folder_lock(folder):  # --check writes nothing
                _journals(folder, check, counts)
                for path in model_files(folder):
                    try:
                        state, text = _status(path, check)
                    except CassetteFileError as err:
                        counts["damaged"] += 1
                        print(f"damaged: {err}", file=sys.stderr)
                        continue
                    counts[state] += 1
                    if state == "unverified" and not check:
                        verified = text is not None and '"sdk": ' in text.partition("\n")[0]
                        if verified:
                            write_atomically(index.index_path(path), text or "")
                            counts["written"] += 1
                            counts["unverified"] -= 1
                            counts["current"] += 1
                        else:
                            print(f"unverified: {path} (the installed SDK does not rebuild its requests exactly: "
                                  "replay goes through the SDK, and a request it builds differently is a miss; "
                                  "re-record the seed to replay it without the SDK)")
                    elif state in ("stale", "wrong") and not check:
                        write_atomically(index.index_path(path), text or "")
                        counts["written"] += 1
                    elif state == "unverified":
                        print(f"unverified: {path} (its index names no fingerprint of the installed SDK, so replay "
                              "imports the SDK; `python -m pytest_skilltransfer index` verifies it)")
                    elif state != "current":
                        print(f"{state}: {path}" + {
                            "unindexable": " (not in the layout recording writes: re-record it to index it)",
                            "stale": " (its index is missing or stale)",
                            "wrong": " (its index names the file's digest but its rows point at other interactions)",
                        }[state])
                for orphan in folder.glob(f"*.yaml{index.SUFFIX}"):
                    if not orphan.with_suffix("").exists():
                        counts["orphan"] += 1
                        if check:
                            print(f"orphan: {orphan} (its model file is gone)")
                        else:
                            orphan.unlink()
    total = (counts["current"] + counts["stale"] + counts["wrong"] + counts["unverified"] + counts["unindexable"]
             + counts["damaged"])
    print(f"index: {total} model file(s): {counts['current']} current, {counts['stale']} stale"
          + (f", {counts['wrong']} with wrong rows" if counts["wrong"] else "")
          + (f", {counts['unverified']} replayed through the SDK" if counts["unverified"] else "")
          + (f" ({counts['written']} written)" if not check else "")
          + f", {counts['unindexable']} not indexable, {counts['damaged']} damaged, {counts['orphan']} orphan index(es)"
          + (" removed" if counts["orphan"] and not check else "")
          + (f", {counts['folded']} journal(s) folded" if counts["folded"] else "")
          + (f", {counts['unfolded']} unfolded journal(s)" if counts["unfolded"] else ""))
    uncollected = sum(uncollected_batches(root) for root in roots) if batches else 0
    if counts["damaged"]:
        return 1
    if check and uncollected:
        return 1
    if check:
        return 1 if counts["stale"] or counts["wrong"] or counts["orphan"] or counts["unfolded"] else 0
    return 1 if counts["unfolded"] else 0


def uncollected_batches(root: Path) -> int:
    """Print what the folder's batch manifest holds that no run collected; how many submissions that is."""
    from ..models.batch.manifest import FILE_NAME, Manifest, ManifestError, pending_text

    if not (root / FILE_NAME).is_file():
        return 0
    try:
        manifest = Manifest.open(root)
    except ManifestError as err:
        print(f"damaged: {err}", file=sys.stderr)
        return 1
    text = pending_text(manifest)
    if text is not None:
        print(f"uncollected: {text}")
    return len(manifest.open_submissions())


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pytest_skilltransfer index",
        description="Write the index beside every cassette model file (<model>.yaml.index) so replay opens it "
                    "without parsing it; --check only reports missing or stale indexes and exits 1 if any.")
    parser.add_argument("dirs", nargs="*", type=Path, default=[Path("cassettes")],
                        help="cassette folders (default: cassettes)")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when an index is missing, stale or wrong, a journal is unfolded, "
                        "or the batch manifest names batches no run collected")
    args = parser.parse_args(argv)
    return run(args.dirs, args.check)
