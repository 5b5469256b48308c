"""A cassette's interactions as YAML list items, written directly: the text `match.readable_yaml` gives.

Rendering a model file through PyYAML builds a node per value and calls back into Python twice per
scalar from libyaml's emitter; for thousands of interactions that is most of a save. The file's shape
is fixed (mappings, lists, strings, ints, booleans, nulls, in block style, width 100), so each
interaction is written here as libyaml writes it in the file's top-level `interactions:` list:

- a mapping's keys one per line, a list under a key at the key's own indentation (`- ` items), empty
  ones as `{}` / `[]`, a mapping or list that is an item starting on its `- ` line;
- a string plain when libyaml's scalar analysis allows it and PyYAML's resolver reads it back as a
  string, else single-quoted (`''` doubled); a long line broken at a space past column 100 onto the
  scalar's indentation, as libyaml does; a string with a line break as a literal block (`|`, its
  indentation and chomping indicators), its lines at the scalar's indentation;
- a document whose last literal block keeps its final line breaks (`|+`) ends with `...`.

Anything outside that (a string libyaml would double-quote: tabs, control or astral characters, a line
with trailing spaces before a break; a float; a key that is not a short plain word) makes that one
interaction go through PyYAML (`readable_yaml`) instead, in the same position; an object met twice
(anchors and aliases) or a type other than plain data makes the whole document go through it.
`tests/cassettes/test_yaml_items.py` checks the text byte for byte against PyYAML's on every
committed cassette and on generated strings and shapes.
"""

from __future__ import annotations

import re
from typing import Any

from .match import _ReadableDumper, readable_yaml

WIDTH = 100  # `readable_yaml`'s width: libyaml breaks a plain or single-quoted line at a space past it
INDENT = 2  # libyaml's indentation step

# What libyaml's emitter counts as printable (allow_unicode), less the line and paragraph separators
# (`match` has them double-quoted): a line of these and no other may be plain, single-quoted or, with
# line feeds, a literal block; anything else is written double-quoted.
_PRINTABLE = "\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd"
_ONE_LINE = re.compile(f"[{_PRINTABLE}]+")
_LINES = re.compile(f"[\n{_PRINTABLE}]+")
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_\-./]{0,63}")  # keys written plain here (others: the item goes to PyYAML)
_INDICATORS = frozenset("#,[]{}&*!|>'\"%@`")  # a plain scalar never starts with these
_RESOLVERS = _ReadableDumper.yaml_implicit_resolvers  # first character -> [(tag, pattern)]: what plain text reads as
_SAFE_FIRST = frozenset() if None in _RESOLVERS else frozenset(  # first characters no resolver or indicator looks at
    c for c in map(chr, range(0x21, 0x7f)) if c not in _RESOLVERS and c not in _INDICATORS and c not in "-?:.")


class _Item(Exception):
    """This interaction is left to PyYAML."""


class _Whole(Exception):
    """The whole document is left to PyYAML."""


def _reads_as_text(value: str) -> bool:
    """Whether PyYAML's resolver reads `value`, written plain, back as a string."""
    for _, pattern in _RESOLVERS.get(value[0], ()):
        if pattern.match(value):
            return False
    return not any(pattern.match(value) for _, pattern in _RESOLVERS.get(None, ()))


def _plain_allowed(value: str) -> bool:
    """Whether libyaml writes a one-line printable string plain in a block (its scalar analysis)."""
    first = value[0]
    if first in _SAFE_FIRST and ": " not in value and " #" not in value and value[-1] not in ": ":
        return True  # the common case, decided without the resolver
    if first == " " or value[-1] in " :" or first in _INDICATORS or ": " in value or " #" in value:
        return False
    if first in "-?:" and (len(value) == 1 or value[1] == " "):
        return False
    if value.startswith(("---", "...")):
        return False
    return _reads_as_text(value)


def _style(value: str) -> str:
    """'plain', 'single' or 'literal': how libyaml writes `value` in a block mapping's value or a list item."""
    if "\n" in value:
        if _LINES.fullmatch(value) is None or " \n" in value or value[-1] == " ":
            raise _Item  # double-quoted
        return "literal"
    if _ONE_LINE.fullmatch(value) is None:
        raise _Item
    return "plain" if _plain_allowed(value) else "single"


_styles: dict[str, str] = {}  # short strings seen (keys' values, headers, roles) -> their style


def _style_of(value: str) -> str:
    style = _styles.get(value)
    if style is None:
        style = _style(value)
        if len(value) <= 64:
            if len(_styles) > 4096:
                _styles.clear()
            _styles[value] = style
    return style


def _fold(text: str, column: int, indent: int, quoted: bool) -> str:
    """`text` as libyaml writes it from `column`: a space past the width, not next to another space
    (nor, quoted, the first or last character), becomes a line break and the scalar's indentation."""
    if column + len(text) <= WIDTH + 1 or " " not in text:
        return text
    parts, start, at = [], 0, column  # `at`: the column of text[start]
    last = len(text) - 1
    position = text.find(" ")
    while position != -1:
        if (at + position - start > WIDTH and text[position - 1] != " " and position != last
                and text[position + 1] != " " and not (quoted and position == 0)):
            parts += [text[start:position], "\n", " " * indent]
            start, at = position + 1, indent
        position = text.find(" ", position + 1)
    parts.append(text[start:])
    return "".join(parts)


class _Writer:
    """Writes plain data as libyaml's block style does; `ends_open`: the last literal block kept its breaks."""

    def __init__(self) -> None:
        self.out: list[str] = []
        self.seen: set[int] = set()  # the mappings and lists of the item being written
        self.ends_open: bool | None = None  # None: no literal block yet

    def _once(self, value: Any) -> None:
        if id(value) in self.seen:
            raise _Whole  # the representer would write an anchor and an alias
        self.seen.add(id(value))

    def scalar(self, value: Any, column: int, indent: int) -> str:
        """A scalar's text, written from `column` with continuation lines at `indent`."""
        kind = type(value)
        if kind is str:
            if not value:
                return "''"
            style = _style_of(value)
            if style == "plain":
                return _fold(value, column, indent, False)
            if style == "single":
                return "'" + _fold(value.replace("'", "''"), column + 1, indent, True) + "'"
            return self._literal(value, indent)
        if kind is int:
            return str(value)
        if kind is bool:
            return "true" if value else "false"
        if value is None:
            return "null"
        if kind is float:
            raise _Item
        raise _Whole

    def _literal(self, value: str, indent: int) -> str:
        if value[-1] != "\n":
            chomp = "-"
        elif len(value) == 1 or value[-2] == "\n":
            chomp = "+"
        else:
            chomp = ""
        self.ends_open = chomp == "+"
        pad = " " * indent
        body = "\n".join(pad + line if line else line for line in value.split("\n"))
        hint = "2" if value[0] in " \n" else ""  # the indentation, when the text starts with a space or a break
        return f"|{hint}{chomp}\n" + (body if chomp == "-" else body[:-1])  # the caller ends the line

    def value_after_key(self, value: Any, indent: int, column: int) -> None:
        """The value of a key written at `indent`, the line now at `column` (just past the colon)."""
        out = self.out
        kind = type(value)
        if kind is dict:
            if not value:
                out.append(" {}\n")
                return
            out.append("\n")
            self.mapping(value, indent + INDENT, False)
        elif kind is list:
            if not value:
                out.append(" []\n")
                return
            out.append("\n")
            self.sequence(value, indent, False)
        else:
            out += [" ", self.scalar(value, column + 1, indent + INDENT), "\n"]

    def item(self, value: Any, indent: int) -> None:
        """A list item whose `- ` was just written at `indent`."""
        out = self.out
        kind = type(value)
        if kind is dict:
            if not value:
                out.append("{}\n")
                return
            self.mapping(value, indent + INDENT, True)
        elif kind is list:
            if not value:
                out.append("[]\n")
                return
            self.sequence(value, indent + INDENT, True)
        else:
            out += [self.scalar(value, indent + INDENT, indent + INDENT), "\n"]

    def mapping(self, value: dict[Any, Any], indent: int, inline: bool) -> None:
        self._once(value)
        out, pad = self.out, " " * indent
        for key, child in value.items():
            if type(key) is not str or _KEY.fullmatch(key) is None or _style_of(key) != "plain":
                raise _Item
            if inline:
                inline = False
            else:
                out.append(pad)
            out += [key, ":"]
            self.value_after_key(child, indent, indent + len(key) + 1)

    def sequence(self, value: list[Any], indent: int, inline: bool) -> None:
        self._once(value)
        out, pad = self.out, " " * indent
        for child in value:
            if inline:
                inline = False
                out.append("- ")
            else:
                out += [pad, "- "]
            self.item(child, indent)


def _literal_state(value: Any, state: bool | None, seen: set[int]) -> bool | None:
    """`state` after PyYAML writes `value` (whether the last literal block so far kept its final breaks),
    for an interaction left to it; the objects met are added to `seen`."""
    kind = type(value)
    if kind is str:
        if "\n" in value and not any(c in value for c in "\r\x85\u2028\u2029"):
            try:
                if _style(value) == "literal":
                    return value[-1] == "\n" and (len(value) == 1 or value[-2] == "\n")
            except _Item:
                pass
        return state
    if kind is dict or kind is list:
        if id(value) in seen:
            raise _Whole
        seen.add(id(value))
        for key in value if kind is dict else ():
            if type(key) is not str or "\n" in key:
                raise _Whole  # a key PyYAML might write as a literal block
        for child in (value.values() if kind is dict else value):
            state = _literal_state(child, state, seen)
    elif not (kind is int or kind is bool or kind is float or value is None):
        raise _Whole  # not plain data: the whole document goes through PyYAML, as before
    return state


def _fallback_item(entry: Any) -> str:
    """One interaction as PyYAML writes it in the file's `interactions:` list."""
    text = readable_yaml({"interactions": [entry]})
    text = text[len("interactions:\n"):]
    return text[:-4] if text.endswith("\n...\n") else text


def render_items(entries: list[Any]) -> tuple[list[str], bool] | None:
    """Each entry's text as a `- ` item of a top-level `interactions:` list, and whether the document
    then ends with `...`; None when the document must go through PyYAML whole (`readable_yaml`)."""
    writer = _Writer()
    items: list[str] = []
    seen: set[int] = set()  # the mappings and lists of the items written so far
    try:
        for entry in entries:
            state = writer.ends_open
            writer.seen = set()
            try:
                writer.out.append("- ")
                writer.item(entry, 0)
                items.append("".join(writer.out))
            except _Item:
                writer.seen = set()
                writer.ends_open = _literal_state(entry, state, writer.seen)
                items.append(_fallback_item(entry))
            writer.out.clear()
            if not seen.isdisjoint(writer.seen):
                raise _Whole
            seen |= writer.seen
    except (_Whole, RecursionError):
        return None
    return items, bool(writer.ends_open)
