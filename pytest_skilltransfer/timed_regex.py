"""Regex work on patterns a seed provides, bounded in time.

A pattern from a seed file is untrusted input: `^(\\w+\\s?)+[^\\w\\s]{2}Q$` backtracks for hours on a
short line. Every search on such a pattern goes through `search`, which uses the `regex` library's
`timeout=` (the standard `re` module has none) and raises `PatternTimeout` when it runs past the
limit. The caller degrades that one step (a check fails, a template is not learned) and warns with
`RegexTimeoutWarning`, naming file, line and pattern where it knows them.
"""

from __future__ import annotations

import warnings
from typing import Callable, Iterable

import regex

TIMEOUT_SECONDS = 1.0


class PatternTimeout(Exception):
    """A search on a seed-provided pattern ran past its time limit."""

    def __init__(self, pattern: str, seconds: float):
        super().__init__(f"regex {pattern!r} ran past its {seconds:g} s limit")
        self.pattern = pattern
        self.seconds = seconds


class RegexTimeoutWarning(UserWarning):
    """A seed-provided regex ran past its time limit; that one step was degraded and the run went on."""

    def __init__(self, message: str, pattern: str = ""):
        super().__init__(message)
        self.pattern = pattern


def search(pattern: str, text: str, flags: int = 0, timeout: float | None = None) -> "regex.Match[str] | None":
    """`regex.search(pattern, text, flags)` within `timeout` seconds (default TIMEOUT_SECONDS), else PatternTimeout.

    A pattern that does not compile raises `regex.error`, as `regex.compile` does.
    """
    seconds = timeout or TIMEOUT_SECONDS
    try:
        return regex.compile(pattern, flags).search(text, timeout=seconds)
    except TimeoutError:
        raise PatternTimeout(pattern, seconds) from None


def warn_timeout(where: str, exc: PatternTimeout, consequence: str, stacklevel: int = 2) -> None:
    """Warn that `exc.pattern` (from `where`: file and line, or a description) ran past its limit."""
    warnings.warn(RegexTimeoutWarning(
        f"{where}: regex {exc.pattern!r} ran past its {exc.seconds:g} s limit; {consequence} and the run goes on. "
        "Simplify the pattern (nested or overlapping repeats such as (a|aa)+ backtrack exponentially).",
        exc.pattern), stacklevel=stacklevel + 1)


def reissue_with_origins(caught: Iterable[warnings.WarningMessage], origins: Callable[[str], list[str]]) -> None:
    """Warn again what `warnings.catch_warnings(record=True)` caught, naming for each timed-out pattern
    the files and lines it came from (`origins(pattern)`), so a layer that reads only a request's text
    (a simulated model) still gets its warning pointed at the seed file."""
    for item in caught:
        message = item.message
        if isinstance(message, RegexTimeoutWarning) and message.pattern and origins(message.pattern):
            where = ", ".join(origins(message.pattern))
            message = RegexTimeoutWarning(f"{where}: {message}", message.pattern)
        warnings.warn_explicit(message, item.category, item.filename, item.lineno)
