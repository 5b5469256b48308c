"""Live progress of a run that records: a compact line now and then, written by the controller only.

    skilltransfer: 3/34 items · 412 calls (plan ≤ 1,024) · $0.41 of $5.00 budget · 52 round trip(s) left,
    ends in ~17m20s (~20s each) · 2m13s                                                       (one line)

Items are the transfer items finished of those collected. Calls are the answers this run recorded
(live provider calls, batch answers too; replays do not count) against the plan's upper bound for the
items that talk to a provider (`planning.recording_bound`). Dollars are what was paid: the budget
ledger's settled charge with `--max-cost` (the reservations of calls in flight are shown apart, never
as spend), else the recorded answers priced by their usage; either is the bill the summary prints.
Each process counts what its cassettes record (`cassettes.on_recorded`); an xdist worker publishes its
counts to a JSON file in the run folder the controller names (`state.run_folder`), at most once a second
and at each item's end, and every second while they change (a wait on rate limits or on a batch records
nothing), and the controller sums them. Only the controller writes, a whole line at a time
(`lines.line_writer`), so lines never interleave under `-n`. When the run ends (round trips left, ETA, a wait
on rate limits) is `standing()`, computed once by `reports.run_standing` for the line and the page alike
(`live_page`).

`--skilltransfer-progress` (ini `skilltransfer_progress`): `auto` (default: a line every 10 s on a
terminal, every 60 s in a log, only when something changed, and only when some item can record:
record mode other than `none` and a provider model, or the batch lane; a last line when the session
ends), `off` (no line; the counts are still kept, for a stopped run's report), or seconds. Under `CI=true` replay nothing is recorded, so nothing is printed.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

import pytest

from ..reports.run_standing import Standing, duration, estimate, when_text
from .state import run_folder

MARKER = "skilltransfer"
PUBLISH_EVERY_S = 1.0
TERMINAL_INTERVAL_S, LOG_INTERVAL_S = 10.0, 60.0


@dataclass
class Counts:
    """What one process knows: its collection's items and plan, and the answers it recorded."""

    items: int = 0  # transfer items collected
    live_items: int = 0  # of them, items that talk to a provider
    planned_calls: int = 0  # provider calls those items make at most
    calls: int = 0  # answers recorded
    usd: float = 0.0  # their dollars, where priced
    unpriced: int = 0  # answers without a price
    path_total: int = 0  # round trips on the critical path of the items collected, run one after another
    path_done: int = 0  # round trips this process's critical path has covered
    throttled_since: float = 0.0  # wall time since which a model answers only with rate limits (0: none)
    throttled_until: float = 0.0  # wall time until which new calls wait (the provider's retry-after; 0: none)
    throttled_status: int = 0  # the status it answers with (429, 529, 503)
    batch_turnarounds: list[float] = field(default_factory=list)  # seconds per batch that came back
    batch_waiting_since: float = 0.0  # wall time since which the oldest batch in flight is waited for (0: none)
    workers: int = 0  # the xdist workers of the run (0: no xdist)
    path_longest: int = 0  # the round trips of the process furthest along its critical path


def interval(value: str | None) -> float | None:
    """Seconds between lines (0: `auto`, decided when the session starts), or None when progress is off."""
    text = (value or "auto").strip().lower()
    if text in ("off", "auto"):
        return None if text == "off" else 0.0
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not 0 < seconds < float("inf"):
        raise pytest.UsageError(f"--skilltransfer-progress: expected auto, off or a number of seconds, got {value!r}")
    return seconds


def _auto_interval(config: pytest.Config) -> float:
    reporter = config.pluginmanager.getplugin("terminalreporter")
    return TERMINAL_INTERVAL_S if reporter is not None and reporter.isatty() else LOG_INTERVAL_S


class LiveProgress:
    """The plugin object: counts in every process, publishes on workers, prints on the controller."""

    def __init__(self, config: pytest.Config, every_s: float | None, can_record: bool, batch: bool,
                 budget: Any = None, plan: Callable[[list[pytest.Item]], tuple[int, int]] | None = None,
                 path: Callable[[list[pytest.Item]], int] | None = None) -> None:
        self.config = config
        self.path = path  # round trips on the critical path of the collected items (`planning.critical_path`)
        from ..engine.phases import furthest_on_path

        self._path_start = furthest_on_path()  # the path clock of an earlier session in this process (pytester)
        self.every_s = every_s
        self.can_record = can_record  # record mode other than none
        self.batch = batch
        self.budget = budget
        self.plan = plan
        self.own = Counts()
        self.done = 0
        self.started = time.monotonic()
        self._lock = threading.Lock()
        self._published = 0.0
        self._last_published = ""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_figures: str | None = None
        self._write: Callable[[str], None] | None = None
        self._remove_observer: Callable[[], None] | None = None
        workerinput = getattr(config, "workerinput", None)
        self.worker_id: str | None = workerinput["workerid"] if workerinput else None
        self.own.workers = int(workerinput.get("workercount") or 0) if workerinput else 0
        run = run_folder(config)
        self.folder: Path | None = run / "progress" if run is not None else None
        if self.folder is not None:
            self.folder.mkdir(exist_ok=True)
        from ..cassettes import on_recorded

        self._remove_observer = on_recorded(self._observe)

    # -- counting (every process) --------------------------------------------------------------

    def _observe(self, path: str, request_body: bytes, response_body: bytes) -> None:
        from ..models.spend_gate import lane_of_body
        from ..pricing.prices import lane_of
        from ..models.wire import model_of_request
        from ..planning.answer_cost import answer_usd, provider_of_path

        try:
            body = json.loads(request_body or b"{}")
        except ValueError:
            body = {}
        body = body if isinstance(body, dict) else {}
        model_id = model_of_request(path, body)
        from ..models.providers import answer_lane

        # where it was paid: the batch lane or a synchronous call (each model in its own lane otherwise)
        lane = answer_lane() or ("batch" if lane_of(model_id) == "batch" else lane_of_body(body))
        usd = answer_usd(provider_of_path(path), model_id, response_body, lane)
        with self._lock:
            self.own.calls += 1
            if usd is None:
                self.own.unpriced += 1
            else:
                self.own.usd += usd
        self._publish()

    def _publish(self, force: bool = False) -> None:
        """A worker writes its counts for the controller (atomically; at most once a second unless forced)."""
        if self.worker_id is None or self.folder is None:
            return
        now = time.monotonic()
        with self._lock:
            if not force and now - self._published < PUBLISH_EVERY_S:
                return
            self._published = now
            self._refresh_locked()
            text = json.dumps(asdict(self.own))
            if text == self._last_published and not force:
                return
            self._last_published = text
        target = self.folder / f"{self.worker_id}.json"
        try:
            with tempfile.NamedTemporaryFile("w", dir=self.folder, prefix=".", suffix=".tmp", delete=False) as tmp:
                tmp.write(text)
            os.replace(tmp.name, target)
        except OSError:
            pass  # a progress figure; the run goes on

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        items = [item for item in session.items if item.get_closest_marker(MARKER) is not None]
        try:
            live, planned = self.plan(items) if self.plan is not None and self.can_record else (0, 0)
        except Exception:  # noqa: BLE001 - a broken seed is reported by its own item; progress goes without a plan
            live, planned = 0, 0
        try:
            path = self.path(items) if self.path is not None else 0
        except Exception:  # noqa: BLE001 - as above: progress goes without an ETA
            path = 0
        with self._lock:
            self.own.items, self.own.live_items, self.own.planned_calls = len(items), live, planned
            self.own.path_total = path
        self._publish(force=True)

    def pytest_runtest_logfinish(self) -> None:
        self._publish(force=True)

    # -- printing (the controller, or the only process) -----------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> None:
        """The controller (or the only process) starts printing as the items start (an xdist controller
        registers this plugin only once its workers have started, after the session start). A worker
        publishes its counts every second while they change: a wait (rate limits, a batch) records nothing."""
        if self.worker_id is not None and self._thread is None:
            self._thread = threading.Thread(target=self._run_publishing, name="skilltransfer-progress", daemon=True)
            self._thread.start()
            return
        if self.worker_id is not None or self._thread is not None or self.every_s is None:
            return  # progress `off` (the counts are still kept, for an interrupted run's report)
        from .lines import line_writer

        self._write = line_writer(self.config)
        self.every_s = self.every_s or _auto_interval(self.config)
        self._thread = threading.Thread(target=self._run, name="skilltransfer-progress", daemon=True)
        self._thread.start()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self.worker_id is None and report.when == "teardown" and MARKER in report.keywords:
            with self._lock:
                self.done += 1

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self._publish(force=True)
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join(timeout=5)
        self._thread = None
        if self.worker_id is None:
            self._print(force=True)  # the last word: where the run ended

    def pytest_unconfigure(self) -> None:
        if self._remove_observer is not None:
            self._remove_observer()

    def _run_publishing(self) -> None:
        while not self._stop.wait(PUBLISH_EVERY_S):
            self._publish()

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            self._print()

    def _print(self, force: bool = False) -> None:
        standing = self.standing()
        line = self.line(standing)
        # the line without its times (elapsed, ETA, waits): a line is written when a figure changed, and on every
        # tick while the run waits on rate limits (how long it has waited is the news)
        figures = _TIMES.sub("T", line.rsplit(" · ", 1)[0]) if line else None
        if line is None or self._write is None or (figures == self._last_figures and not force
                                                   and standing.throttled_s is None):
            return
        self._last_figures = figures
        self._write(line)

    def paid(self) -> dict[str, Any]:
        """What the run paid so far, as the progress line shows it: the budget's settled charge with
        `--max-cost`, else the recorded answers priced by their usage."""
        counts = self.totals()
        usd = self.budget.state().settled_usd if self.budget is not None else counts.usd
        return {"usd": round(usd, 6), "answers": counts.calls, "unpriced": counts.unpriced}

    def _refresh_locked(self) -> None:
        """This process's place on its critical path, its rate-limit wait and its batches, as of now."""
        from ..engine.phases import furthest_on_path
        from ..models.batch import active_lane
        from ..models.limiter import LIMITERS

        self.own.path_done = self.own.path_longest = max(0, furthest_on_path() - self._path_start)
        self.own.throttled_since = LIMITERS.throttled_since() or 0.0
        self.own.throttled_until = LIMITERS.throttled_until() or 0.0
        self.own.throttled_status = LIMITERS.throttled_status() or 0
        lane = active_lane()
        turnarounds, waiting_since = lane.observed() if lane is not None else ([], None)
        self.own.batch_turnarounds, self.own.batch_waiting_since = turnarounds, waiting_since or 0.0

    def totals(self) -> Counts:
        """The run's counts: this process's, plus every worker's publication (`path_total` and `path_done`
        per process: the run's critical path is its workers' longest, each running a share of the items)."""
        with self._lock:
            self._refresh_locked()
            total = Counts(**asdict(self.own))
        workers = 0
        for path in sorted(self.folder.glob("gw*.json")) if self.folder is not None else []:
            try:
                theirs = Counts(**json.loads(path.read_text(encoding="utf-8")))
            except (OSError, ValueError, TypeError):
                continue
            workers += 1
            total.items = max(total.items, theirs.items)  # every worker collects every item
            total.live_items = max(total.live_items, theirs.live_items)
            total.planned_calls = max(total.planned_calls, theirs.planned_calls)
            total.calls += theirs.calls
            total.usd += theirs.usd
            total.unpriced += theirs.unpriced
            total.path_total = max(total.path_total, theirs.path_total)
            total.path_done += theirs.path_done
            total.path_longest = max(total.path_longest, theirs.path_done)
            total.workers = max(total.workers, theirs.workers)
            if theirs.throttled_since and (not total.throttled_since or theirs.throttled_since < total.throttled_since):
                total.throttled_since, total.throttled_status = theirs.throttled_since, theirs.throttled_status
            total.throttled_until = max(total.throttled_until, theirs.throttled_until)
            total.batch_turnarounds += theirs.batch_turnarounds
            if theirs.batch_waiting_since and (not total.batch_waiting_since
                                               or theirs.batch_waiting_since < total.batch_waiting_since):
                total.batch_waiting_since = theirs.batch_waiting_since
        if workers:  # the items (and their round trips) are shared out among the workers (all of them, also
            workers = max(workers, total.workers)  # before each has published)
            total.path_total = -(-total.path_total // workers)
            total.path_done = -(-total.path_done // workers)
        return total

    def standing(self, state: str = "running") -> Standing:
        """The run's standing now: what the line prints and the page shows (`reports.run_standing`)."""
        counts = self.totals()
        with self._lock:
            done = self.done
        if self.budget is not None:
            budget = self.budget.state()
            paid: tuple[float, float | None, float] = (budget.settled_usd, self.budget.limit_usd, budget.open_usd)
        else:
            paid = (counts.usd, None, 0.0)
        return estimate(counts, time.monotonic() - self.started, time.time(), done, state, self.batch, paid)

    def shown(self) -> bool:
        """Whether this run records something to watch (else no line)."""
        counts = self.totals()
        return self.can_record and bool(counts.live_items or self.batch)

    def line(self, standing: Standing | None = None) -> str | None:
        """The progress line now, or None when this run records nothing (nothing to watch)."""
        if not self.shown():
            return None
        s = standing or self.standing()
        calls = f"{s.calls:,} call{'' if s.calls == 1 else 's'}" + (f" (plan ≤ {s.planned_calls:,})" if s.planned_calls else "")
        if s.budget_usd is not None:
            dollars = f"${s.usd:,.2f} of ${s.budget_usd:,.2f} budget" + (
                f" (${s.reserved_usd:,.2f} reserved for calls in flight)" if s.reserved_usd else "")
        else:
            dollars = f"${s.usd:,.2f}" + (f" + {s.unpriced:,} unpriced" if s.unpriced else "")
        lane = " · batch lane" if self.batch else ""
        return (f"skilltransfer: {s.items_done}/{s.items} items · {calls} · {dollars}{lane}"
                f"{when_text(s)} · {duration(s.elapsed_s)}")


_TIMES = re.compile(r"\b\d+h\d\dm\b|\b\d+m\d\ds\b|\b\d+s\b")


def register(config: pytest.Config, settings: Any, runner: Any, spec_of: Callable[[pytest.Item], Any]) -> None:
    """Add the live progress to an engaged run that records (`--skilltransfer-progress off` counts without
    printing: a stopped run's report still says what was paid)."""
    from ..cassettes import default_record_mode
    from . import batch_setup
    from .options import _Reader

    value, _ = _Reader(config).get("skilltransfer-progress")
    every = interval(value)  # None (off): counted, never printed
    mode = settings.record_mode or default_record_mode()
    batch_lane = batch_setup.read(config) is not None
    if (mode == "none" and not batch_lane) or settings.plan or config.option.collectonly:
        return  # replay only, a plan or a collection: nothing is recorded, nothing to watch
    from .planning import recording_bound  # (the planner: only a run that records shows progress)

    from .planning import critical_path

    progress = LiveProgress(config, every, mode != "none", batch_lane, runner.budget,
                            lambda items: recording_bound(runner, items, spec_of),
                            lambda items: critical_path(runner, items, spec_of))
    config.pluginmanager.register(progress, "skilltransfer-progress")
