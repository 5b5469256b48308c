"""Judge regex syntax that JavaScript rejects or reads differently, so seeds stay portable to gbrain.

gbrain scores a `regex` check with `new RegExp(arg, "m")`: a pattern JavaScript rejects fails the
check there, and Python-only escapes such as `\\A` silently mean something else. The seed loader
warns about each construct found; the check still runs here.
"""

from __future__ import annotations

import re

_INLINE_FLAGS = re.compile(r"\(\?[aiLmsux]*(?:-[imsx]+)?[:)]")
_ESCAPES = {
    "A": "\\A (start of text) is Python-only; JavaScript reads it as the letter A",
    "Z": "\\Z (end of text) is Python-only; JavaScript reads it as the letter Z",
    "z": "\\z is not JavaScript; it reads it as the letter z",
    "G": "\\G is not JavaScript; it reads it as the letter G",
    "p": "\\p{...} needs JavaScript's u flag, which gbrain does not set; it reads it as the letter p",
    "P": "\\P{...} needs JavaScript's u flag, which gbrain does not set; it reads it as the letter P",
    "N": "\\N{...} (named character) is Python-only",
}
_GROUPS = (
    ("(?P<", "(?P<name>...) is Python syntax; JavaScript rejects it (write (?<name>...))"),
    ("(?P=", "(?P=name) is Python syntax; JavaScript rejects it (write \\k<name>)"),
    ("(?#", "(?#...) comments are Python-only; JavaScript rejects them"),
    ("(?>", "atomic groups (?>...) are not JavaScript; it rejects them"),
    ("(?(", "conditional groups (?(...)...) are not JavaScript; it rejects them"),
)


def javascript_problems(pattern: str) -> list[str]:
    """Why JavaScript would reject or misread `pattern` (empty when it reads it as Python does, as far as we know)."""
    problems: list[str] = []
    index, in_class = 0, False
    while index < len(pattern):
        char = pattern[index]
        if char == "\\" and index + 1 < len(pattern):
            follower = pattern[index + 1]
            if follower in _ESCAPES and not in_class:
                problems.append(_ESCAPES[follower])
            index += 2
            continue
        if in_class:
            if pattern.startswith("[:", index):
                problems.append("POSIX classes such as [[:alpha:]] are not JavaScript; it reads them as a set of characters")
            in_class = char != "]"
        elif char == "[":
            in_class = True
            if pattern.startswith("[^]", index) or pattern.startswith("[]", index):
                index += 2 if pattern[index + 1] == "]" else 3
                continue
        elif char == "(":
            for prefix, message in _GROUPS:
                if pattern.startswith(prefix, index):
                    problems.append(message)
            flags = _INLINE_FLAGS.match(pattern, index)
            if flags and flags.group() not in ("(?:", "(?)"):
                problems.append(f"inline flags {flags.group()} are Python syntax; JavaScript rejects them")
        elif char in "*+?}" and index + 1 < len(pattern) and pattern[index + 1] == "+" and not _escaped(pattern, index):
            problems.append(f"possessive quantifier {char}+ is not JavaScript; it rejects it")
        index += 1
    return list(dict.fromkeys(problems))


def _escaped(pattern: str, index: int) -> bool:
    """Whether the character at `index` is escaped by an odd number of backslashes."""
    slashes = 0
    while index - slashes - 1 >= 0 and pattern[index - slashes - 1] == "\\":
        slashes += 1
    return slashes % 2 == 1
