"""Run-scoped configuration: what one pytest run sets up — the project's model aliases, the judge ops, model
families, gates and cassette scrubbers its `pytest_skilltransfer_configure` hook registers — lives on one
`RunScope` object, not in module globals, so nothing one run configures reaches the next in the same process
(pytester's in-process runs, a test runner embedding pytest).

A module that keeps run configuration declares a store, `_aliases = Scoped("aliases", dict)`, and reads it
as `_aliases()`: the store of the scope in force. The plugin makes a scope per run (kept in the config's
stash) and puts it in force from `pytest_configure` to `pytest_unconfigure`; a nested in-process run puts
its own in force and leaves the outer one's as it found it. Outside any run (a command, a library call) the
process's own scope is in force. Threads a run starts see the run's scope.

Held per run: aliases and the URL of a local model server the run started (`models.aliases`), prices, free
models and lanes (`pricing.prices`), the call policy (`models.sdk_common`), the limiters (`models.limiter`),
the batch lane (`models.batch`), registered judge ops, model families and gates, cassette scrubbers, what
starts a local server on demand (`models.providers`), the SDK clients the run built (`models.sdk_common`;
closed when the run ends). Kept for the process on purpose: the secrets redaction
knows (`guards.redaction`; forgetting one when a run ends could only let it reach a file later) and what code
registers as it is imported (the built-in model families, a conftest's `register_family` at import).
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Generic, TypeVar

T = TypeVar("T")


class RunScope:
    """One run's configuration stores, made on first use."""

    def __init__(self, name: str = "run") -> None:
        self.name = name
        self._stores: dict[str, Any] = {}
        self._on_leave: list[Callable[[], None]] = []
        self._lock = threading.Lock()

    def on_leave(self, callback: Callable[[], None]) -> None:
        """Run `callback` when the scope ends (e.g. close what the run opened); the process's at exit."""
        with self._lock:
            first = not self._on_leave
            self._on_leave.append(callback)
        if first and self is _PROCESS:
            import atexit

            atexit.register(self.close)

    def close(self) -> None:
        """Run the scope's leave callbacks once, newest first; one failing does not stop the others."""
        with self._lock:
            callbacks, self._on_leave = self._on_leave[::-1], []
        for callback in callbacks:
            try:
                callback()
            except Exception:  # noqa: BLE001 - closing must not fail the run's end
                pass

    def store(self, key: str, factory: Callable[[], T]) -> T:
        with self._lock:
            if key not in self._stores:
                self._stores[key] = factory()
            return self._stores[key]


_PROCESS = RunScope("process")
_in_force: list[RunScope] = []  # innermost last: a nested in-process run's scope over its caller's
_force_lock = threading.Lock()


def current() -> RunScope:
    """The scope in force: the innermost running run's, else the process's."""
    with _force_lock:
        return _in_force[-1] if _in_force else _PROCESS


def enter(scope: RunScope) -> None:
    """Put a run's scope in force (until `leave`)."""
    with _force_lock:
        _in_force.append(scope)


def leave(scope: RunScope) -> None:
    """End a run's scope; the scope in force before it is in force again."""
    with _force_lock:
        if scope in _in_force:
            _in_force.remove(scope)
    scope.close()


class Scoped(Generic[T]):
    """A module's handle on one store of the scope in force: `handle()` is that store."""

    def __init__(self, key: str, factory: Callable[[], T]) -> None:
        self.key = key
        self.factory = factory

    def __call__(self) -> T:
        return current().store(self.key, self.factory)
