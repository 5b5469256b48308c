"""A model file opened for replay: through its index, each interaction is read when it is played.

With a current index (see `index`), opening costs one pass of SHA-256 over the file and one small
JSON read; an interaction's YAML item is parsed only when a request matches it, and nothing of its
bodies stays in memory after. The file stays open until the recording context closes, so a writer
replacing it meanwhile (which writes a new file and renames it) never shifts what the offsets point
at. Without a current index the file is read in full, as it always could be, and the index that
describes it is handed back for the caller to write when it may write.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from . import index
from .index import Slot
from .store import CassetteFileError, Rejected, from_plain, load_part, response_structure_problem, stored_body, load_item, plain_key, scan_text, structure_problem


_CHUNK = 1 << 16
_RESPONSE_KEY = "\n  response:\n"  # where an item's response mapping starts, in the layout recording writes


def _sha256(handle: Any) -> str:
    """SHA-256 of a file read in 64 KiB pieces (one small buffer, whatever the file's size)."""
    digest, buffer = hashlib.sha256(), bytearray(_CHUNK)
    view = memoryview(buffer)
    while True:
        count = handle.readinto(buffer)
        if not count:
            return digest.hexdigest()
        digest.update(view[:count])


class ModelFile:
    """One model file held open: its digest, and the interaction at a slot read on demand."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self._handle = open(path, "rb", buffering=0)  # noqa: SIM115 -- held until `close`; read with pread
        except OSError as err:
            raise CassetteFileError(f"cassette file {path} cannot be read ({err}).") from err
        self.size = os.fstat(self._handle.fileno()).st_size
        self.digest = _sha256(self._handle)

    def text(self) -> str:
        """The whole file as text (bytes as they are: offsets into it are byte offsets once encoded)."""
        self._handle.seek(0)
        try:
            return self._handle.read().decode("utf-8")
        except UnicodeDecodeError as err:
            raise CassetteFileError(f"cassette file {self.path} cannot be read ({err}).") from err

    def entry(self, slot: Slot) -> dict[str, Any]:
        """The plain interaction at `slot`; CassetteFileError when the file no longer holds it there."""
        raw = os.pread(self._handle.fileno(), slot.length, slot.offset)
        try:
            entry = load_item(self.path, raw.decode("utf-8"), slot.line, slot.number)
        except (UnicodeDecodeError, CassetteFileError):
            entry = None
        if structure_problem(entry) is not None or plain_key(entry) != slot.key:  # type: ignore[arg-type]
            raise self._mismatch(slot)
        return entry  # type: ignore[return-value]

    def response(self, slot: Slot) -> dict[str, Any]:
        """The plain response at `slot`, for a replay that needs nothing else of it.

        When the item's bytes carry the row's seal (see `index.seal`), only the
        item's `response:` part is parsed: the request part, most of the item, is skipped. Otherwise
        (the file changed, a wrong row, an item not in the layout recording writes) `entry` reads and
        checks the whole item, and names what is wrong."""
        raw = os.pread(self._handle.fileno(), slot.length, slot.offset)
        if index.seal(slot.key, raw, slot.answer) == slot.seal:
            try:
                text = raw.decode("utf-8")
                at = text.find(_RESPONSE_KEY)
                part = (load_part(self.path, text[at + 3:], slot.line + text.count("\n", 0, at + 1), slot.number)
                        if text.startswith("- request:\n") and at > 0 else None)
            except (UnicodeDecodeError, CassetteFileError):
                part = None
            response = part.get("response") if isinstance(part, dict) and len(part) == 1 else None
            if isinstance(response, dict) and response_structure_problem(response) is None:
                return response
        return self.entry(slot)["response"]

    def answer(self, slot: Slot) -> tuple[int, Any]:
        """The recorded (status, body) at `slot`, for a replay that needs nothing else of it: from the
        index's answer text when the item's bytes carry the row's seal (nothing of the YAML is parsed),
        else from the item's response (`response`)."""
        if slot.answer is not None:
            raw = os.pread(self._handle.fileno(), slot.length, slot.offset)
            if index.seal(slot.key, raw, slot.answer) == slot.seal:
                status, body = json.loads(slot.answer)
                return status, body
        response = self.response(slot)
        return response["status"]["code"], stored_body(response["body"])

    def _mismatch(self, slot: Slot) -> CassetteFileError:
        """Why the interaction at `slot` is not what the index says: the file changed, or the index is wrong."""
        self._handle.seek(0)
        if _sha256(self._handle) == self.digest:
            return CassetteFileError(
                f"cassette file {self.path}: its index {index.index_path(self.path).name} does not match the file "
                f"(row {slot.number} points at another interaction). Rebuild it with "
                f"`python -m pytest_skilltransfer index {self.path.parent}`, or delete the index.")
        return CassetteFileError(
            f"cassette file {self.path}, interaction {slot.number} (line {slot.line}), changed while this run "
            "was replaying it (edited in place). Run again; keep cassette files unchanged during a run.")

    def close(self) -> None:
        self._handle.close()


class StoredInteraction:
    """A recorded (request, response) pair that is read from its file each time it is used."""

    __slots__ = ("file", "slot")

    def __init__(self, file: ModelFile, slot: Slot) -> None:
        self.file = file
        self.slot = slot

    def pair(self) -> tuple[Any, dict[str, Any]]:
        return from_plain(self.file.entry(self.slot))

    def answer(self) -> tuple[int, Any]:
        """The recorded response's status and body (its JSON as parsed, else bytes), read without vcrpy
        (a replay without the SDK)."""
        return self.file.answer(self.slot)

    def __iter__(self) -> Any:
        return iter(self.pair())

    def __getitem__(self, position: int) -> Any:
        return self.pair()[position]

    def __len__(self) -> int:
        return 2


@dataclass
class Opened:
    """A model file opened for replay: lazily read interactions (with an index) or read ones (without)."""

    file: ModelFile
    stored: list[StoredInteraction] = field(default_factory=list)
    entries: list[Any] = field(default_factory=list)  # what `convert` made of each usable entry (no index)
    rejected: list[Rejected] = field(default_factory=list)
    index_text: str | None = None  # the index to write beside the file (it was missing or stale)
    sdk: str | None = None  # the SDK fingerprint its current index vouches for (`models.fidelity`)


def open_model_file(path: Path, convert: Callable[[dict[str, Any]], Any]) -> Opened:
    """Open a model file through its index when the index is current, else read it in full."""
    file = ModelFile(path)
    try:
        current = index.read(path, file.digest, file.size)
        if current is not None:
            slots = current.slots
            return Opened(file, stored=[StoredInteraction(file, s) for s in slots if s.problem is None],
                          rejected=[Rejected(path, s.number, s.key, s.problem) for s in slots if s.problem],
                          sdk=current.sdk)
        scan = scan_text(path, file.text(), convert)
        text = index.render(path, file.digest, scan.slots) if scan.slots is not None else None
        return Opened(file, entries=scan.kept, rejected=scan.rejected, index_text=text)
    except BaseException:
        file.close()
        raise
