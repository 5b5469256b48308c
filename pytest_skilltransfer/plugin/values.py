"""Parsing option values: numbers with their bounds, thresholds that may be off, fractions, booleans, paths,
durations, model pairs and name lists; a bad value raises `pytest.UsageError` naming where it came from."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ..guards.bounds import over_maximum

Pair = tuple[str, str]  # (source, target)
OFF_WORDS = ("off", "none")


def split_names(values: list[str] | None) -> list[str]:
    """Flatten repeated and comma-separated names, dropping blanks, keeping order, without duplicates."""
    names: list[str] = []
    for value in values or []:
        for name in str(value).split(","):
            if name.strip() and name.strip() not in names:
                names.append(name.strip())
    return names


def parse_pair(text: str, where: str) -> Pair:
    """`SRC->TGT`, or `SRC:TGT` when neither name holds a colon (`anthropic:<id>` names need `->`)."""
    from ..engine.seed_data import split_pair

    pair = split_pair(text)
    if pair is None:
        raise pytest.UsageError(f"{where}: expected SRC:TGT or SRC->TGT (e.g. sim-small:sim-large; use -> when a "
                                f"name holds a colon, e.g. anthropic:claude-haiku-5-5->sonnet), got {text!r}")
    return pair


def _int(value: Any, where: str, low: int, bound: str | None = None) -> int:
    """An integer of at least `low` and, with `bound` (a key of `bounds.MAXIMA`), at most its documented maximum."""
    text = str(value).strip()
    if len(text) > 40:  # int() of a huge digit string is slow; no setting needs one
        raise pytest.UsageError(f"{where}: expected an integer, got a {len(text)}-character value")
    try:
        number = int(text)
    except ValueError:
        raise pytest.UsageError(f"{where}: expected an integer, got {value!r}") from None
    if number < low:
        raise pytest.UsageError(f"{where}: must be at least {low}, got {number}")
    too_many = over_maximum(bound, number) if bound else None
    if too_many:
        raise pytest.UsageError(f"{where}: {too_many}; use a smaller value (a run beyond it could not finish)")
    return number


def _threshold(value: Any, where: str) -> float | None:
    if str(value).strip().lower() in OFF_WORDS:
        return None
    try:
        return float(str(value).strip())
    except ValueError:
        raise pytest.UsageError(f"{where}: expected a number or 'off', got {value!r}") from None


def _fraction(value: Any, where: str) -> float:
    try:
        number = float(str(value).strip())
    except ValueError:
        raise pytest.UsageError(f"{where}: expected a number within [0, 1], got {value!r}") from None
    if not 0 <= number <= 1:
        raise pytest.UsageError(f"{where}: must be within [0, 1], got {number}")
    return number


def _bool(value: Any, where: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise pytest.UsageError(f"{where}: expected true or false, got {value!r}")


def _path(value: Any, base: Path) -> Path:
    path = Path(str(value)).expanduser()
    return path if path.is_absolute() else base / path


def _seconds(value: Any, where: str) -> float:
    try:
        number = float(str(value).strip())
    except ValueError:
        raise pytest.UsageError(f"{where}: expected a number of seconds, got {value!r}") from None
    if not number > 0 or number == float("inf"):
        raise pytest.UsageError(f"{where}: must be a positive number of seconds, got {value!r}")
    from ..guards.bounds import MAX_SECONDS

    if number > MAX_SECONDS:
        raise pytest.UsageError(f"{where}: must be at most {MAX_SECONDS:g} seconds (a week, the documented maximum), "
                                f"got {value!r}")
    return number
