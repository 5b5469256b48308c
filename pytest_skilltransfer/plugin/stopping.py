"""Stop means stop: SIGINT or SIGTERM to any process of a run stops new model requests in every process.

The first SIGINT or SIGTERM a process receives (the controller, an xdist worker, or the only process)
is turned into an orderly stop instead of an exit:

- the process sends no more model requests (`models.halt`): a call not yet sent fails at once, a
  request already on the wire is answered and recorded (it is paid), batches in flight stay at the
  provider and in the manifest for the next run to collect;
- under xdist it writes `stop` in the run folder; every process of the run watches that file (and a
  worker also its controller: a worker whose controller is gone stops too) every `WATCH_S`, so every
  process stops within a fraction of a second;
- pytest stops after the item running (`session.shouldstop`), which ends at once as its calls fail;
  the session then finishes as interrupted (exit status 2) and the controller writes the reports,
  marked interrupted with what was paid (`interruption`).

A second signal interrupts at once (KeyboardInterrupt), as pytest does without this plugin. The next
run with the same command resumes: what was paid is in the cassettes and is not paid again.
"""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path
from typing import Any

import pytest

from ..models.halt import halt, resume
from .state import run_folder

WATCH_S = 0.1
STOP_FILE = "stop"
SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopOnSignal:
    """The plugin object of one process (see the module docstring)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.session: pytest.Session | None = None
        self.reason: str | None = None
        workerinput = getattr(config, "workerinput", None)
        self.where = f"worker {workerinput['workerid']}" if workerinput else "the controller"
        self.worker = workerinput is not None
        self._previous: dict[int, Any] = {}
        self._done = threading.Event()
        self._watcher: threading.Thread | None = None
        self._parent = os.getppid()
        resume()  # a new run (pytester runs several in one process)
        self._install()

    # -- receiving the stop ----------------------------------------------------------------------

    def _install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return  # only the main thread may handle signals (an embedding that runs pytest in a thread)
        for signum in SIGNALS:
            try:
                self._previous[signum] = signal.signal(signum, self._on_signal)
            except (ValueError, OSError):
                pass

    def _restore(self) -> None:
        for signum, previous in self._previous.items():
            try:
                signal.signal(signum, previous if previous is not None else signal.SIG_DFL)
            except (ValueError, OSError, TypeError):
                pass
        self._previous.clear()

    def _on_signal(self, signum: int, frame: Any) -> None:
        name = signal.Signals(signum).name
        if self.reason is not None:  # the second signal: stop now
            self._restore()
            raise KeyboardInterrupt(f"{name} received again")
        self.stop(f"{name} to {self.where}")

    def stop(self, reason: str) -> None:
        """Send nothing more, tell the other processes, and end the session after the item running."""
        if self.reason is not None:
            return
        self.reason = reason
        halt(reason)
        if self.session is not None:
            self.session.shouldstop = f"stopped: {reason}"
        folder = run_folder(self.config)
        if folder is not None and not (folder / STOP_FILE).exists():
            try:
                (folder / STOP_FILE).write_text(reason, encoding="utf-8")
            except OSError:
                pass  # the others still stop when their controller ends

    def _watch(self, folder: Path | None) -> None:
        while not self._done.wait(WATCH_S):
            if folder is not None and (folder / STOP_FILE).exists():
                try:
                    told = (folder / STOP_FILE).read_text(encoding="utf-8").strip()
                except OSError:
                    told = ""
                self.stop(told or "a stop in another process")
                return
            if self.worker and os.getppid() != self._parent:
                self.stop("the xdist controller ended")
                return

    # -- hooks --------------------------------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.session = session
        folder = run_folder(self.config)
        if self.reason is not None:
            session.shouldstop = f"stopped: {self.reason}"
        if folder is not None or self.worker:
            self._watcher = threading.Thread(target=self._watch, args=(folder,), name="skilltransfer-stop",
                                             daemon=True)
            self._watcher.start()

    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        """A KeyboardInterrupt itself (a second signal, or a SIGINT this plugin did not handle) is a stop
        too; pytest's and xdist's `Interrupted` (`-x` under xdist, `--stepwise`) are not."""
        if type(excinfo.value) is KeyboardInterrupt and self.reason is None:
            self.reason = "KeyboardInterrupt"

    def pytest_unconfigure(self) -> None:
        self._done.set()
        self._restore()
        resume()  # the run is over (a process that runs pytest again, as pytester does, may send again)

    def told(self) -> str | None:
        """Why the run stopped: this process's signal, or the one another process wrote, else None."""
        if self.reason is not None:
            return self.reason
        folder = run_folder(self.config)
        if folder is None:
            return None
        try:
            return (folder / STOP_FILE).read_text(encoding="utf-8").strip() or None
        except OSError:
            return None


def register(config: pytest.Config) -> None:
    """Add the stop handling to an engaged run (every process)."""
    if config.pluginmanager.get_plugin(PLUGIN_NAME) is None:
        config.pluginmanager.register(StopOnSignal(config), PLUGIN_NAME)


PLUGIN_NAME = "skilltransfer-stop"


def interruption(config: pytest.Config) -> dict[str, Any] | None:
    """What the reports say of a stopped run: why, and what was paid (the live counts' bill: the budget's
    ledger with `--max-cost`, else the recorded answers priced by their usage); None for a run that ended."""
    stopper = config.pluginmanager.get_plugin(PLUGIN_NAME)
    why = stopper.told() if stopper is not None else None
    if why is None:
        return None
    progress = config.pluginmanager.get_plugin("skilltransfer-progress")
    paid = progress.paid() if progress is not None else {"usd": 0.0, "answers": 0, "unpriced": 0}
    return {"by": why, "paid_usd": paid["usd"], "answers": paid["answers"],
            "unpriced": paid["unpriced"],
            "resume": "run the same command again: answers already paid are in the cassettes and are not paid "
                      "again; batches in flight are collected"}


def interruption_line(info: dict[str, Any]) -> str:
    """One line for the terminal and the Markdown report."""
    unpriced = f" + {info['unpriced']} unpriced" if info.get("unpriced") else ""
    return (f"INTERRUPTED ({info['by']}): ${info['paid_usd']:.4f}{unpriced} paid for {info['answers']} answer(s) "
            f"recorded; {info['resume']}")

