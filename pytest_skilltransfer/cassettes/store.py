"""Cassette files on disk: one folder per seed, one readable YAML file per model.

    cassettes/<seed>/<model>.yaml          the readable, reviewed recordings (committed)
    cassettes/<seed>/.lock                 the folder lock (filelock): folding and cleaning hold it
    cassettes/<seed>/.journal-<id>.jsonl   a recording process's append-only journal (see `journal`)

A model file is `version`, the `interactions` list, and a closing `count` line: a file cut short
(a crash while copying it, a bad merge) lacks that line or holds fewer interactions than it says,
and reading it is an error naming the file, the interaction and its line, never a silent short
answer. Each interaction is checked for its fields, and its response for being a complete,
successful provider answer (`validity`); one that is not is set aside as `Rejected` (it counts as a
miss, and recording again replaces it).

JSON bodies are stored parsed, under `json:`, with multi-line strings as YAML literal blocks, so a
reviewer reads the skill text and the model's answer as text. They are re-encoded on load; matching
compares canonical JSON, so the exact bytes never matter. Every write goes through
`write_atomically`, which refuses text that still holds a secret.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Generic, TypeVar

import yaml

from ..guards.redaction import find_secrets
from ..guards.whole_file import TEMP_SUFFIX, replace_whole
from ..models.base import ModelCallError
from ..models.validity import response_problem
from ..models.wire import model_of_request
from .index import SUFFIX as INDEX_SUFFIX
from .index import Slot, index_path
from .index import render as render_index
from .index import answer_text, seal
from ..models.fidelity import body_digest as json_digest
from .match import body_bytes, body_digest, parse_json, readable_yaml
from .yaml_items import render_items

FORMAT_VERSION = 2  # 2 added the closing `count`; version 1 files (without it) are still read
LOCK_NAME = ".lock"
LOCK_TIMEOUT_S = 300.0
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_ITEM_LINE = re.compile(r"^- ", re.M)
T = TypeVar("T")

try:  # libyaml when available: loading thousands of interactions stays fast
    from yaml import CSafeLoader as _Loader
except ImportError:  # pragma: no cover
    from yaml import SafeLoader as _Loader  # type: ignore[assignment]


class CassetteFileError(ModelCallError):
    """A cassette file exists but cannot be used; it is never silently overwritten (except by `all`)."""


class SecretInCassette(ModelCallError):
    """A write was refused because the text still held a secret."""


@dataclass(frozen=True)
class Rejected:
    """A stored interaction that is not a usable recording: where it is, its request key, and why."""

    file: Path
    number: int  # 1-based position in the file
    key: tuple[str, str, str]
    reason: str


@dataclass(frozen=True)
class FileContents:
    """What one model file holds: usable interactions (plain data) and the rejected ones."""

    entries: list[dict[str, Any]]
    rejected: list[Rejected]


def file_name(model: str) -> str:
    """The file a model's interactions live in (unsafe characters become '-')."""
    return f"{_UNSAFE.sub('-', model).strip('-.') or 'unknown-model'}.yaml"


def model_files(folder: Path) -> list[Path]:
    """The model files of a seed folder, sorted (hidden files are not model files)."""
    return sorted(p for p in folder.glob("*.yaml") if not p.name.startswith(".")) if folder.is_dir() else []


def encode_body(body: Any) -> dict[str, Any]:
    """A body as stored: parsed JSON under `json`, else text under `string`, else `base64`."""
    data = parse_json(body)
    if data is not None:
        return {"json": data}
    raw = body_bytes(body)
    try:
        return {"string": raw.decode("utf-8")}
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(raw).decode("ascii")}


def decode_body(stored: Any) -> bytes:
    """A stored body back to bytes."""
    if not isinstance(stored, dict):
        return body_bytes(stored)
    if "json" in stored:
        return json.dumps(stored["json"], ensure_ascii=False).encode("utf-8")
    if "base64" in stored:
        return base64.b64decode(stored["base64"])
    return body_bytes(stored.get("string"))


def stored_body(stored: Any) -> Any:
    """A stored response body as its parsed JSON when stored as JSON (nothing encoded again), else bytes."""
    if isinstance(stored, dict) and "json" in stored:
        return stored["json"]
    return decode_body(stored)


def to_plain(request: Any, response: dict[str, Any]) -> dict[str, Any]:
    """One vcrpy interaction as plain data for YAML and the journal."""
    headers = {name: (v if isinstance(v, list) else [v]) for name, v in request.headers.items()}
    return {
        "request": {
            "method": request.method,
            "uri": request.uri,
            "headers": dict(sorted(headers.items())),
            "body": encode_body(request.body),
        },
        "response": {
            "status": dict(response["status"]),
            "headers": dict(sorted((response.get("headers") or {}).items())),
            "body": encode_body(response["body"].get("string")),
        },
    }


def from_plain(entry: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """Back to vcrpy's (Request, response dict)."""
    from vcr.request import Request

    req, resp = entry["request"], entry["response"]
    request = Request(req["method"], req["uri"], decode_body(req.get("body")), req.get("headers") or {})
    response = {
        "status": dict(resp["status"]),
        "headers": dict(resp.get("headers") or {}),
        "body": {"string": decode_body(resp.get("body"))},
    }
    return request, response


def request_path(uri: str) -> str:
    """The path of a recorded URI, without scheme, host and query."""
    return "/" + uri.split("://", 1)[-1].partition("/")[2].split("?")[0]


def plain_key(entry: dict[str, Any]) -> tuple[str, str, str]:
    """What matching compares, for a plain entry: (METHOD, path, canonical body digest)."""
    req = entry["request"]
    body = req.get("body")
    digest = json_digest(body["json"]) if isinstance(body, dict) and "json" in body else body_digest(decode_body(body))
    return req["method"].upper(), request_path(req["uri"]), digest


def model_of_plain(entry: dict[str, Any]) -> str:
    """The model a plain entry's request is for, by its wire's rule (`models.wire.model_of_request`), or
    "unknown-model"."""
    body = entry["request"].get("body")
    return model_of_request(request_path(entry["request"]["uri"]), body.get("json") if isinstance(body, dict) else None)


def _sort_key(entry: dict[str, Any]) -> tuple[Any, ...]:
    """Stable order for a file: by path, sample, conversation length, then body."""
    req = entry["request"]
    body = req["body"].get("json") if isinstance(req.get("body"), dict) else None
    body = body if isinstance(body, dict) else {}
    sample = str((body.get("metadata") or {}).get("user_id", body.get("seed", "")))
    turns = len(body.get("messages") or [])
    return (req["uri"].split("?")[0].rsplit("/", 1)[-1], sample, turns, json.dumps(body, sort_keys=True))


def render(entries: list[dict[str, Any]]) -> str:
    """A model file's text: sorted interactions and the closing count."""
    return _render_sorted(entries)[1]


def _render_sorted(entries: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str]:
    """The interactions in file order, and the file's text."""
    ordered = sorted(entries, key=_sort_key)
    return ordered, file_text(ordered)


def file_text(ordered: list[dict[str, Any]]) -> str:
    """A model file's text for interactions in file order: `readable_yaml` of the version, the
    interactions and their count, the interactions written directly where they can be (`yaml_items`)."""
    return _file_text(ordered)[0]


def _file_text(ordered: list[dict[str, Any]]) -> tuple[str, list[tuple[int, int, int]] | None]:
    """`file_text`, and each interaction's (first line, start, stop) in it when written directly (as
    `_split` finds them), else None."""
    rendered = render_items(ordered) if ordered else None
    if rendered is None:  # no interactions, or data PyYAML must write whole
        return readable_yaml({"version": FORMAT_VERSION, "interactions": ordered, "count": len(ordered)}), None
    items, ends_open = rendered
    head = f"version: {FORMAT_VERSION}\ninteractions:\n"
    spans, line, start = [], 3, len(head)
    for item in items:
        spans.append((line, start, start + len(item)))
        line, start = line + item.count("\n"), start + len(item)
    return head + "".join(items) + f"count: {len(ordered)}\n" + ("...\n" if ends_open else ""), spans


def answer_problem(entry: dict[str, Any]) -> str | None:
    """Why a plain interaction's response is not a usable recording, or None (`validity.response_problem`);
    a body stored as a JSON object or list is checked as parsed, not encoded and read again."""
    resp = entry["response"]
    body = resp["body"]
    parsed = body.get("json") if isinstance(body, dict) else None
    return response_problem(request_path(entry["request"]["uri"]), resp["status"]["code"],
                            parsed if isinstance(parsed, (dict, list)) else decode_body(body))


def _body_ok(body: Any) -> bool:
    return isinstance(body, dict) and any(k in body for k in ("json", "string", "base64")) or body is None


def structure_problem(entry: Any) -> str | None:
    """What is missing or malformed in a plain interaction, or None when its fields are all there."""
    if not isinstance(entry, dict):
        return "is not a mapping with `request` and `response`"
    req, resp = entry.get("request"), entry.get("response")
    if not isinstance(req, dict):
        return "has no `request` mapping"
    if not isinstance(resp, dict):
        return "has no `response` mapping"
    if not isinstance(req.get("method"), str) or not isinstance(req.get("uri"), str):
        return "has no request `method` and `uri`"
    if not _body_ok(req.get("body")):
        return "has a request `body` without `json`, `string` or `base64`"
    if not isinstance(req.get("headers") or {}, dict):
        return "has malformed `headers`"
    return response_structure_problem(resp)


def response_structure_problem(resp: dict[str, Any]) -> str | None:
    """What is missing or malformed in a plain interaction's `response` mapping, or None."""
    status = resp.get("status")
    if not isinstance(status, dict) or not isinstance(status.get("code"), int) or isinstance(status.get("code"), bool):
        return "has no response `status.code`"
    if not _body_ok(resp.get("body")) or resp.get("body") is None:
        return "has no response `body`"
    if not isinstance(resp.get("headers") or {}, dict):
        return "has malformed `headers`"
    return None


def _item_lines(text: str) -> list[int]:
    """The 1-based line of each top-level `- ` list item (the interactions, in a file we wrote), in one pass."""
    lines, line, last = [], 1, 0
    for match in _ITEM_LINE.finditer(text):
        line += text.count("\n", last, match.start())
        last = match.start()
        lines.append(line)
    return lines


def _fix() -> str:
    return ("Restore it from version control, or re-record it with `pytest --record-mode=all -k <seed>` "
            "(the provider's key must be set).")


def _split(text: str) -> tuple[str, list[tuple[int, int, int]]] | None:
    """A file in the layout `render` writes, cut into its frame (version, count) and the span of each
    interaction's YAML item: (first line, start, stop) in characters; None for any other layout
    (read as a whole instead)."""
    head = re.search(r"^interactions:[ \t]*\n", text, re.M)
    if head is None:
        return None
    tail = re.compile(r"^(?!- )\S", re.M).search(text, head.end())
    end = tail.start() if tail else len(text)
    if end > head.end() and not text.startswith("- ", head.end()):
        return None
    spans, line = [], text.count("\n", 0, head.end()) + 1
    starts = [m.start() for m in _ITEM_LINE.finditer(text, head.end(), end)] + [end]
    for start, stop in zip(starts, starts[1:]):
        spans.append((line, start, stop))
        line += text.count("\n", start, stop)
    return text[:head.start()] + "interactions: []\n" + text[end:], spans


_CONFLICT_MARKER = re.compile(r"^(?:<{7}|>{7}|\|{7})(?: .*)?$|^={7}$", re.M)


def conflict_markers(path: Path, text: str) -> None:
    """CassetteFileError when `text` holds merge-conflict markers (`<<<<<<<`, `=======`, `>>>>>>>`), naming the first."""
    marker = _CONFLICT_MARKER.search(text)
    if marker is None:
        return
    line = text.count("\n", 0, marker.start()) + 1
    raise CassetteFileError(
        f"cassette file {path} holds merge-conflict markers, the first at line {line} ({marker.group(0)[:40]}): "
        "resolve the conflict (keep one side's file whole: `git checkout --theirs` or `--ours` on it), or re-record "
        "it with `pytest --record-mode=all -k <seed>`; two recordings are never merged by hand.")


def _yaml_error(path: Path, err: yaml.YAMLError, first_line: int = 1, number: int | None = None,
                item_lines: list[int] | None = None) -> CassetteFileError:
    """A YAML error as the file's own line and column, and the interaction it is in."""
    mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
    problem = " ".join(str(getattr(err, "problem", None) or err).split())
    line = first_line + mark.line if mark is not None else None
    if number is None and line is not None and item_lines:
        number = sum(1 for start in item_lines if start <= line) or None
    where = f", interaction {number}" if number else ""
    at = f" at line {line}, column {mark.column + 1}" if mark is not None and line is not None else ""
    return CassetteFileError(f"cassette file {path}{where} cannot be read: YAML error{at}: {problem}. {_fix()}")


def _load_yaml(path: Path, text: str, first_line: int = 1, number: int | None = None) -> Any:
    try:
        return yaml.load(text, Loader=_Loader)
    except yaml.YAMLError as err:
        raise _yaml_error(path, err, first_line, number, _item_lines(text) if number is None else None) from err


def load_part(path: Path, text: str, first_line: int, number: int) -> Any:
    """What a piece of a model file's YAML holds (it starts at line `first_line` of interaction `number`)."""
    return _load_yaml(path, text, first_line, number)


def load_item(path: Path, text: str, first_line: int = 1, number: int | None = None) -> Any:
    """The interaction one YAML list item holds (None when it holds something else); a YAML error
    names the file's line (the item starts at `first_line`) and the interaction `number`."""
    parsed = _load_yaml(path, text, first_line, number)
    return parsed[0] if isinstance(parsed, list) and len(parsed) == 1 else None


def read_text(path: Path) -> str:
    """A model file's text; CassetteFileError when it cannot be read."""
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise CassetteFileError(f"cassette file {path} cannot be read ({err}). {_fix()}") from err


@dataclass(frozen=True)
class Scan(Generic[T]):
    """One model file read in full: what `keep` made of each usable interaction, the rejected ones,
    and where every interaction is (None for a file not in the layout `render` writes)."""

    kept: list[T]
    rejected: list[Rejected]
    slots: list[Slot] | None


def scan_text(path: Path, text: str, keep: Callable[[dict[str, Any]], T]) -> Scan[T]:
    """Read a model file's text interaction by interaction, passing each usable one through `keep` at
    once (so a large file is never held as one parsed tree); CassetteFileError when it is damaged."""
    conflict_markers(path, text)
    split = _split(text)
    frame = _load_yaml(path, split[0] if split else text)
    if frame is None:
        return Scan([], [], [] if split else None)
    if not isinstance(frame, dict) or not isinstance(frame.get("interactions"), list):
        raise CassetteFileError(f"cassette file {path} has no `interactions` list. {_fix()}")
    if split is None:
        lines = _item_lines(text)
        items: list[tuple[int, Any]] = [(lines[i] if i < len(lines) else 0, entry)
                                        for i, entry in enumerate(frame["interactions"])]
    else:
        items = [(line, (start, stop)) for line, start, stop in split[1]]
    total = len(items)

    def where(number: int) -> str:
        line = items[number - 1][0] if 0 < number <= len(items) else 0
        return f"interaction {number}" + (f" (line {line})" if line else "")

    if frame.get("version", 1) >= 2:
        count = frame.get("count")
        if not isinstance(count, int):
            raise CassetteFileError(
                f"cassette file {path} is truncated: it ends without its closing `count:` line, after "
                f"{total} interaction(s); the last, {where(total)}, may be cut short. {_fix()}"
            )
        if count != total:
            raise CassetteFileError(f"cassette file {path} says it holds {count} interactions but holds {total}. {_fix()}")
    kept: list[T] = []
    rejected: list[Rejected] = []
    slots: list[Slot] = []
    offset, position = 0, 0  # bytes and characters read so far (items are in file order)
    for number, (line, item) in enumerate(items, start=1):
        if split is not None:
            start, stop = item
            offset += len(text[position:start].encode("utf-8"))
            item = text[start:stop].encode("utf-8")
            length = len(item)
            entry = load_item(path, text[start:stop], line, number)
        else:
            entry = item
        problem = structure_problem(entry)
        if problem is not None:
            raise CassetteFileError(f"cassette file {path}, {where(number)}, {problem}. {_fix()}")
        resp = entry["response"]
        why = answer_problem(entry)
        key = plain_key(entry)
        if split is not None:
            answer = answer_text(resp)
            slots.append(Slot(number, line, offset, length, key, model_of_plain(entry), why, answer,
                              seal(key, item, answer)))
            offset, position = offset + length, stop
        if why is not None:
            rejected.append(Rejected(path, number, key, why))
        else:
            kept.append(keep(entry))
    return Scan(kept, rejected, slots if split is not None else None)


def scan_file(path: Path, keep: Callable[[dict[str, Any]], T]) -> tuple[list[T], list[Rejected]]:
    """`scan_text` of the file at `path`: its usable interactions through `keep`, and the rejected ones."""
    scan = scan_text(path, read_text(path), keep)
    return scan.kept, scan.rejected


def read_file(path: Path) -> FileContents:
    """The usable and rejected interactions of one model file; CassetteFileError when it is damaged."""
    entries, rejected = scan_file(path, lambda entry: entry)
    return FileContents(entries, rejected)


def refuse_secrets(path: Path, text: str) -> None:
    """Raise SecretInCassette when `text` (about to be written to `path`) holds a secret."""
    findings = find_secrets(text)
    if findings:
        listed = ", ".join(f"line {line}: {what}" for line, what in findings[:5])
        raise SecretInCassette(
            f"refusing to write {path}: it would hold a secret ({listed}). Nothing was written; "
            "report this, since recorded bodies are redacted before they are saved."
        )


def write_atomically(path: Path, text: str | bytes | list[Any], scanned: bool = False) -> None:
    """Write `text` (str, its UTF-8 bytes, or a list of byte buffers in order) to `path` whole
    (`guards.whole_file`: temporary file, fsync, `os.replace`; never a half-written file).

    The secret scan runs first, unless the caller `scanned` every part of `text` that is not already
    in the file; a temporary file left by a kill is removed by `clean_leftovers`.
    """
    if not scanned:
        refuse_secrets(path, text if isinstance(text, str) else b"".join(text).decode("utf-8"))
    replace_whole(path, [text.encode("utf-8")] if isinstance(text, str) else [text] if isinstance(text, bytes)
                  else text)


def folder_lock(folder: Path, timeout: float = LOCK_TIMEOUT_S) -> Any:
    """The lock beside a seed's cassettes, shared by every process and xdist worker that opens it."""
    from filelock import FileLock

    folder.mkdir(parents=True, exist_ok=True)
    return FileLock(str(folder / LOCK_NAME), timeout=timeout)


def clean_leftovers(folder: Path) -> list[Path]:
    """Remove temporary files a killed save left behind, and indexes whose model file is gone (call
    with the folder lock held)."""
    if not folder.is_dir():
        return []
    removed = []
    orphan_indexes = [p for p in folder.glob(f"*.yaml{INDEX_SUFFIX}") if not p.with_suffix("").exists()]
    for tmp in [*folder.glob(f".*{TEMP_SUFFIX}"), *orphan_indexes]:
        try:
            tmp.unlink()
            removed.append(tmp)
        except OSError:
            pass
    return removed


def merge(current: list[dict[str, Any]], recorded: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`current` with every entry whose request was recorded again replaced by the new recordings."""
    if not current:
        return list(recorded)
    keys = {plain_key(entry) for entry in recorded}
    return [entry for entry in current if plain_key(entry) not in keys] + recorded


def _raw_entries(path: Path, tolerate_damage: bool) -> list[dict[str, Any]]:
    """Every entry of a file as stored (rejected ones included), for rewriting it."""
    if not path.exists():
        return []
    try:
        read_file(path)  # raises on damage
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader) or {}
    except CassetteFileError:
        if tolerate_damage:
            return []
        raise
    return list(data.get("interactions") or [])


def write_model_file(path: Path, recorded: list[dict[str, Any]], tolerate_damage: bool = False) -> bool:
    """Merge `recorded` into the model file at `path` (read fresh) and rewrite it whole; True when the
    file changed. Call with the folder lock held. `tolerate_damage` (record mode `all`) replaces a
    damaged file. Recording saves through `seedstore.write_model_file`, which inserts new
    interactions in place when it can (`append`, the same bytes).
    """
    ordered = sorted(merge(_raw_entries(path, tolerate_damage), recorded), key=_sort_key)
    text, spans = _file_text(ordered)
    try:
        if path.read_text(encoding="utf-8") == text:
            return False
    except (OSError, UnicodeDecodeError):
        pass
    write_atomically(path, text)
    write_index(path, text, ordered, spans)
    return True


def write_index(path: Path, text: str, entries: list[dict[str, Any]] | None = None,
                spans: list[tuple[int, int, int]] | None = None) -> None:
    """Write the index of the model file at `path`, whose text is `text` (see `index`), with the SDK
    fingerprint its requests verify under (`sdk_stamp`); `entries`, when given, are the interactions
    `text` was rendered from, in file order (nothing is parsed again), and `spans` where each is in it."""
    slots = _slots_of_rendered(text, entries, spans) if entries is not None else None
    if slots is None:
        scan = scan_text(path, text, lambda entry: entry)
        slots, usable = scan.slots, scan.kept
        in_order = slots is not None and in_render_order(text)
    else:
        usable = [entry for entry, slot in zip(entries or [], slots) if slot.problem is None]
        in_order = True
    if slots is not None:
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        digests = [slot.key[2] for slot in slots if slot.problem is None]
        write_atomically(index_path(path), render_index(path, digest, slots, sdk_stamp(usable, digests), in_order))


def in_render_order(text: str) -> bool:
    """Whether `text` is exactly what `render` writes for the interactions it holds."""
    data = yaml.load(text, Loader=_Loader)
    entries = data.get("interactions") if isinstance(data, dict) else None
    return isinstance(entries, list) and render(entries) == text


def sdk_stamp(entries: list[dict[str, Any]], digests: list[str] | None = None) -> str | None:
    """The fingerprint of the installed SDK when it rebuilds every request of `entries` (one model
    file's usable interactions) exactly, else None (`models.fidelity.verified_fingerprint`); `digests`,
    when given, are their request keys' body digests (`plain_key`), so no body is digested again."""
    if not entries:
        return None
    from ..models.fidelity import verified_fingerprint

    known = digests if digests is not None else [None] * len(entries)
    return verified_fingerprint((entry["request"]["uri"], _parsed_body(entry["request"].get("body")), digest)
                                for entry, digest in zip(entries, known))


def _parsed_body(stored: Any) -> Any:
    """A stored request body as its JSON object when stored as one (nothing encoded again), else bytes."""
    if isinstance(stored, dict) and isinstance(stored.get("json"), dict):
        return stored["json"]
    return decode_body(stored)


def _slots_of_rendered(text: str, entries: list[dict[str, Any]],
                       spans: list[tuple[int, int, int]] | None = None) -> list[Slot] | None:
    """The slots `scan_text` would find in `text`, taken from the entries it was rendered from (YAML
    gives plain JSON data back as it was dumped) and, when given, the `spans` `_file_text` wrote them
    at; None when the layout or an entry is unexpected."""
    if spans is None:
        split = _split(text)
        if split is None:
            return None
        spans = split[1]
    if len(spans) != len(entries):
        return None
    slots, offset, position = [], 0, 0
    for number, ((line, start, stop), entry) in enumerate(zip(spans, entries), start=1):
        if structure_problem(entry) is not None:
            return None
        offset += len(text[position:start].encode("utf-8"))
        item = text[start:stop].encode("utf-8")
        length = len(item)
        resp = entry["response"]
        why = answer_problem(entry)
        key = plain_key(entry)
        answer = answer_text(resp)
        slots.append(Slot(number, line, offset, length, key, model_of_plain(entry), why, answer, seal(key, item, answer)))
        offset, position = offset + length, stop
    return slots
