"""How recorded requests are matched and compared: canonical JSON bodies, keys, readable diffs.

Two requests match when method, path and canonical body agree (key order and whitespace never
matter; headers never count). Canonical digests are memoized per body so each lookup is a dict hit
instead of a JSON parse per recorded interaction.
"""

from __future__ import annotations

import difflib
import hashlib
import io
import json
from functools import lru_cache
from typing import Any

import yaml

from ..models.fidelity import body_digest as json_digest
from ..models.wire import model_of_request

MAX_DIFF_LINES = 80


def body_bytes(body: Any) -> bytes:
    """A request body as bytes (vcrpy hands us bytes, str, None or a file-like)."""
    if body is None:
        return b""
    if isinstance(body, bytes):
        return body
    if isinstance(body, bytearray):
        return bytes(body)
    if isinstance(body, str):
        return body.encode("utf-8")
    if hasattr(body, "read"):
        return body.read()
    return b"".join(body)


def parse_json(body: Any) -> Any:
    """The parsed JSON body, or None if it is not JSON."""
    raw = body_bytes(body)
    if not raw:
        return None
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None


@lru_cache(maxsize=65536)
def _digest(raw: bytes) -> str:
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return hashlib.sha256(raw).hexdigest()
    return json_digest(data)  # the one canonical form: a replay without the SDK looks requests up by it


def body_digest(body: Any) -> str:
    """SHA-256 of the canonical JSON body (raw bytes when not JSON)."""
    return _digest(body_bytes(body))


def _path(request: Any) -> str:
    return request.path or "/"


def request_key(request: Any) -> tuple[str, str, str]:
    """What matching compares: (METHOD, path, canonical body digest)."""
    return request.method.upper(), _path(request), body_digest(request.body)


def canonical_body(r1: Any, r2: Any) -> None:
    """vcrpy matcher: the canonical JSON bodies are equal (raises AssertionError otherwise)."""
    if body_digest(r1.body) != body_digest(r2.body):
        raise AssertionError("request bodies differ")


def model_of(request: Any) -> str:
    """The model a (vcrpy) request is for, by its wire's rule (`models.wire.model_of_request`: the body's
    `model` field, or the URL for an API that names the model there), or "unknown-model"."""
    return model_of_request(_path(request), parse_json(request.body))


try:  # libyaml's emitter when available: saving thousands of interactions stays fast
    _BaseDumper: type = yaml.CSafeDumper
except AttributeError:  # pragma: no cover
    _BaseDumper = yaml.SafeDumper


class _ReadableDumper(_BaseDumper):  # type: ignore[misc, valid-type]
    """YAML with multi-line strings as literal blocks, so texts diff line by line."""


_OTHER_BREAKS = frozenset("\r\x85\u2028\u2029")


def _str_representer(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    if _OTHER_BREAKS.intersection(value):  # YAML normalises these breaks unless they are escaped
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style='"')
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_ReadableDumper.add_representer(str, _str_representer)


def readable_yaml(data: Any) -> str:
    """Dump plain data as readable YAML (block strings, insertion order, unicode kept)."""
    stream = io.StringIO()
    dumper = _ReadableDumper(stream, default_flow_style=False, allow_unicode=True, width=100, sort_keys=False)
    try:
        node = _Nodes(dumper).node(data)
    except _Shared:  # an object met twice: the representer's anchors and aliases
        return yaml.dump(data, Dumper=_ReadableDumper, sort_keys=False, allow_unicode=True, width=100)
    try:
        dumper.open()
        dumper.serialize(node)
        dumper.close()
    finally:
        dumper.dispose()
    return stream.getvalue()


class _Shared(Exception):
    """The data holds one mapping or list twice."""


_STR, _MAP, _SEQ = "tag:yaml.org,2002:str", "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"
_INT, _BOOL, _NULL = "tag:yaml.org,2002:int", "tag:yaml.org,2002:bool", "tag:yaml.org,2002:null"


class _Nodes:
    """The nodes `_ReadableDumper`'s representer makes for plain JSON-like data (unsorted keys, block
    style), built directly: the same nodes, so the same text, at a fraction of the representer's
    dispatch. Other types go through the dumper's own representer."""

    def __init__(self, dumper: Any) -> None:
        self.dumper = dumper
        self.seen: set[int] = set()

    def node(self, value: Any) -> yaml.Node:
        kind = type(value)
        if kind is str:
            return _str_node(value)
        if kind is dict:
            self._once(value)
            node = self.node
            return yaml.MappingNode(_MAP, [(node(k), node(v)) for k, v in value.items()], flow_style=False)
        if kind is list:
            self._once(value)
            return yaml.SequenceNode(_SEQ, [self.node(v) for v in value], flow_style=False)
        if kind is int:
            return yaml.ScalarNode(_INT, str(value))
        if kind is bool:
            return yaml.ScalarNode(_BOOL, "true" if value else "false")
        if value is None:
            return yaml.ScalarNode(_NULL, "null")
        if kind is float:
            return self.dumper.represent_float(value)
        raise _Shared

    def _once(self, value: Any) -> None:
        if id(value) in self.seen:
            raise _Shared
        self.seen.add(id(value))


def _str_node(value: str) -> yaml.Node:
    if "\r" in value or "\x85" in value or "\u2028" in value or "\u2029" in value:
        return yaml.ScalarNode(_STR, value, style='"')  # YAML normalises these breaks unless they are escaped
    return yaml.ScalarNode(_STR, value, style="|" if "\n" in value else None)


def readable_body(body: Any) -> str:
    """A request body rendered for humans and diffs (keys sorted, long texts line by line)."""
    data = parse_json(body)
    if data is None:
        return body_bytes(body).decode("utf-8", errors="replace")
    return yaml.dump(data, Dumper=_ReadableDumper, sort_keys=True, allow_unicode=True, width=100)


def closest(candidates: list[Any], request: Any) -> Any | None:
    """The candidate request whose readable body is most similar to `request`'s."""
    if not candidates:
        return None
    target = readable_body(request.body)
    scored = []
    for candidate in candidates:
        matcher = difflib.SequenceMatcher(None, readable_body(candidate.body), target, autojunk=False)
        scored.append((matcher.quick_ratio(), candidate))
    scored.sort(key=lambda pair: -pair[0])
    finalists = [c for _, c in scored[:5]]
    return max(
        finalists,
        key=lambda c: difflib.SequenceMatcher(None, readable_body(c.body), target, autojunk=False).ratio(),
    )


def body_diff(recorded: Any, requested: Any, limit: int = MAX_DIFF_LINES) -> str:
    """Unified diff of two readable bodies, cut to `limit` lines."""
    lines = list(
        difflib.unified_diff(
            readable_body(recorded).splitlines(),
            readable_body(requested).splitlines(),
            fromfile="recorded",
            tofile="requested",
            lineterm="",
            n=2,
        )
    )
    if len(lines) > limit:
        lines = lines[:limit] + [f"... ({len(lines) - limit} more diff lines)"]
    return "\n".join(lines)
