"""One seed's recordings on disk: open (clean, fold orphans, load), record (journal), close (fold).

Opening for recording takes the folder lock, removes temporary files a killed save left, folds the
journals of killed recorders into the model files, and loads them. Replay-only opening (`none`)
writes nothing: it reads the model files and any journals as they are. Every recorded interaction
goes to this process's journal at once (fsync'd); closing merges the journal into each model file,
read fresh under the lock, so processes that record the same seed never lose each other's calls.
Where two recorded the same request, the later fold wins, as re-recording should.
"""

from __future__ import annotations

import json
import os
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

Convert = Callable[[dict[str, Any]], Any]

from ..models.base import ModelCallError
from ..models.validity import response_problem
from .append import append_entries
from .index import index_path
from .inflight import InFlight, clean_claims
from .journal import Journal, claim_orphans, clean_reserves, journals, live_or_orphan_entries, parse_journal_lines
from .store import (
    CassetteFileError,
    Rejected,
    _raw_entries,
    _render_sorted,
    clean_leftovers,
    decode_body,
    file_name,
    folder_lock,
    merge,
    model_files,
    model_of_plain,
    plain_key,
    request_path,
    scan_file,
    write_atomically,
    write_index,
)
from .store import write_model_file as rewrite_model_file
from .stored import ModelFile, StoredInteraction, open_model_file


@dataclass
class Loaded:
    """A seed folder's usable interactions, the rejected ones, and the files they came from.

    `stored` are read from their files when played (the file had a current index); `entries` were
    read in full (as plain data, or what `convert` made of them).
    """

    stored: list[StoredInteraction] = field(default_factory=list)
    entries: list[Any] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)
    damaged: list[CassetteFileError] = field(default_factory=list)  # tolerated only in record mode `all`
    files: list[ModelFile] = field(default_factory=list)  # held open until `close_files`
    stale_indexes: dict[Path, str] = field(default_factory=dict)  # index path -> the current index text
    sdk: dict[str, str] = field(default_factory=dict)  # model -> SDK fingerprint its current index vouches for

    def interactions(self) -> Iterator[tuple[Any, str, Any]]:
        """(request key, model, interaction) of every usable interaction: the stored ones, then those read in
        full (their `convert` made each a (key, model, value) triple)."""
        for stored in self.stored:
            yield stored.slot.key, stored.slot.model, stored
        yield from self.entries

    def close_files(self) -> None:
        for file in self.files:
            file.close()
        self.files.clear()


def _by_model(entries: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    grouped: dict[str, list[dict[str, Any]]] = {}
    for entry in entries:
        grouped.setdefault(model_of_plain(entry), []).append(entry)
    return grouped


def _usable(entry: dict[str, Any]) -> bool:
    resp = entry["response"]
    return response_problem(request_path(entry["request"]["uri"]), resp["status"]["code"],
                            decode_body(resp["body"])) is None


def load_folder(folder: Path, tolerate_damage: bool = False, convert: Convert | None = None) -> Loaded:
    """Read every model file of a seed folder (no journals); damaged files raise unless tolerated.

    With `convert`, `entries` holds what it makes of each usable entry, made as the file is read.
    """
    loaded = Loaded()
    for path in model_files(folder):
        try:
            entries, rejected = scan_file(path, convert or (lambda entry: entry))
        except CassetteFileError as err:
            if not tolerate_damage:
                raise
            loaded.damaged.append(err)
            continue
        loaded.entries.extend(entries)
        loaded.rejected.extend(rejected)
    return loaded


def open_folder(folder: Path, tolerate_damage: bool = False, convert: Convert | None = None) -> Loaded:
    """`load_folder` for replay: files with a current index are opened, not read (see `stored`)."""
    loaded = Loaded()
    try:
        for path in model_files(folder):
            try:
                opened = open_model_file(path, convert or (lambda entry: entry))
            except CassetteFileError as err:
                if not tolerate_damage:
                    raise
                loaded.damaged.append(err)
                continue
            loaded.files.append(opened.file)
            models = {stored.slot.model for stored in opened.stored}
            if opened.sdk and len(models) == 1:
                loaded.sdk[models.pop()] = opened.sdk
            loaded.stored.extend(opened.stored)
            loaded.entries.extend(opened.entries)
            loaded.rejected.extend(opened.rejected)
            if opened.index_text is not None:
                loaded.stale_indexes[index_path(path)] = opened.index_text
    except BaseException:
        loaded.close_files()
        raise
    return loaded


def write_model_file(path: Path, recorded: list[dict[str, Any]], tolerate_damage: bool = False) -> bool:
    """Save `recorded` into the model file at `path` (call with the folder lock held): inserted in place
    when its index allows it (`append`), else merged and rewritten whole (`store.write_model_file`);
    the same bytes either way. True when the file changed."""
    appended = append_entries(path, recorded)
    return appended if appended is not None else rewrite_model_file(path, recorded, tolerate_damage)


def fold(folder: Path, entries: list[dict[str, Any]], tolerate_damage: bool = False) -> list[Path]:
    """Merge recorded entries into their model files (call with the folder lock held); the files changed."""
    changed = []
    for model, recorded in sorted(_by_model(entries).items()):
        path = folder / file_name(model)
        if write_model_file(path, recorded, tolerate_damage):
            changed.append(path)
    return changed


def prune(folder: Path, keep: set[tuple[str, str, str]], spare: frozenset[str] = frozenset()) -> list[Path]:
    """Remove the interactions whose request is not in `keep` from every model file of the folder but
    those named in `spare` (a file left empty is removed with its index); call with the folder lock held.
    Returns the files changed."""
    changed = []
    for path in model_files(folder):
        if path.name in spare:
            continue
        entries = _raw_entries(path, tolerate_damage=False)
        kept = [entry for entry in entries if _key_or_none(entry) in keep]
        if len(kept) == len(entries):
            continue
        if kept:
            ordered, text = _render_sorted(kept)
            write_atomically(path, text)
            write_index(path, text, ordered)
        else:
            path.unlink()
            index_path(path).unlink(missing_ok=True)
        changed.append(path)
    return changed


def _key_or_none(entry: Any) -> tuple[str, str, str] | None:
    try:
        return plain_key(entry)
    except (KeyError, TypeError, AttributeError, ValueError):
        return None


class SeedStore:
    """The recordings of one seed folder for one recording context."""

    def __init__(self, folder: Path, mode: str) -> None:
        self.folder = folder
        self.mode = mode
        self.journal = Journal(folder)
        self.inflight = InFlight(folder)
        self.write_error: OSError | None = None  # the first failed write: nothing more is sent after it
        self.unwritten: list[dict[str, Any]] = []  # answers received after it, kept in memory until close
        self._read: dict[Path, int] = {}  # other recorders' journals: bytes read so far
        self._memory = threading.Lock()  # the bookkeeping below; never held while writing
        self._known: Counter[tuple[str, str, str]] = Counter()  # request keys this recorder can answer
        self._room: dict[tuple[str, str, str], int] = {}  # journal room reserved per claimed request
        self._files: dict[Path, tuple[int, int, int]] = {}  # model files as last read: (inode, size, mtime)
        self.cleaned: list[Path] = []  # leftover temporary files removed on open
        self.recovered = 0  # interactions folded in from killed recorders' journals
        self.resumed_models: frozenset[str] = frozenset()  # the models of those: their recording never finished
        self.indexed: list[Path] = []  # indexes written on open (they were missing or stale)
        self.loaded: Loaded | None = None  # what `open` gave; its files stay open until `close`

    @property
    def writes(self) -> bool:
        return self.mode != "none"

    def open(self, convert: Convert | None = None) -> Loaded:
        """Load the folder (for recording: clean and fold orphans first, under the lock).

        `convert(entry)` makes the loaded form of each usable entry as it is read (see `load_folder`).
        """
        tolerate = self.mode == "all"
        if not self.writes:
            pending = [e for e in live_or_orphan_entries(self.folder) if _usable(e)]
            if pending:  # rare (a recorder is running or was killed): merge as plain data, then convert
                loaded = load_folder(self.folder)
                loaded.entries = [(convert or (lambda e: e))(e) for e in merge(loaded.entries, pending)]
                return loaded
            return self._keep(open_folder(self.folder, convert=convert))
        ensure_ignored(self.folder.parent)  # from the first recording on
        if not self.folder.is_dir():
            return Loaded()
        with folder_lock(self.folder):
            self.cleaned = clean_leftovers(self.folder)
            clean_claims(self.folder)
            clean_reserves(self.folder)
            orphans = claim_orphans(self.folder)
            recovered = [e for orphan in orphans for e in orphan.entries if _usable(e)]
            try:
                fold(self.folder, recovered, tolerate)
            except BaseException:
                for orphan in orphans:
                    orphan.release()  # kept for the next open
                raise
            for orphan in orphans:
                orphan.remove()
            self.recovered = len(recovered)
            self.resumed_models = frozenset(model_of_plain(e) for e in recovered)

            def counted(entry: dict[str, Any]) -> Any:  # what this recorder can answer, for `answers_from_others`
                self._known[plain_key(entry)] += 1
                return (convert or (lambda e: e))(entry)

            loaded = self._keep(open_folder(self.folder, tolerate, counted))
            self._known.update(stored.slot.key for stored in loaded.stored)
            self._files = _signatures(self.folder)
            for path, text in loaded.stale_indexes.items():
                write_atomically(path, text)
                self.indexed.append(path)
            return loaded

    def _keep(self, loaded: Loaded) -> Loaded:
        self.loaded = loaded
        return loaded

    def reserve(self, key: tuple[str, str, str], body: bytes | str | None) -> None:
        """Hold the disk room the answer to this request can take in the journal, before it is sent (once per
        claim); OSError when the disk has no room: the request must not be sent then (`write_error` is set)."""
        with self._memory:
            if key in self._room:
                return
            if self.write_error is not None:
                raise self.write_error
        size = answer_room(body)
        try:
            self.journal.reserve(size)
        except OSError as err:
            with self._memory:
                self.write_error = self.write_error or err
            raise
        with self._memory:
            self._room[key] = size

    def end_call(self) -> None:
        """A call of this thread ended: give up its claims and the room reserved for them."""
        for key in self.inflight.release():
            self._give_back(key)

    def _give_back(self, key: tuple[str, str, str]) -> int:
        """Release the room reserved for `key`; how many bytes that was."""
        with self._memory:
            size = self._room.pop(key, 0)
        if size:
            self.journal.unreserve(size)
        return size

    def record(self, entry: dict[str, Any], key: tuple[str, str, str] | None = None) -> bool:
        """Make one recorded interaction durable now, in the room reserved for it (`key`: its claim's key);
        False when the write failed (disk full, ...).

        After a failed write the answer is kept in memory (`unwritten`) and folded in at close if
        the disk allows then; `write_error` tells the caller to send nothing more.
        """
        reserved = self._give_back(key) if key is not None else 0
        with self._memory:
            self._known[plain_key(entry)] += 1
            failed = self.write_error is not None and not reserved  # a reserved answer has its room
        if not failed:
            try:
                self.journal.append(entry)
                return True
            except OSError as err:
                with self._memory:
                    self.write_error = self.write_error or err
        with self._memory:
            self.unwritten.append(entry)
        return False

    def answers_from_others(self) -> list[dict[str, Any]]:
        """Interactions other processes recorded since the last look: in their journals, or already folded
        into the model files (a recorder that closes moves its journal there, maybe while this one waited)."""
        with self._memory:
            found = self._from_journals() + self._from_folded_files()
            self._known.update(plain_key(entry) for entry in found)
        return found

    def _from_journals(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        for path in journals(self.folder):
            if path == self.journal.path:
                continue
            start = self._read.get(path, 0)
            try:
                with open(path, "rb") as handle:
                    handle.seek(start)
                    data = handle.read()
            except OSError:
                continue
            complete = data.rfind(b"\n") + 1  # a line still being written is read next time
            self._read[path] = start + complete
            found += [e for e in parse_journal_lines(data[:complete].decode("utf-8", "replace")) if _usable(e)]
        return found

    def _from_folded_files(self) -> list[dict[str, Any]]:
        """Entries of model files changed since they were read that this recorder cannot answer yet."""
        now = _signatures(self.folder)
        changed = [path for path, signature in now.items() if self._files.get(path) != signature]
        self._files = now
        found: list[dict[str, Any]] = []
        pending = Counter(self._known)
        for path in changed:
            try:
                entries, _ = scan_file(path, lambda entry: entry)
            except (OSError, CassetteFileError):
                continue  # replaced again or damaged: the fold that follows reports it
            for entry in entries:
                key = plain_key(entry)
                if pending[key] > 0:
                    pending[key] -= 1
                else:
                    found.append(entry)
        return found

    def close(self, keep: set[tuple[str, str, str]] | None = None, spare: frozenset[str] = frozenset()) -> list[Path]:
        """Fold this process's journal into the model files and remove it; the files changed.

        Answers that could not be journaled are folded in too; if that fails as well, CassetteWriteError
        names every answer lost (the journaled ones stay in the journal for the next run). With `keep`
        (request keys), every stored interaction whose request is not among them is removed too: a
        re-record keeps only what its items used, in every model file but those in `spare` (see `prune`)
        """
        self.inflight.release()
        if self.loaded is not None:
            self.loaded.close_files()  # nothing is replayed any more; the fold may replace the files
        changed = self._fold_journal()
        if self.writes and self.folder.is_dir():
            try:
                with folder_lock(self.folder):
                    if keep is not None:
                        changed += [path for path in prune(self.folder, keep, spare) if path not in changed]
                    clean_claims(self.folder)  # a run that recorded nothing (refused, rate-limited) leaves none either
            except OSError as err:
                raise CassetteSaveError(self.folder, None, err) from err
        return changed

    def _fold_journal(self) -> list[Path]:
        entries = self.journal.entries + self.unwritten
        if not entries:
            self.journal.discard()
            return []
        try:
            with folder_lock(self.folder):
                changed = fold(self.folder, entries, self.mode == "all")
                self.journal.discard()
                clean_claims(self.folder)
        except BaseException as err:
            try:
                self.journal.abandon()  # every journaled recording stays in the journal for the next open
            except OSError:
                pass  # the disk is still full: what reached the journal file is folded by the next open
            if self.unwritten and isinstance(err, OSError):
                raise CassetteWriteError(self.folder, self.unwritten, err) from err
            if isinstance(err, OSError):
                raise CassetteSaveError(self.folder, self.journal.path, err) from err
            raise
        return changed


ROOM_PER_TOKEN = 16  # bytes a reply token can take in a journal line at most (JSON escapes of wide characters)
ROOM_OVERHEAD = 16384  # headers, usage and the line's own fields


def answer_room(body: bytes | str | None) -> int:
    """The journal room a request's interaction can take: the request twice over (as sent and as stored)
    plus its reply at `max_tokens` (or 8192 tokens when it names none)."""
    raw = body.encode("utf-8") if isinstance(body, str) else (body or b"")
    try:
        tokens = int(json.loads(raw).get("max_tokens") or json.loads(raw).get("max_completion_tokens") or 8192)
    except (ValueError, AttributeError, TypeError):
        tokens = 8192
    return 2 * len(raw) + ROOM_PER_TOKEN * max(tokens, 0) + ROOM_OVERHEAD


def _signatures(folder: Path) -> dict[Path, tuple[int, int, int]]:
    """(inode, size, mtime) of each model file: a fold replaces the file, so any of them changes."""
    signatures = {}
    for path in model_files(folder):
        try:
            stat = os.stat(path)
        except OSError:
            continue
        signatures[path] = (stat.st_ino, stat.st_size, stat.st_mtime_ns)
    return signatures


class CassetteWriteError(ModelCallError):
    """Answers were received but could not be written anywhere; the message names each one."""

    def __init__(self, folder: Path, lost: list[dict[str, Any]], err: OSError) -> None:
        self.lost = lost
        names = "; ".join(_describe(entry) for entry in lost[:20]) + (" ..." if len(lost) > 20 else "")
        super().__init__(
            f"recording {folder}: {len(lost)} answer(s) received but not written ({err.strerror or err}): {names}. "
            "They are lost: the next run sends them again. Free disk space and run again with "
            "--record-mode=new_episodes; everything else recorded is kept.")


class CassetteSaveError(ModelCallError):
    """The model files could not be written at close; every answer is safe in the journal."""

    def __init__(self, folder: Path, journal: Path | None, err: OSError) -> None:
        kept = ("the model files are as they were (unused interactions were not pruned, unheld claim files not "
                "removed: the next run does it)" if journal is None else
                f"every answer of this run is in {journal.name}, which the next run that opens the seed folds in "
                f"(or `python -m pytest_skilltransfer index {folder.parent}`)")
        super().__init__(
            f"recording {folder}: its model files could not be written ({err.strerror or err}{_where(err)}). Nothing "
            f"is lost: {kept}; free disk space first. Nothing is sent again for it.")


def _where(err: OSError) -> str:
    return f": {err.filename}" if getattr(err, "filename", None) else ""


def _describe(entry: dict[str, Any]) -> str:
    """`model: first words of the last user message` for naming a lost answer."""
    body = (entry.get("request") or {}).get("body") or {}
    data = body.get("json") if isinstance(body, dict) else None
    text = ""
    for message in reversed((data or {}).get("messages") or []):
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            content = " ".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
        if content:
            text = " ".join(str(content).split())[:60]
            break
    return f"{model_of_plain(entry)}: {text!r}"


_IGNORED = (".lock", ".*.lock", ".journal-*", ".inflight-*", ".*.tmp", "batch-manifest.jsonl.lock")
_MARK = "# written by pytest-skilltransfer: recordings in progress, never committed\n"


def ensure_ignored(cassette_dir: Path) -> None:
    """Write `<cassette dir>/.gitignore` naming the lock, journal, claim and temporary files, when missing,
    so `git add cassettes` never commits a recording in progress."""
    path = cassette_dir / ".gitignore"
    try:
        text = path.read_text(encoding="utf-8") if path.exists() else None
        if text is not None and not text.startswith(_MARK):
            return  # the project's own file: theirs to keep
        missing = [p for p in _IGNORED if p not in (text or "").splitlines()]
        if not missing:
            return
        cassette_dir.mkdir(parents=True, exist_ok=True)
        path.write_text((text or _MARK) + "".join(f"{pattern}\n" for pattern in missing), encoding="utf-8")
    except OSError:
        pass
