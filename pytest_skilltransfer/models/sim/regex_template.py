"""Turn a judge regex into a fill-in template, the way a careful optimizer reads a pattern.

`^[Tt]eam: (Platform|Payments)$` becomes `Team: <Platform|Payments>`; `[Vv]erdict\\s*[:=]` becomes
`Verdict:` followed by a free slot; a heading-then-bullet pattern becomes two template lines.
Only a common subset of regex syntax is understood; anything else yields None (the optimizer then
quotes the pattern, which the simulated agent cannot act on). Every template is verified against
the pattern before it is returned, within the time limit every seed-provided pattern gets
(`timed_regex`): a pattern that runs past it yields None with a `RegexTimeoutWarning`.
"""

from __future__ import annotations

import re

import regex

from ...guards import timed_regex

FREE = "\x01"  # a free-text slot; the optimizer replaces it with a hint such as <one line: the main reason>
_SAMPLE_FREE = "placeholder text that is long enough for any minimum"
_WORD = "sample"  # a run of a class of lowercase letters (`[a-z0-9-]+`), as a person writes an example


class _Unsupported(Exception):
    """The pattern uses syntax this reader does not handle."""


class _Reader:
    """A tiny recursive-descent reader over a regex, producing template text."""

    def __init__(self, pattern: str):
        self.pattern = pattern
        self.index = 0
        self.word_class = False  # the last atom was a class holding every lowercase letter: a run of it is a word

    def peek(self) -> str:
        return self.pattern[self.index] if self.index < len(self.pattern) else ""

    def take(self) -> str:
        char = self.peek()
        self.index += 1
        return char

    def alternatives(self) -> list[str]:
        branches = [self.sequence()]
        while self.peek() == "|":
            self.take()
            branches.append(self.sequence())
        return branches

    def sequence(self) -> str:
        out = []
        while self.peek() and self.peek() not in "|)":
            atom, free = self.atom()
            out.append(self.quantified(atom, free))
        return "".join(out)

    def atom(self) -> tuple[str, bool]:
        self.word_class = False
        char = self.take()
        if char in "^$":
            return "", False
        if char == ".":
            return FREE, True
        if char == "\\":
            return self.escape()
        if char == "[":
            return self.char_class()
        if char == "(":
            return self.group(), False
        if char in "*+?{":
            raise _Unsupported(char)
        return char, False

    def escape(self) -> tuple[str, bool]:
        char = self.take()
        mapping = {"s": " ", "S": "X", "d": "<1|2|3>", "w": "x", "n": "\n", "t": " "}
        if char in "bBAZz":
            return "", False
        if char in mapping:
            return mapping[char], False
        if char.isalnum():
            raise _Unsupported("\\" + char)
        return char, False

    def char_class(self) -> tuple[str, bool]:
        negated = self.peek() == "^"
        if negated:
            self.take()
        members: list[str] = []
        while self.peek() and self.peek() != "]":
            char = self.take()
            if char == "\\":
                char = {"n": "\n", "t": "\t", "s": " ", "d": "0"}.get(self.take(), self.pattern[self.index - 1])
            if self.peek() == "-" and self.index + 1 < len(self.pattern) and self.pattern[self.index + 1] != "]":
                self.take()
                end = self.take()
                members += [chr(c) for c in range(ord(char), ord(end) + 1)]
            else:
                members.append(char)
        if self.take() != "]":
            raise _Unsupported("unterminated class")
        if negated:
            return ("X", False) if "\n" in members else (FREE, True)
        self.word_class = set(_WORD) <= set(members)
        return _representative(members), False

    def group(self) -> str:
        if self.peek() == "?":
            self.take()
            kind = self.take()
            if kind == "P" and self.peek() == "<":
                while self.take() not in (">", ""):
                    pass
            elif kind != ":":
                raise _Unsupported("(?" + kind)
        branches = self.alternatives()
        if self.take() != ")":
            raise _Unsupported("unbalanced group")
        plain = [b for b in branches if b and re.fullmatch(r"[\w .,/'-]+", b)]
        if len(branches) > 1 and len(plain) == len(branches):
            return "<" + "|".join(branches) + ">"
        return branches[0]

    def quantified(self, atom: str, free: bool) -> str:
        char = self.peek()
        if char not in "*+?{":
            return atom
        self.take()
        low = {"*": 0, "+": 1, "?": 1}.get(char, 0)
        high = low
        if char == "{":
            match = re.match(r"(\d*)(,?)(\d*)\}", self.pattern[self.index:])
            if not match:
                raise _Unsupported("bad repeat")
            self.index += match.end()
            low = int(match.group(1) or 0)
            high = int(match.group(3)) if match.group(3) else (low if not match.group(2) else low + 1)
        if self.peek() == "?":
            self.take()
        if free:
            return FREE
        if self.word_class and (char in "+*" or (char == "{" and high > low and low <= len(_WORD))):
            return _WORD
        if atom == "#":
            return "#" * max(low, min(2, high))
        if char == "*" and atom.strip():
            return ""
        return atom * max(low, 1 if char in "+?" else low)


def _representative(members: list[str]) -> str:
    """One character standing for a class: punctuation a label needs, the upper case of a case pair, a small digit choice."""
    for preferred in (":", "-", " "):
        if preferred in members:
            return preferred
    digits = [m for m in members if m.isdigit()]
    if digits and len(digits) == len(members) and len(digits) <= 5:
        return "<" + "|".join(digits) + ">" if len(digits) > 1 else digits[0]
    upper = [m for m in members if m.isupper()]
    lower = [m for m in members if m.islower()]
    return upper[0] if upper else lower[0] if lower else members[0]


def instantiate(template: str) -> str:
    """A concrete string from a template: first option of each choice, sample text in each free slot."""
    text = re.sub(r"<([^<>|]+)\|[^<>]*>", r"\1", template)
    return text.replace(FREE, _SAMPLE_FREE)


def template_for(pattern: str) -> str | None:
    """A verified template for `pattern`, or None when it cannot be read."""
    try:
        reader = _Reader(pattern)
        template = reader.sequence()
        if reader.index < len(pattern):
            raise _Unsupported("stray )")
    except (_Unsupported, IndexError, ValueError):
        return None
    template = re.sub(r"\n[ \t]+", "\n", template).strip(" ").replace("X" + FREE, FREE)
    if re.fullmatch(r"[A-Z][\w /-]*:", template):
        template += " " + FREE
    candidates = [re.sub(r":(?=[^\s])", ": ", template), template]
    candidates.append(f"{template} {FREE}")  # a key or a marker the pattern wants followed by a value (`^description: `)
    for candidate in candidates:
        try:
            if timed_regex.search(pattern, instantiate(candidate), regex.MULTILINE):
                return candidate
        except regex.error:
            return None
        except timed_regex.PatternTimeout as exc:
            timed_regex.warn_timeout("a training check in the optimizer's request", exc,
                                     "the optimizer does not turn it into a template")
            return None
    return None
