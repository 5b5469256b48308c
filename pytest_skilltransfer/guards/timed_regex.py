"""Regex work on patterns a seed provides, bounded in time.

A pattern from a seed file is untrusted input: `^(\\w+\\s?)+[^\\w\\s]{2}Q$` backtracks for hours on a
short line. Every search on such a pattern goes through `search`, which uses the `regex` library's
`timeout=` (the standard `re` module has none) and raises `PatternTimeout` when it runs past the
limit. The caller degrades that one step (a check fails, a template is not learned) and warns with
`RegexTimeoutWarning`, naming file, line and pattern where it knows them.
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Callable, Iterator

import regex

from .regex_size import too_large

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

    A pattern that does not compile raises `regex.error`, as `regex.compile` does, and so does one whose
    compiling would take long itself (`regex_size`: compiling has no time limit).
    """
    seconds = timeout or TIMEOUT_SECONDS
    why = too_large(pattern)
    if why:
        raise regex.error(why)
    try:
        return regex.compile(pattern, flags).search(text, timeout=seconds)
    except TimeoutError:
        raise PatternTimeout(pattern, seconds) from None


_ORIGINS: ContextVar[Callable[[str], list[str]] | None] = ContextVar("pattern_origins", default=None)


@contextmanager
def origins_of_patterns(resolve: Callable[[str], list[str]]) -> Iterator[None]:
    """While inside, a timeout warning names the files and lines `resolve(pattern)` gives for its pattern.

    For a layer that reads only a request's text (a simulated model reading its optimizer prompt): the
    caller that built the request knows where each pattern came from. Per thread and context, so
    phases running at the same time do not see each other's."""
    token = _ORIGINS.set(resolve)
    try:
        yield
    finally:
        _ORIGINS.reset(token)


def warn_timeout(where: str, exc: PatternTimeout, consequence: str, stacklevel: int = 2) -> None:
    """Warn that `exc.pattern` ran past its limit, naming where it came from (`origins_of_patterns`, else `where`)."""
    resolve = _ORIGINS.get()
    origins = resolve(exc.pattern) if resolve else []
    warnings.warn(RegexTimeoutWarning(
        f"{', '.join(origins) or where}: regex {exc.pattern!r} ran past its {exc.seconds:g} s limit; {consequence} "
        "and the run goes on. Simplify the pattern (nested or overlapping repeats such as (a|aa)+ backtrack "
        "exponentially).", exc.pattern), stacklevel=stacklevel + 1)
