"""Text from seeds and models made safe for a terminal: control, bidi and zero-width characters shown, not obeyed.

A task text or a model's answer can hold an escape sequence (clear the screen, retitle the window,
hide a line), a bell, a NUL, a carriage return that overwrites the line before it, a bidi override
that makes a line read differently from what it holds, or an invisible character (zero-width space and
joiners, soft hyphen, word joiner, byte-order mark) that hides a difference. Every line the plugin prints
goes through `safe`, which keeps newlines and tabs and writes every other C0/C1 control, every bidi
control and every invisible character as a visible escape (`\\x1b`, `\\u202e`, `\\u200b`). So do the
Markdown and HTML reports and the committed snapshots (read in a terminal or a web view as diffs); JSON
and cassettes keep the text as it was, as evidence.
"""

from __future__ import annotations

import re

BIDI_CONTROLS = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
INVISIBLE = "\u00ad\u180e\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064"  # soft hyphen, zero widths, joiners
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f" + BIDI_CONTROLS + INVISIBLE + "\u2028\u2029\ufeff]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def safe(text: str) -> str:
    """`text` with control characters (but newline and tab), bidi controls and invisible characters escaped
    visibly."""
    return _UNSAFE.sub(_escape, text) if _UNSAFE.search(text) else text


def is_safe(text: str) -> bool:
    """Whether `text` holds nothing `safe` would escape."""
    return _UNSAFE.search(text) is None
