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
from typing import Any, Callable, TypeVar

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

    def to_json(self) -> dict[str, Any]:
        """The record as JSON values, its keys in declared order, then the undeclared ones it was read with."""
        data: dict[str, Any] = {}
        for key in _plan(type(self)).keys:
            value = getattr(self, key.name)
            if key.omit is True and value is None or key.omit.__class__ is str and getattr(self, key.omit) is None:
                continue
            if self.absent and key.name in self.absent and value == key.default():  # an earlier version lacked it
                continue
            data[key.name] = _encode(value)
        for name, value in self.extra.items():
            data.setdefault(name, value)
        return data

    @classmethod
    def from_json(cls: type[R], data: Mapping[str, Any]) -> R:
        """The record of a JSON object; a missing key takes the field's default, an undeclared one goes to `extra`."""
        if not isinstance(data, Mapping):
            raise RecordError(f"{cls.__name__}: expected a JSON object, got {type(data).__name__}")
        plan = _plan(cls)
        values: dict[str, Any] = {}
        for key in plan.keys:
            if key.name in data:
                try:
                    value = data[key.name]
                    values[key.name] = value if key.decode is _keep else key.decode(value)
                except _Mismatch as exc:
                    raise RecordError(f"{cls.__name__}.{key.name}: {exc}") from None
            elif key.required:
                raise RecordError(f"{cls.__name__}: the key {key.name!r} is missing")
        if len(values) == len(data) == len(plan.names):  # every key declared and present
            return cls(**values)
        extra = {name: value for name, value in data.items() if name not in plan.names}
        return cls(**values, extra=extra, absent=plan.names - data.keys())


class _Mismatch(Exception):
    """A JSON value of the wrong kind (the record names where)."""


@dataclasses.dataclass(frozen=True)
class _Key:
    name: str
    decode: Callable[[Any], Any]
    omit: bool | str  # False: always written; True: left out while None; a name: written when that field is not None
    required: bool
    default: Callable[[], Any]


@dataclasses.dataclass(frozen=True)
class _Plan:
    keys: tuple[_Key, ...]
    names: frozenset[str]


_PLANS: dict[type, _Plan] = {}


def _plan(cls: type) -> _Plan:
    """How a record class reads and writes its keys, worked out once from its fields and their types."""
    plan = _PLANS.get(cls)
    if plan is None:
        hints = typing.get_type_hints(cls)
        keys = tuple(_Key(spec.name, _decoder(hints[spec.name]), spec.metadata.get(_OMIT, False),
                          spec.default is dataclasses.MISSING and spec.default_factory is dataclasses.MISSING,
                          _default_of(spec))
                     for spec in dataclasses.fields(cls) if spec.name not in ("extra", "absent"))
        plan = _PLANS[cls] = _Plan(keys, frozenset(key.name for key in keys))
    return plan


def _default_of(spec: dataclasses.Field[Any]) -> Callable[[], Any]:
    if spec.default_factory is not dataclasses.MISSING:
        return spec.default_factory
    return lambda: spec.default


def _encode(value: Any) -> Any:
    if isinstance(value, JsonRecord):
        return value.to_json()
    if isinstance(value, tuple):
        return [_encode(v) for v in value]
    if isinstance(value, Mapping):
        return {key: _encode(v) for key, v in value.items()}
    return value


def _keep(value: Any) -> Any:
    return value


def _decoder(hint: Any) -> Callable[[Any], Any]:
    """The function that reads a JSON value into the field type `hint`."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        inner = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        if len(inner) != 1:
            return _keep
        read = _decoder(inner[0])
        return read if read is _keep else lambda value: None if value is None else read(value)
    if isinstance(hint, type) and issubclass(hint, JsonRecord):
        record = hint

        def read_record(value: Any) -> Any:
            if not isinstance(value, Mapping):
                raise _Mismatch(f"expected a JSON object, got {type(value).__name__}")
            return record.from_json(value)
        return read_record
    if origin is tuple:
        item = _decoder(typing.get_args(hint)[0])

        def read_list(value: Any) -> Any:
            if not isinstance(value, list | tuple):
                raise _Mismatch(f"expected a JSON list, got {type(value).__name__}")
            return tuple(value) if item is _keep else tuple(item(v) for v in value)
        return read_list
    if origin in (Mapping, dict):
        item = _decoder(typing.get_args(hint)[1])

        def read_object(value: Any) -> Any:
            if not isinstance(value, Mapping):
                raise _Mismatch(f"expected a JSON object, got {type(value).__name__}")
            return {key: item(v) for key, v in value.items()}
        return read_object
    return _keep
