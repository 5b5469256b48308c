"""New interactions inserted into a model file in place: a save costs what it adds, not the file.

A model file whose index is current and says the file is exactly as `store.render` writes it
(`sorted` in the index) takes new interactions without being read: each goes where the sort puts
it (a binary search that parses only the items it probes), the bytes between are copied as they
are, the closing count is rewritten, and the index's rows are shifted by what was inserted before
them. Only the new interactions are rendered, scanned for secrets and verified against the SDK
(`sdk_stamp`, when the index's stamp is the installed SDK's). The result is byte for byte the file
and index a whole rewrite would give. Anything else (no index or a stale one, a file in another
order, a re-recorded request that replaces one, an index without the installed SDK's stamp, new
interactions whose last literal block keeps its final breaks, after which YAML may end the file with
`...`) is left to the whole rewrite: `append_entries` then returns None.

Both files are still written whole through `write_atomically` (temporary file, fsync, rename), so a
save killed midway leaves the old file and index or the new ones, never a mix of the two.
"""

from __future__ import annotations

import bisect
import hashlib
import re
from pathlib import Path
from typing import Any

from . import index
from .index import INDEX_FORMAT, Slot, index_path
from .store import (
    _render_sorted,
    _slots_of_rendered,
    _sort_key,
    _split,
    load_item,
    plain_key,
    refuse_secrets,
    write_atomically,
)

_ROW_START = re.compile(rb"\[(\d+), (\d+), (\d+), ")
_RESPONSE = b"\n  response:\n"  # where an item's response starts, in the layout `store.render` writes


class _NotInPlace(Exception):
    """The file cannot take the interactions in place: rewrite it whole."""


class _ItemKeys:
    """The sort keys of a file's items, each parsed when a search probes it."""

    def __init__(self, path: Path, data: bytes, rows: list[tuple[int, int, int]]) -> None:
        self.path, self.data, self.rows = path, data, rows
        self.keys: dict[int, Any] = {}

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, number: int) -> Any:
        if number not in self.keys:
            offset, length, line = self.rows[number]
            item = self.data[offset:offset + length]
            cut = item.find(_RESPONSE)  # the sort reads the request only: its part of the item is parsed alone
            entry = load_item(self.path, item[:cut + 1 if cut > 0 else length].decode("utf-8"), line, number + 1)
            request = entry.get("request") if isinstance(entry, dict) else None
            if not isinstance(request, dict) or not isinstance(request.get("uri"), str) \
                    or not isinstance(request.get("body"), (dict, type(None))):
                raise _NotInPlace
            self.keys[number] = _sort_key({"request": request})
        return self.keys[number]


def append_entries(path: Path, recorded: list[dict[str, Any]]) -> bool | None:
    """Insert `recorded` into the model file at `path` in place (call with the folder lock held):
    True once written, None when the file must be rewritten whole instead."""
    if not recorded:
        return None
    try:
        data = path.read_bytes()
        indexed = index_path(path).read_bytes()
    except OSError:
        return None
    try:
        return _append(path, data, indexed, recorded)
    except (_NotInPlace, UnicodeDecodeError):
        return None


def _rows(data: bytes, indexed: bytes) -> tuple[dict[str, Any], list[tuple[int, int, int]], list[bytes]]:
    """The index's head, each row's (offset, length, line) and the text of each row (without its comma)."""
    first, _, rest = indexed.partition(b"\n")
    head = index.read_head(first)
    if (head is None or head.get("format") != INDEX_FORMAT or head.get("sorted") is not True
            or head.get("sha256") != hashlib.sha256(data).hexdigest()):
        raise _NotInPlace
    texts = rest.split(b"\n")
    if texts[-2:] != [b"]}", b""] or len(texts) - 2 != head.get("count") or len(texts) < 3:
        raise _NotInPlace
    texts = [t[:-1] if t.endswith(b",") else t for t in texts[:-2]]
    rows = []
    for text in texts:
        found = _ROW_START.match(text)
        if found is None:
            raise _NotInPlace
        rows.append((int(found[1]), int(found[2]), int(found[3])))
    return head, rows, texts


def _append(path: Path, data: bytes, indexed: bytes, recorded: list[dict[str, Any]]) -> bool:
    head, rows, row_texts = _rows(data, indexed)
    for key in map(plain_key, recorded):
        if b'"' + key[2].encode() + b'"' in indexed:
            raise _NotInPlace  # recorded again: the old interaction goes, which the whole rewrite does
    count = len(rows)
    end = rows[-1][0] + rows[-1][1]
    if data[end:] != f"count: {count}\n".encode() or any(a[0] + a[1] != b[0] for a, b in zip(rows, rows[1:])):
        raise _NotInPlace

    ordered, text = _render_sorted(recorded)
    split = _split(text)
    if split is None or text.endswith("\n...\n"):
        raise _NotInPlace  # `...`: a literal block keeping its final breaks may end the whole file (its end line)
    items = [text[start:stop].encode("utf-8") for _, start, stop in split[1]]
    for item in items:
        refuse_secrets(path, item.decode("utf-8"))
    existing = _ItemKeys(path, data, rows)
    places, low = [], 0
    for entry in ordered:
        low = bisect.bisect_right(existing, _sort_key(entry), lo=low)  # type: ignore[arg-type]
        places.append(low)

    new_slots = _slots_of_rendered(text, ordered)
    if new_slots is None:
        raise _NotInPlace
    stamp = _stamp(head.get("sdk"), ordered, new_slots)
    last_line = rows[-1][2] + data[rows[-1][0]:end].count(b"\n")  # the line of `count:`

    view = memoryview(data)  # the old bytes are copied to the new file, never into a new string
    pieces: list[Any] = [view[:rows[0][0]]]
    out_rows: list[str | bytes] = []
    shift_bytes = shift_lines = 0
    at = rows[0][0]  # the next byte of `data` to copy
    new = 0
    for number in range(count + 1):
        start = rows[number][0] if number < count else end
        line = rows[number][2] if number < count else last_line
        while new < len(items) and places[new] == number:
            pieces.append(view[at:start])
            at = start
            item, slot = items[new], new_slots[new]
            out_rows.append(index.row_text(Slot(0, line + shift_lines, start + shift_bytes, len(item), slot.key,
                                                slot.model, slot.problem, slot.answer, slot.seal)))
            pieces.append(item)
            shift_bytes += len(item)
            shift_lines += item.count(b"\n")
            new += 1
        if number < count:
            offset, length, row_line = rows[number]
            row = row_texts[number]
            if shift_bytes:
                row = f"[{offset + shift_bytes}, {length}, {row_line + shift_lines}, ".encode() + \
                    row[_ROW_START.match(row).end():]  # type: ignore[union-attr]
            out_rows.append(row)
    pieces.append(view[at:end])
    total = count + len(items)
    pieces.append(f"count: {total}\n".encode())

    new_rows = [row for row in out_rows if isinstance(row, str)]
    for row in new_rows:
        refuse_secrets(index_path(path), row)
    digest = hashlib.sha256()
    for piece in pieces:
        digest.update(piece)
    head_text = index.head_line(path, digest.hexdigest(), total, stamp, True).encode()
    index_text = head_text + b",\n".join(r.encode("utf-8") if isinstance(r, str) else r for r in out_rows) \
        + index.TAIL.encode()
    write_atomically(path, pieces, scanned=True)
    write_atomically(index_path(path), index_text, scanned=True)
    return True


def _stamp(old: Any, ordered: list[dict[str, Any]], slots: list[Slot]) -> str | None:
    """The index's SDK stamp once `ordered` is added, as a whole rewrite would find it: only the new
    requests are verified, under the stamp the index already holds for the others."""
    if not isinstance(old, str) or not old:
        raise _NotInPlace  # the others were not verified under the installed SDK: the rewrite verifies all
    from ..models.fidelity import fingerprint
    from .store import sdk_stamp

    usable = [entry for entry, slot in zip(ordered, slots) if slot.problem is None]
    if not usable:
        stamp = fingerprint(old.partition("==")[0])
    else:
        stamp = sdk_stamp(usable, [slot.key[2] for slot in slots if slot.problem is None])
        if stamp is None:
            return None  # a new request the SDK does not rebuild: the whole file is unverified
    if stamp != old:
        raise _NotInPlace  # another SDK version is installed: every request is verified again
    return stamp
