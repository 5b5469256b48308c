"""A stopped run sends nothing more: once `halt(reason)` is called, no model request leaves this process.

The plugin halts a process when the run is stopped (SIGINT or SIGTERM to it or to another process of
the run, or its xdist controller gone). Every HTTP request an SDK client builds passes
`refuse_if_halted` first (a retry too), and the batch lane neither parks, submits nor waits once
halted, so a request already on the wire is the last one: its answer is still received and
recorded (it is paid), every later call fails at once with `RunStopped`.
"""

from __future__ import annotations

import threading

from .base import ModelCallError

_reason: list[str] = []
_lock = threading.Lock()
_halted = threading.Event()


class RunStopped(ModelCallError):
    """The run was stopped: this call was not sent."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"not sent: the run was stopped ({reason}). Answers already paid are recorded; "
                         "run the same command again to go on without paying for them twice.")


def halt(reason: str) -> None:
    """Send no more model requests from this process (the first reason is kept)."""
    with _lock:
        if not _reason:
            _reason.append(reason)
        _halted.set()


def halted() -> str | None:
    """Why this process was halted, or None while it may send."""
    return _reason[0] if _halted.is_set() else None


def refuse_if_halted() -> None:
    """Raise `RunStopped` when this process was halted."""
    if _halted.is_set():
        raise RunStopped(_reason[0])


def resume() -> None:
    """Forget a halt (a new run in the same process, as pytester's in-process runs are)."""
    with _lock:
        _reason.clear()
        _halted.clear()
