"""The page of a running run: a recording run under -n 2 rewrites --skilltransfer-html as it goes (items done and
left, round trips left, ETA, how long it has waited on rate limits; reloading in the browser), and its finished
page says when it ended, its wall time and the round trips it took, and no longer reloads. Opened in Debian's
chromium; the screenshots land in the test's temp folder."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Any, Iterator

import pytest
from browser_support import launched_browser, open_page
from fake_provider import Failure, FakeProvider
from plugin_support import TOY_CONFTEST, make_seed

# The controller tells the provider to start answering with rate limits when the first item has ended (every
# later item waits for that, so calls certainly meet them); once its progress line has said it is waiting twice
# and its page says so, it keeps that page and lets the provider answer again. Waits are on events (files, lines
# written), never on a clock.
RATE_LIMITED_MIDWAY = """
import shutil
import threading
import time
from pathlib import Path

import pytest

_CONFIG = []
_STARTED = []


def pytest_configure(config):
    _CONFIG.append(config)


def _controller():
    return not hasattr(_CONFIG[0], "workerinput")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_logreport(report):
    if report.when == "teardown" and _controller():
        Path("throttle").touch()


def _until(done, what):
    waited = time.monotonic()
    while not done():
        assert time.monotonic() - waited < 120, what
        time.sleep(0.01)


def pytest_runtest_setup(item):
    _STARTED.append(item.nodeid)
    if len(_STARTED) > 1:  # a process's later items start once the rate limits have
        _until(Path("throttle").exists, "no item ended")


def _keep_the_waiting_page():
    progress = _CONFIG[0].pluginmanager.get_plugin("skilltransfer-progress")
    page = Path("report.html")
    _until(lambda: progress._write is not None, "the progress line never started")
    write, said = progress._write, []

    def counted(line):
        said.extend(["waiting"] if "waiting on rate limits" in line else [])
        write(line)

    progress._write = counted

    def waiting():  # said on two ticks in a row (the wait is news on every tick), and on the page
        shown = page.read_text(encoding="utf-8") if page.exists() else ""
        return len(said) >= 2 and "Waiting on rate limits" in shown

    _until(waiting, "neither the line nor the page said the run waits on rate limits")
    shutil.copy(page, "running.html")
    Path("go").touch()


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session):
    if _controller():
        threading.Thread(target=_keep_the_waiting_page, daemon=True).start()
"""


class RateLimitedMidway(FakeProvider):
    """Answers 429 (retry after 250 ms) from when the file `throttle` exists until the file `go` does."""

    def __init__(self, folder: Path) -> None:
        super().__init__()
        self.folder = folder
        self.throttled = 0

    def next_failure(self) -> Failure | None:
        if (self.folder / "throttle").exists() and not (self.folder / "go").exists():
            with self._lock:
                self.throttled += 1
            return Failure(429, 250)
        return super().next_failure()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from launched_browser()


@pytest.fixture(autouse=True)
def _recording_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)  # CI=true would make every run replay only


def test_the_page_of_a_running_run_then_of_the_finished_run(pytester: pytest.Pytester, browser: Any) -> None:
    with RateLimitedMidway(pytester.path) as fake:
        fake.delay = 0.01
        pytester.makeini("[pytest]\nskilltransfer_limit_replay = 0\nskilltransfer_limit_holdout = 0\n")
        remote = f'remote = "anthropic:fake-small@{fake.anthropic_url}"'
        pytester.makepyprojecttoml(f"[tool.skilltransfer.models]\n{remote}\n")
        for name in ("alpha", "beta", "gamma"):
            make_seed(pytester.path / "seeds", name)
        pytester.makeconftest(TOY_CONFTEST + RATE_LIMITED_MIDWAY)
        result = pytester.runpytest_subprocess("--pair", "toy-a:remote", "--record-mode=once", "--snapshot-update",
                                               "--skilltransfer-progress", "0.2", "--provider-retries", "50",
                                               "--skilltransfer-html", "report.html", "-n", "2")
    result.assert_outcomes(passed=3)
    assert fake.throttled
    lines = [line for line in result.outlines + result.errlines if line.startswith("skilltransfer: ")]
    waiting = [line for line in lines if re.search(r" · waiting on rate limits \(HTTP 429\) for \d+s", line)]
    assert len(waiting) >= 2, lines  # on every tick while it waits, its figures unchanged

    running = (pytester.path / "running.html").read_text(encoding="utf-8")
    assert '<meta http-equiv="refresh" content="1">' in running  # reloads while the run goes
    assert re.search(r"<h1>Skill transfer: running, [12] of 3 item\(s\) done</h1>", running)
    assert re.search(r"Waiting on rate limits \(HTTP 429\) for \d+s", running)
    assert re.search(r"<b>\d+</b> round trip\(s\) left on the critical path \(of \d+; \d+ covered\)", running)
    assert re.search(r"ends in <b>~\d+[hms]", running) and "started at 20" in running and "updated at 20" in running
    assert "Items finished so far" in running and re.search(r"<tr><td>(alpha|beta|gamma)</td>", running)

    finished = (pytester.path / "report.html").read_text(encoding="utf-8")
    assert 'http-equiv="refresh"' not in finished
    ended = re.search(r"<b>Finished</b> at [^<]+ after <b>(\d+[hms]\w*)</b> \(wall time\), started at [^;]+; "
                      r"(\d+) round trip\(s\) on the critical path \(planned (\d+)\); 3 of 3 item\(s\) done", finished)
    assert ended and int(ended[2]) > 0, finished[:3000]
    assert "Needs a look" in finished  # the finished page is the whole report

    shots = pytester.path
    for name in ("running", "report"):
        context, page, requests = open_page(browser, shots / f"{name}.html", javascript=True)
        page.screenshot(path=str(shots / f"{name}.png"), full_page=True)
        assert all(url.startswith("file://") for url in requests), requests
        context.close()
    # a running page reloads itself and shows the finished page once the run has written it, then stays
    live = shots / "live.html"
    shutil.copy(shots / "running.html", live)
    context, page, _ = open_page(browser, live, javascript=False)
    assert "Running" in page.inner_text("#run h2")
    os.replace(shutil.copy(shots / "report.html", shots / "live.tmp"), live)
    page.wait_for_selector("#run.ended", timeout=20_000)  # the finished page's section
    assert page.locator('meta[http-equiv="refresh"]').count() == 0
    context.close()


def test_no_running_page_is_written_once_the_session_ends(tmp_path: Path) -> None:
    """The finished page is the last word: a write of the running page after the session's end does nothing."""
    from types import SimpleNamespace

    from pytest_skilltransfer.plugin.live_page import LivePage
    from pytest_skilltransfer.plugin.live_progress import Counts
    from pytest_skilltransfer.reports.run_standing import estimate

    standing = estimate(Counts(items=2, path_total=10, path_done=4), 40.0, 1_000_000.0, 0)
    progress = SimpleNamespace(shown=lambda: True, standing=lambda: standing)
    page = LivePage(progress, SimpleNamespace(results={}, errors={}), tmp_path / "report.html", 10.0)
    page.write()
    running = (page.path).read_text(encoding="utf-8")
    assert "No item has finished yet" in running and "ends in <b>~1m00s</b>" in running
    page.pytest_sessionfinish(None)  # type: ignore[arg-type]
    page.path.write_text("finished", encoding="utf-8")
    page.write()
    assert page.path.read_text(encoding="utf-8") == "finished"
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]  # no temporary file left behind
