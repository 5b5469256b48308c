"""The index beside each model file, so replaying opens a cassette without parsing it.

    cassettes/<seed>/<model>.yaml          the readable recordings, the source of truth
    cassettes/<seed>/<model>.yaml.index    its index: generated, committed with it

The index is JSON: the SHA-256 of the exact file text it describes, then one row per interaction
(byte offset and length in the file, first line, request key, model, why the interaction is
unusable or null, the recorded answer as compact JSON `[status, body]` when its body is JSON, else
null, and a seal: a digest of the request key with the item's bytes and that answer text, so a
replay that reads the answer from the index, or only the response part of the item, still knows it
is the item of that key and its answer). `sdk`, when present, is the fingerprint of the SDK versions verified to rebuild
every request of the file exactly (`models.fidelity`): under it a replay may skip the SDK. `sorted`,
when true, says the file is exactly as `store.render` writes its interactions (their order, the
layout), so a save may insert new interactions in place instead of rewriting the file (`append`).
It is built by reading the whole file with every check (the closing count, the fields, the validity of each response), so an index that names the file's current digest stands for
those checks. An index for other text (a hand edit, a merge, a re-recording without it), in another
format, or unreadable is ignored and the file is read in full instead: the index can make an open
faster, never change what it finds.
"""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

INDEX_FORMAT = 3  # bump when keys, validity or the row layout change: older indexes are then ignored
# 2 added each row's seal, 3 its answer
SUFFIX = ".index"

Key = tuple[str, str, str]


@dataclass(frozen=True, slots=True)
class Slot:
    """Where one interaction is in its model file, and what it matches."""

    number: int  # 1-based position in the file
    line: int  # its first line
    offset: int  # byte offset of its YAML item
    length: int  # byte length of its YAML item
    key: Key  # (METHOD, path, canonical body digest)
    model: str
    problem: str | None  # why it is not a usable recording, or None
    answer: str | None  # `answer_text` of its response, or None
    seal: str  # `seal(key, item bytes, answer)`


def answer_text(response: dict[str, Any]) -> str | None:
    """A stored response as compact JSON `[status, body]` when its body is stored as JSON, else None."""
    body = response.get("body")
    if not isinstance(body, dict) or "json" not in body:
        return None
    return json.dumps([response["status"]["code"], body["json"]], ensure_ascii=False, separators=(",", ":"))


def seal(key: Key, item: bytes, answer: str | None) -> str:
    """A digest binding a request key to the bytes of the YAML item recorded for it and its answer text."""
    return hashlib.sha256("\n".join(key).encode("utf-8") + b"\n" + (answer or "").encode("utf-8") + b"\n"
                          + item).hexdigest()[:32]


def index_path(model_file: Path) -> Path:
    """The index beside a model file."""
    return model_file.with_name(model_file.name + SUFFIX)


def render(model_file: Path, digest: str, slots: list[Slot], sdk: str | None = None, in_order: bool = False) -> str:
    """The index text for `slots` of the file whose text has SHA-256 `digest` (one row per line);
    `sdk`: the verified SDK fingerprint of its requests; `in_order`: the file is exactly as
    `store.render` writes its interactions (see the module docstring)."""
    return head_line(model_file, digest, len(slots), sdk, in_order) + ",\n".join(map(row_text, slots)) + TAIL


TAIL = "\n]}\n"
_ROWS = ', "rows": [\n'


def head_line(model_file: Path, digest: str, count: int, sdk: str | None, in_order: bool) -> str:
    """The index's first line, up to and including its rows' opening bracket and line break."""
    head_fields: dict[str, Any] = {"format": INDEX_FORMAT, "file": model_file.name, "sha256": digest, "count": count}
    if sdk:
        head_fields["sdk"] = sdk
    if in_order:
        head_fields["sorted"] = True
    return json.dumps(head_fields)[:-1] + _ROWS


def read_head(line: bytes) -> dict[str, Any] | None:
    """The fields of an index's first line (as `head_line` writes it), or None."""
    if not line.endswith(_ROWS.rstrip("\n").encode()):
        return None
    try:
        data = json.loads(line[: -len(_ROWS) + 1] + b"}")
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def row_text(slot: Slot) -> str:
    """One row of the index, as one line of JSON."""
    return json.dumps([slot.offset, slot.length, slot.line, *slot.key, slot.model, slot.problem, slot.answer, slot.seal],
                      ensure_ascii=False)


def _slots(data: Any, digest: str, size: int) -> list[Slot] | None:
    if not isinstance(data, dict) or data.get("format") != INDEX_FORMAT or data.get("sha256") != digest:
        return None
    rows = data.get("rows")
    if not isinstance(rows, list) or data.get("count") != len(rows):
        return None
    slots, shared = [], {}
    for number, row in enumerate(rows, start=1):
        if not (isinstance(row, list) and len(row) == 10 and all(isinstance(v, int) for v in row[:3])
                and all(isinstance(v, str) for v in row[3:7]) and all(isinstance(v, (str, type(None))) for v in row[7:9])
                and isinstance(row[9], str)):
            return None
        offset, length, line, method, path, body, model, problem, answer, sealed = row
        if offset < 0 or length <= 0 or offset + length > size:
            return None
        method, path, model = (shared.setdefault(v, sys.intern(v)) for v in (method, path, model))
        slots.append(Slot(number, line, offset, length, (method, path, body), model, problem, answer, sealed))
    return slots


@dataclass(frozen=True, slots=True)
class Index:
    """A current index: its rows, and the SDK fingerprint its requests were verified under (or None)."""

    slots: list[Slot]
    sdk: str | None


def read(model_file: Path, digest: str, size: int) -> Index | None:
    """The index beside `model_file` for text with SHA-256 `digest` and `size` bytes, or None when
    there is no index or it describes other text (then read the file in full)."""
    try:
        data = json.loads(index_path(model_file).read_bytes())
    except (OSError, ValueError):
        return None
    slots = _slots(data, digest, size)
    if slots is None:
        return None
    sdk = data.get("sdk")
    return Index(slots, sdk if isinstance(sdk, str) and sdk else None)
