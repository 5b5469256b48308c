"""Cassette files on disk: one folder per seed, one readable YAML file per model.

vcrpy sees one cassette per seed (the folder). This persister loads every `<model>.yaml` in the
folder as one list of interactions and, on save, splits them by the request body's `model` field
and writes each file atomically (temporary file + `os.replace`), only when its content changed.
Saving holds a lock and, for any file changed on disk since this process read it, keeps the
interactions another process recorded meanwhile, so xdist workers that record the same seed do not
overwrite each other.

JSON bodies are stored parsed, under `json:`, with multi-line strings as YAML literal blocks, so a
reviewer reads the skill text and the model's answer as text. They are re-encoded on load; matching
compares canonical JSON, so the exact bytes never matter.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import tempfile
import threading
from pathlib import Path
from typing import Any

import yaml

from ..models.base import ModelCallError
from .match import body_bytes, body_digest, model_of, parse_json, readable_yaml

FORMAT_VERSION = 1
LOCK_TIMEOUT_S = 120.0
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")

try:  # libyaml when available: loading thousands of interactions stays fast
    from yaml import CSafeLoader as _Loader
except ImportError:  # pragma: no cover
    from yaml import SafeLoader as _Loader  # type: ignore[assignment]


class CassetteFileError(ModelCallError):
    """A cassette file exists but cannot be read; it is never silently overwritten."""


def file_name(model: str) -> str:
    """The file a model's interactions live in (unsafe characters become '-')."""
    return f"{_UNSAFE.sub('-', model).strip('-.') or 'unknown-model'}.yaml"


def model_files(folder: Path) -> list[Path]:
    """The model files of a seed folder, sorted."""
    return sorted(folder.glob("*.yaml")) if folder.is_dir() else []


def _encode_body(body: Any) -> dict[str, Any]:
    data = parse_json(body)
    if data is not None:
        return {"json": data}
    raw = body_bytes(body)
    try:
        return {"string": raw.decode("utf-8")}
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(raw).decode("ascii")}


def _decode_body(stored: Any) -> bytes:
    if not isinstance(stored, dict):
        return body_bytes(stored)
    if "json" in stored:
        return json.dumps(stored["json"], ensure_ascii=False).encode("utf-8")
    if "base64" in stored:
        return base64.b64decode(stored["base64"])
    return body_bytes(stored.get("string"))


def _to_plain(request: Any, response: dict[str, Any]) -> dict[str, Any]:
    """One interaction as plain data for YAML."""
    headers = {name: (v if isinstance(v, list) else [v]) for name, v in request.headers.items()}
    return {
        "request": {
            "method": request.method,
            "uri": request.uri,
            "headers": dict(sorted(headers.items())),
            "body": _encode_body(request.body),
        },
        "response": {
            "status": dict(response["status"]),
            "headers": dict(sorted((response.get("headers") or {}).items())),
            "body": _encode_body(response["body"].get("string")),
        },
    }


def _from_plain(entry: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """Back to vcrpy's (Request, response dict)."""
    from vcr.request import Request

    req, resp = entry["request"], entry["response"]
    request = Request(req["method"], req["uri"], _decode_body(req.get("body")), req.get("headers") or {})
    response = {
        "status": dict(resp["status"]),
        "headers": dict(resp.get("headers") or {}),
        "body": {"string": _decode_body(resp.get("body"))},
    }
    return request, response


def _sort_key(entry: dict[str, Any]) -> tuple[Any, ...]:
    """Stable order for a file: by path, sample, conversation length, then body."""
    req = entry["request"]
    body = req["body"].get("json") if isinstance(req.get("body"), dict) else None
    body = body if isinstance(body, dict) else {}
    sample = str((body.get("metadata") or {}).get("user_id", body.get("seed", "")))
    turns = len(body.get("messages") or [])
    return (req["uri"].split("?")[0].rsplit("/", 1)[-1], sample, turns, json.dumps(body, sort_keys=True))


def read_file(path: Path) -> list[dict[str, Any]]:
    """The plain interactions stored in one model file."""
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
        raise CassetteFileError(
            f"cassette file {path} cannot be read ({err}). Fix it, or delete it and re-record "
            "with `pytest --record-mode=new_episodes`."
        ) from err
    if not data:
        return []
    if not isinstance(data, dict) or not isinstance(data.get("interactions"), list):
        raise CassetteFileError(f"cassette file {path} has no `interactions` list; delete it and re-record.")
    return data["interactions"]


def _plain_key(entry: dict[str, Any]) -> tuple[str, str, str]:
    req = entry["request"]
    path = req["uri"].split("://", 1)[-1].partition("/")[2].split("?")[0]
    return req["method"].upper(), "/" + path, body_digest(_decode_body(req.get("body")))


def write_atomically(path: Path, text: str) -> None:
    """Write `text` to `path` via a temporary file and `os.replace` (never a half-written file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _lock_for(folder: Path) -> Any:
    from filelock import FileLock

    digest = hashlib.sha1(str(folder.resolve()).encode()).hexdigest()[:16]
    return FileLock(os.path.join(tempfile.gettempdir(), f"skilltransfer-cassette-{digest}.lock"), timeout=LOCK_TIMEOUT_S)


_seen: dict[Path, tuple[int, int]] = {}  # file -> (mtime_ns, size) when this process last read/wrote it
_seen_lock = threading.Lock()


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def _remember(path: Path) -> None:
    stamp = _stamp(path)
    with _seen_lock:
        if stamp is not None:
            _seen[path.resolve()] = stamp


def _changed_since_seen(path: Path) -> bool:
    """Whether another process may have written `path` since we last read or wrote it."""
    with _seen_lock:
        seen = _seen.get(path.resolve())
    return seen is None or seen != _stamp(path)


def _render(entries: list[dict[str, Any]]) -> str:
    return readable_yaml({"version": FORMAT_VERSION, "interactions": sorted(entries, key=_sort_key)})


class SeedPersister:
    """vcrpy persister for a seed folder (`cassette_path` is the folder)."""

    @classmethod
    def load_cassette(cls, cassette_path: str | Path, serializer: Any = None) -> tuple[list[Any], list[Any]]:
        from vcr.persisters.filesystem import CassetteNotFoundError

        entries = []
        for path in model_files(Path(cassette_path)):
            entries.extend(read_file(path))
            _remember(path)
        if not entries:
            raise CassetteNotFoundError()
        pairs = [_from_plain(entry) for entry in entries]
        return [request for request, _ in pairs], [response for _, response in pairs]

    @staticmethod
    def save_cassette(cassette_path: str | Path, cassette_dict: dict[str, Any], serializer: Any = None) -> None:
        folder = Path(cassette_path)
        by_model: dict[str, list[dict[str, Any]]] = {}
        for request, response in zip(cassette_dict["requests"], cassette_dict["responses"], strict=True):
            by_model.setdefault(model_of(request.body), []).append(_to_plain(request, response))
        folder.mkdir(parents=True, exist_ok=True)
        with _lock_for(folder):
            for model, entries in sorted(by_model.items()):
                path = folder / file_name(model)
                kept: list[dict[str, Any]] = []
                if path.exists() and _changed_since_seen(path):  # merge what others recorded meanwhile
                    ours = {_plain_key(entry) for entry in entries}
                    kept = [entry for entry in read_file(path) if _plain_key(entry) not in ours]
                text = _render(kept + entries)
                if not (path.exists() and path.read_text(encoding="utf-8") == text):
                    write_atomically(path, text)
                _remember(path)
