"""Frozen dataclasses that read and write their own JSON: the fields, in order, are the keys.

A `JsonRecord` subclass declares its keys once, as dataclass fields in the order the JSON lists them;
`to_json` and `from_json` follow the field types (another record, `X | None`, `tuple[X, ...]`,
`Mapping[str, X]`, or a plain JSON value for `Any`, `str`, `int`, `float`, `bool`). Three kinds of key:

* a plain field is always written (`None` as `null`); a report without the key reads the field's default;
* `optional()`: written only when not None (a key some records carry and others lack);
* `present_with(name)`: written, `null` included, exactly when the field `name` is not None (keys that
  come as a group, such as a clustered gain's `design_effect` beside its `unit`).

Keys a record does not declare (written by a newer version, or by a plugin) are kept in `extra` and written
back after the declared ones; declared keys a report lacks (written by an earlier version) stay out while
they keep their default. So `to_json(from_json(data)) == data` for a report of any version: nothing lost,
nothing added.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Any, ClassVar, TypeVar

_OMIT = "skilltransfer_omit"  # metadata: None -> key absent, or the name of the field the key comes with

R = TypeVar("R", bound="JsonRecord")


class RecordError(ValueError):
    """A report's record that cannot be read (a key missing, a value of the wrong kind)."""


def optional(default: Any = None) -> Any:
    """A field whose key is left out while its value is None."""
    return dataclasses.field(default=default, metadata={_OMIT: True})


def present_with(name: str) -> Any:
    """A field whose key (None included) is written exactly when the field `name` is not None."""
    return dataclasses.field(default=None, metadata={_OMIT: name})


@dataclasses.dataclass(frozen=True)
class JsonRecord:
    """Base of the report's records: `to_json()` / `from_json()` by the declared fields (module docstring)."""

    extra: Mapping[str, Any] = dataclasses.field(default_factory=dict, kw_only=True)
    absent: frozenset[str] = dataclasses.field(default=frozenset(), kw_only=True, compare=False, repr=False)

    _types: ClassVar[dict[type, dict[str, Any]]] = {}

    def to_json(self) -> dict[str, Any]:
        """The record as JSON values, its keys in declared order, then the undeclared ones it was read with."""
        data: dict[str, Any] = {}
        for spec in _declared(type(self)):
            value = getattr(self, spec.name)
            omit = spec.metadata.get(_OMIT)
            if omit is True and value is None or isinstance(omit, str) and getattr(self, omit) is None:
                continue
            if spec.name in self.absent and value == _default(spec):  # an earlier version's report lacked it
                continue
            data[spec.name] = _encode(value)
        for key, value in self.extra.items():
            data.setdefault(key, value)
        return data

    @classmethod
    def from_json(cls: type[R], data: Mapping[str, Any]) -> R:
        """The record of a JSON object; a missing key takes the field's default, an undeclared one goes to `extra`."""
        if not isinstance(data, Mapping):
            raise RecordError(f"{cls.__name__}: expected a JSON object, got {type(data).__name__}")
        hints = _hints(cls)
        values: dict[str, Any] = {}
        for spec in _declared(cls):
            if spec.name in data:
                values[spec.name] = _decode(hints[spec.name], data[spec.name], f"{cls.__name__}.{spec.name}")
            elif spec.default is dataclasses.MISSING and spec.default_factory is dataclasses.MISSING:
                raise RecordError(f"{cls.__name__}: the key {spec.name!r} is missing")
        names = {spec.name for spec in _declared(cls)}
        extra = {key: value for key, value in data.items() if key not in names}
        return cls(**values, extra=extra, absent=frozenset(names - set(data)))


def _declared(cls: type) -> tuple[dataclasses.Field[Any], ...]:
    return tuple(spec for spec in dataclasses.fields(cls) if spec.name not in ("extra", "absent"))


def _default(spec: dataclasses.Field[Any]) -> Any:
    return spec.default_factory() if spec.default_factory is not dataclasses.MISSING else spec.default


def _hints(cls: type) -> dict[str, Any]:
    known = JsonRecord._types.get(cls)
    if known is None:
        known = JsonRecord._types[cls] = typing.get_type_hints(cls)
    return known


def _encode(value: Any) -> Any:
    if isinstance(value, JsonRecord):
        return value.to_json()
    if isinstance(value, tuple):
        return [_encode(v) for v in value]
    if isinstance(value, Mapping):
        return {key: _encode(v) for key, v in value.items()}
    return value


def _decode(hint: Any, value: Any, where: str) -> Any:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None:
            return None
        inner = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        return _decode(inner[0], value, where) if len(inner) == 1 else value
    if isinstance(hint, type) and issubclass(hint, JsonRecord):
        if not isinstance(value, Mapping):
            raise RecordError(f"{where}: expected a JSON object, got {type(value).__name__}")
        return hint.from_json(value)
    if origin is tuple:
        if not isinstance(value, list | tuple):
            raise RecordError(f"{where}: expected a JSON list, got {type(value).__name__}")
        item = typing.get_args(hint)[0]
        return tuple(_decode(item, v, where) for v in value)
    if origin in (Mapping, dict):
        if not isinstance(value, Mapping):
            raise RecordError(f"{where}: expected a JSON object, got {type(value).__name__}")
        item = typing.get_args(hint)[1]
        return {key: _decode(item, v, f"{where}[{key!r}]") for key, v in value.items()}
    return value
