"""How large a regex grows when compiled: counted repeats (`x{1000}`) are unrolled, so nesting multiplies.

Matching a seed's regex has a time limit (the `regex` library's timeout), but compiling it has none:
`(a{1000}){1000}` takes seconds and `(?:x{50000}){50000}` does not finish. `expanded_size` estimates
the unrolled size from the pattern text alone (each atom 1, a group the sum of its items, a counted
repeat times its largest count) in one linear pass, so a pattern can be refused before it is compiled.
Unbounded repeats (`*`, `+`, `{n,}`) are loops, not copies, and count their minimum.
"""

from __future__ import annotations

import re

MAX_EXPANDED_SIZE = 100_000  # compiles in well under a second; a judge regex needs a tiny fraction of it
_COUNT = re.compile(r"\{(\d{1,12})(?:,(\d{0,12}))?\}")


def _class_end(pattern: str, start: int) -> int:
    """The index after the `]` closing the character class that opens at `start`."""
    i = start + 1
    if i < len(pattern) and pattern[i] == "^":
        i += 1
    if i < len(pattern) and pattern[i] == "]":
        i += 1
    depth = 1
    while i < len(pattern) and depth:
        if pattern[i] == "\\":
            i += 2
            continue
        if pattern[i] == "[":  # the `regex` library's nested sets
            depth += 1
        elif pattern[i] == "]":
            depth -= 1
        i += 1
    return i


def expanded_size(pattern: str) -> int:
    """About how many items `pattern` unrolls to when compiled (see the module docstring)."""
    stack: list[list[int]] = [[0, 0]]  # per open group: [sum of its finished items, weight of the last item]
    i, n = 0, len(pattern)
    while i < n:
        char = pattern[i]
        count = _COUNT.match(pattern, i) if char == "{" else None
        if count is not None:
            low, high = int(count.group(1)), count.group(2)
            times = low if high is None or high == "" else max(low, int(high))
            frame = stack[-1]
            frame[0] += frame[1] * (times - 1)
            frame[1] *= times
            i = count.end()
            continue
        if char == "(":
            stack.append([0, 0])
        elif char == ")" and len(stack) > 1:
            inner = stack.pop()
            weight = max(inner[0], 1)
            stack[-1][0] += weight
            stack[-1][1] = weight
        elif char == "[":
            i = _class_end(pattern, i)
            stack[-1][0] += 1
            stack[-1][1] = 1
            continue
        elif char == "\\":
            stack[-1][0] += 1
            stack[-1][1] = 1
            i += 2
            continue
        elif char not in "*+?|^$":
            stack[-1][0] += 1
            stack[-1][1] = 1
        i += 1
    while len(stack) > 1:
        inner = stack.pop()
        stack[-1][0] += max(inner[0], 1)
    return stack[0][0]


def too_large(pattern: str) -> str | None:
    """Why `pattern` may not be compiled (it unrolls past `MAX_EXPANDED_SIZE`), or None."""
    size = expanded_size(pattern)
    if size <= MAX_EXPANDED_SIZE:
        return None
    return (f"its counted repeats unroll to about {size:,} items when compiled (limit {MAX_EXPANDED_SIZE:,}); "
            "lower the {n} counts or use * or +")
