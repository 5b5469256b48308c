"""An append-only journal: every recorded call is on disk (fsync'd) before the SDK call returns.

Group commit: answers that arrive together are made durable together. Each call writes its line
(under the journal's lock) and then waits until an fsync that began after its write has finished;
one of the waiting calls runs that fsync for all of them, while others go on writing lines for the
next one. So a call still returns only once its line is on disk, at one fsync per group of calls in
flight instead of one per call.

A recording process writes `<seed folder>/.journal-<pid>-<random>.jsonl`, one JSON interaction per
line, and holds `<same name>.lock` (filelock) for as long as it records. Closing folds the journal
into the readable model files and removes both. A process killed with `kill -9` leaves its journal
behind with every answered call in it (at most the line being written is torn, and is skipped); the
kernel releases its lock, so the next process to open the folder sees an orphan and folds it in.

Room before paying: before a request is sent, the room its answer's line can take is reserved on
disk (`reserve`: `<same name>.reserve`, allocated with `posix_fallocate`), and given back just before
the line is written. A disk that is full refuses the reservation, so the request is not sent; an
answer that was paid for always finds its room. A killed writer's reserve file is removed by the
next open (`clean_reserves`).
"""

from __future__ import annotations

import json
import os
import threading
import uuid
from pathlib import Path
from typing import Any

from ..guards.whole_file import fsync_folder
from .store import refuse_secrets, structure_problem

PREFIX = ".journal-"
SUFFIX = ".jsonl"
LOCK_SUFFIX = ".lock"
RESERVE_SUFFIX = ".reserve"


def _lock_path(journal: Path) -> Path:
    return journal.with_name(journal.name[: -len(SUFFIX)] + LOCK_SUFFIX)


def _file_lock(path: Path) -> Any:
    from filelock import FileLock

    return FileLock(str(path), timeout=0)


class Journal:
    """This process's journal for one seed folder; created on the first append."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.path = folder / f"{PREFIX}{os.getpid()}-{uuid.uuid4().hex[:8]}{SUFFIX}"
        self.entries: list[dict[str, Any]] = []
        self._handle: Any = None
        self._owner: Any = None
        self._lock = threading.Lock()  # the file: opening, writing, closing
        self._synced = threading.Condition()  # the fsync in progress and how far the file is durable
        self._written = 0  # lines written so far
        self._durable = 0  # lines known to be on disk
        self._syncing = False
        self._reserve: Any = None  # the reserve file's descriptor, once something was reserved
        self._reserved = 0  # bytes it holds

    @property
    def reserve_path(self) -> Path:
        return self.path.with_name(self.path.name[: -len(SUFFIX)] + RESERVE_SUFFIX)

    def _own(self) -> None:
        """Take the journal's lock (call with `_lock` held): before any of its files exists, so none is taken
        for an orphan's."""
        if self._owner is None:
            self.folder.mkdir(parents=True, exist_ok=True)
            owner = _file_lock(_lock_path(self.path))
            owner.acquire()
            self._owner = owner

    def reserve(self, size: int) -> None:
        """Hold `size` more bytes of disk for lines to come; OSError (ENOSPC, ...) when the disk has no room."""
        with self._lock:
            self._own()
            if self._reserve is None:
                self._reserve = os.open(self.reserve_path, os.O_RDWR | os.O_CREAT, 0o600)
            os.posix_fallocate(self._reserve, 0, self._reserved + size)
            self._reserved += size

    def unreserve(self, size: int) -> None:
        """Give `size` reserved bytes back (before writing the line they were held for)."""
        with self._lock:
            self._shrink(max(0, self._reserved - size))

    def _shrink(self, size: int) -> None:
        if self._reserve is None:
            return
        try:
            os.ftruncate(self._reserve, size)
        except OSError:
            pass
        self._reserved = size
        if size == 0:
            os.close(self._reserve)
            self._reserve = None
            self.reserve_path.unlink(missing_ok=True)

    def append(self, entry: dict[str, Any]) -> None:
        """Write one interaction and return once it is on disk; refuses (SecretInCassette) a line holding a
        secret."""
        line = json.dumps(entry, ensure_ascii=False) + "\n"
        refuse_secrets(self.path, line)
        with self._lock:
            if self._handle is None:
                self._own()  # before the journal exists, so nobody takes it for an orphan
                self._handle = open(self.path, "a", encoding="utf-8")
                fsync_folder(self.folder)
            self._handle.write(line)
            self._handle.flush()
            self._written += 1
            mine = self._written
            self.entries.append(entry)
        self._wait_durable(mine)

    def _wait_durable(self, line: int) -> None:
        """Return once line number `line` is on disk, running the group's fsync when none is under way."""
        with self._synced:
            while self._durable < line:
                if self._syncing:
                    self._synced.wait()
                    continue
                self._syncing = True  # from here until it is False again, nobody closes the file
                upto, handle = self._written, self._handle
                self._synced.release()
                try:
                    if handle is not None:
                        os.fsync(handle.fileno())
                finally:
                    self._synced.acquire()
                    self._syncing = False
                    self._synced.notify_all()
                self._durable = max(self._durable, upto)

    def _close(self) -> None:
        """Close the file once no fsync is under way, every written line on disk (call with `_lock` held)."""
        with self._synced:
            while self._syncing:
                self._synced.wait()
            if self._durable < self._written:
                os.fsync(self._handle.fileno())
                self._durable = self._written
            self._handle.close()
            self._handle = None
            self._synced.notify_all()

    def abandon(self) -> None:
        """Close the journal and give up its lock, keeping the file: the next open folds it in."""
        with self._lock:
            self._shrink(0)
            if self._handle is not None:
                self._close()
            if self._owner is not None:
                self._owner.release()
                self._owner = None

    def discard(self) -> None:
        """Close and remove the journal (after its entries were folded into the model files)."""
        with self._lock:
            self._shrink(0)
            if self._handle is not None:
                self._close()
                self.path.unlink(missing_ok=True)
            if self._owner is not None:
                _lock_path(self.path).unlink(missing_ok=True)
                self._owner.release()
                self._owner = None


def read_journal(path: Path) -> list[dict[str, Any]]:
    """The complete interactions in a journal; a torn or malformed line (a call in flight) is skipped."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return parse_journal_lines(text)


def parse_journal_lines(text: str) -> list[dict[str, Any]]:
    """The complete interactions in journal text; a torn or malformed line is skipped."""
    entries = []
    for line in text.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if structure_problem(entry) is None:
            entries.append(entry)
    return entries


def journals(folder: Path) -> list[Path]:
    """Every journal in a seed folder, sorted."""
    return sorted(folder.glob(f"{PREFIX}*{SUFFIX}")) if folder.is_dir() else []


class Orphan:
    """A journal whose writer is gone, claimed (its lock held) until `remove()`."""

    def __init__(self, path: Path, claim: Any) -> None:
        self.path = path
        self._claim = claim
        self.entries = read_journal(path)

    def remove(self) -> None:
        """Delete the folded journal and its lock file."""
        self.path.unlink(missing_ok=True)
        _lock_path(self.path).unlink(missing_ok=True)
        self._claim.release()

    def release(self) -> None:
        """Give the claim up, keeping the journal for a later open."""
        self._claim.release()


def claim_orphans(folder: Path) -> list[Orphan]:
    """Journals no live process holds, each claimed for folding (call with the folder lock held)."""
    from filelock import Timeout

    claimed = []
    for path in journals(folder):
        claim = _file_lock(_lock_path(path))
        try:
            claim.acquire()
        except Timeout:
            continue  # its writer is still recording
        if path.exists():
            claimed.append(Orphan(path, claim))
        else:
            claim.release()
            _lock_path(path).unlink(missing_ok=True)
    return claimed


def clean_reserves(folder: Path) -> None:
    """Remove reserve files whose writer is gone (call with the folder lock held)."""
    from filelock import Timeout

    for path in folder.glob(f"{PREFIX}*{RESERVE_SUFFIX}") if folder.is_dir() else []:
        lock_path = path.with_name(path.name[: -len(RESERVE_SUFFIX)] + LOCK_SUFFIX)
        claim = _file_lock(lock_path)
        try:
            claim.acquire()
        except Timeout:
            continue  # its writer is still recording
        try:
            path.unlink(missing_ok=True)
            if not lock_path.with_name(lock_path.name[: -len(LOCK_SUFFIX)] + SUFFIX).exists():
                lock_path.unlink(missing_ok=True)
        finally:
            claim.release()


def live_or_orphan_entries(folder: Path) -> list[dict[str, Any]]:
    """Every complete interaction in every journal of the folder, without claiming anything (read-only)."""
    return [entry for path in journals(folder) for entry in read_journal(path)]
