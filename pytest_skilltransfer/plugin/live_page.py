"""The page of a running run: `--skilltransfer-html` is written while a recording run goes, not only at its end.

While items run, the controller (or the only process) writes the page as each transfer item finishes and
on a timer (`PAGE_EVERY_S`, or the progress interval when one is given in seconds): where the run stands
(items done and left, the round trips left on the critical path, the ETA, a rate-limit wait, when it
started, when the page was written) and the items finished so far (`html_report.render_running`); the
browser reloads it while the run goes. Each write replaces the file whole (`reporting.write`), so a
browser never reads half a page. When the session ends, the reports write the finished page (with the
run's wall time and the round trips it took) in its place.

Every figure is the live progress's (`live_progress.LiveProgress.standing`): the page computes none of its
own. Only runs that show progress (they record) write the page as they go; a replay's page is written once,
at the end, as before.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

PAGE_EVERY_S = 10.0
SOON_S = 0.5  # items finishing together: one write for them


class LivePage:
    """Writes the running page from the controller (see the module docstring)."""

    def __init__(self, progress: Any, reporting: Any, path: Path, every_s: float) -> None:
        self.progress = progress
        self.reporting = reporting
        self.path = path
        self.every_s = every_s
        self._due = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._closed = False  # the session ended: the finished page is the reports' to write

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> None:
        """Start writing as the items start (before pytest's or xdist's loop, which runs them)."""
        if self._thread is None:
            self.write()
            self._thread = threading.Thread(target=self._run, name="skilltransfer-page", daemon=True)
            self._thread.start()

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        from .live_progress import MARKER

        if report.when == "teardown" and MARKER in report.keywords:
            self._due.set()

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Stop writing: the reports write the finished page next (`reporting.TransferReporting`)."""
        self._stop.set()
        self._due.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        with self._lock:  # a write under way ends first; none comes after
            self._closed = True

    def _run(self) -> None:
        last = time.monotonic()
        while not self._stop.is_set():
            woken = self._due.wait(timeout=max(0.0, self.every_s - (time.monotonic() - last)))
            if self._stop.is_set():
                return
            if woken:
                self._stop.wait(SOON_S)  # the items that finish with it go on the same page
                if self._stop.is_set():
                    return
                self._due.clear()
            self.write()
            last = time.monotonic()

    def write(self) -> None:
        """The running page now, replacing the file whole."""
        from ..reports.html_report import render_running
        from .reporting import errored, write

        if not self.progress.shown():
            return  # nothing recorded here (in-process models only): the page is written once, at the end
        results, errors = list(self.reporting.results.values()), errored(dict(self.reporting.errors))
        text = render_running(results, errors, self.progress.standing(), self.every_s)
        with self._lock:
            if self._closed:
                return
            try:
                write(self.path, text)
            except OSError:
                pass  # a page of a running run; the run goes on, and the finished page is written at its end


def register(config: pytest.Config, reporting: Any) -> None:
    """Write the page as the run goes when it has one, shows progress (it records) and this is the controller."""
    progress = config.pluginmanager.get_plugin("skilltransfer-progress")
    path = reporting.settings.html_path
    if progress is None or path is None or progress.worker_id is not None:
        return
    every = progress.every_s if progress.every_s else PAGE_EVERY_S  # a number of seconds given, else 10 s
    config.pluginmanager.register(LivePage(progress, reporting, path, every), "skilltransfer-page")
