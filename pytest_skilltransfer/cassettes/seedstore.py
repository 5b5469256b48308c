"""One seed's recordings on disk: open (clean, fold orphans, load), record (journal), close (fold).

Opening for recording takes the folder lock, removes temporary files a killed save left, folds the
journals of killed recorders into the model files, and loads them. Replay-only opening (`none`)
writes nothing: it reads the model files and any journals as they are. Every recorded interaction
goes to this process's journal at once (fsync'd); closing merges the journal into each model file,
read fresh under the lock, so processes that record the same seed never lose each other's calls.
Where two recorded the same request, the later fold wins, as re-recording should.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

Convert = Callable[[dict[str, Any]], Any]

from .index import index_path
from .journal import Journal, claim_orphans, live_or_orphan_entries
from .stored import ModelFile, StoredInteraction, open_model_file
from .store import (
    CassetteFileError,
    Rejected,
    _raw_entries,
    clean_leftovers,
    decode_body,
    file_name,
    folder_lock,
    merge,
    model_files,
    model_of_plain,
    plain_key,
    render,
    request_path,
    scan_file,
    write_atomically,
    write_index,
    write_model_file,
)
from ..models.validity import response_problem


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
            loaded.stored.extend(opened.stored)
            loaded.entries.extend(opened.entries)
            loaded.rejected.extend(opened.rejected)
            if opened.index_text is not None:
                loaded.stale_indexes[index_path(path)] = opened.index_text
    except BaseException:
        loaded.close_files()
        raise
    return loaded


def fold(folder: Path, entries: list[dict[str, Any]], tolerate_damage: bool = False) -> list[Path]:
    """Merge recorded entries into their model files (call with the folder lock held); the files changed."""
    changed = []
    for model, recorded in sorted(_by_model(entries).items()):
        path = folder / file_name(model)
        if write_model_file(path, recorded, tolerate_damage):
            changed.append(path)
    return changed


def prune(folder: Path, keep: set[tuple[str, str, str]]) -> list[Path]:
    """Remove the interactions whose request is not in `keep` from every model file of the folder (a
    file left empty is removed with its index); call with the folder lock held. Returns the files changed."""
    changed = []
    for path in model_files(folder):
        entries = _raw_entries(path, tolerate_damage=False)
        kept = [entry for entry in entries if _key_or_none(entry) in keep]
        if len(kept) == len(entries):
            continue
        if kept:
            text = render(kept)
            write_atomically(path, text)
            write_index(path, text)
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
        self.cleaned: list[Path] = []  # leftover temporary files removed on open
        self.recovered = 0  # interactions folded in from killed recorders' journals
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
        if not self.folder.is_dir():
            return Loaded()
        with folder_lock(self.folder):
            self.cleaned = clean_leftovers(self.folder)
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
            loaded = self._keep(open_folder(self.folder, tolerate, convert))
            for path, text in loaded.stale_indexes.items():
                write_atomically(path, text)
                self.indexed.append(path)
            return loaded

    def _keep(self, loaded: Loaded) -> Loaded:
        self.loaded = loaded
        return loaded

    def record(self, entry: dict[str, Any]) -> None:
        """Make one recorded interaction durable now."""
        self.journal.append(entry)

    def close(self, keep: set[tuple[str, str, str]] | None = None) -> list[Path]:
        """Fold this process's journal into the model files and remove it; the files changed.

        With `keep` (request keys), every stored interaction whose request is not among them is removed
        too: a re-record of every item of the seed keeps only what those items used (see `prune`)."""
        if self.loaded is not None:
            self.loaded.close_files()  # nothing is replayed any more; the fold may replace the files
        changed = self._fold_journal()
        if keep is not None and self.writes and self.folder.is_dir():
            with folder_lock(self.folder):
                changed += [path for path in prune(self.folder, keep) if path not in changed]
        return changed

    def _fold_journal(self) -> list[Path]:
        if not self.journal.entries:
            self.journal.discard()
            return []
        try:
            with folder_lock(self.folder):
                changed = fold(self.folder, self.journal.entries, self.mode == "all")
                self.journal.discard()
        except BaseException:
            self.journal.abandon()  # every recording stays in the journal for the next open
            raise
        return changed
