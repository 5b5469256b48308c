"""Live progress while a run records: whole lines from the controller only, counts that match the
cassettes, a plan bound that holds, and silence under CI replay."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from fake_provider import FakeProvider
from plugin_support import TOY_CONFTEST, make_seed

TIME = r"(?:\d+h\d\dm|\d+m\d\ds|\d+s)"  # as `live_progress._elapsed` writes a duration (a loaded machine's ETA runs to minutes)
LINE = re.compile(r"^skilltransfer: (\d+)/(\d+) items · (\d+) calls? \(plan ≤ ([\d,]+)\) · \$[\d,]+\.\d\d(?: \+ (\d+) unpriced)? · "
                  rf"(?:(\d+) round trip\(s\) (?:on the critical path|left, ends in ~{TIME} \(~(?:<1s|{TIME}) each\)) · )?{TIME}$")
# The run's first item to end waits, before the controller counts it, until the progress line has said how
# many round trips are left: a line while items run is then certain, however slow or fast the machine is
# (the timer still writes it; the wait only keeps the run from ending before its next tick).
WAIT_FOR_A_LINE = """
import time

import pytest

_CONFIG = []


def pytest_configure(config):
    _CONFIG.append(config)


def _said_what_is_left():
    progress = _CONFIG[0].pluginmanager.get_plugin("skilltransfer-progress")
    return progress is None or "left, ends in" in (progress._last_figures or "")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_logreport(report):
    if report.when != "teardown" or hasattr(_CONFIG[0], "workerinput"):
        return
    waited = time.monotonic()
    while not _said_what_is_left():
        assert time.monotonic() - waited < 60, "no progress line while the items ran"
        time.sleep(0.01)
"""


@pytest.fixture(autouse=True)
def _recording_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)  # CI=true would make every run replay only


def _project(pytester: pytest.Pytester, url: str, seeds: tuple[str, ...]) -> None:
    pytester.makeconftest(TOY_CONFTEST)
    pytester.makeini("[pytest]\nskilltransfer_limit_replay = 0\nskilltransfer_limit_holdout = 0\n")
    pytester.makepyprojecttoml(f'[tool.skilltransfer.models]\nremote = "anthropic:fake-small@{url}"\n')
    for name in seeds:
        make_seed(pytester.path / "seeds", name)


def _recorded(pytester: pytest.Pytester) -> int:
    files = (pytester.path / "cassettes").glob("*/fake-small.yaml")
    return sum(len(yaml.safe_load(path.read_text())["interactions"]) for path in files)


def _progress(result: pytest.RunResult) -> list[re.Match[str]]:
    lines = result.outlines + result.errlines
    mentions = [line for line in lines if "skilltransfer:" in line]
    matches = [LINE.match(line) for line in mentions]
    assert mentions and all(matches), mentions  # whole lines, nothing interleaved into them
    return matches  # type: ignore[return-value]


@pytest.mark.parametrize("workers", [0, 2])
def test_a_recording_run_shows_items_calls_and_dollars_as_it_goes(pytester: pytest.Pytester, workers: int) -> None:
    with FakeProvider() as fake:
        fake.delay = 0.02
        _project(pytester, fake.anthropic_url, ("alpha", "beta"))
        pytester.makepyfile(conftest=TOY_CONFTEST + WAIT_FOR_A_LINE)
        result = pytester.runpytest_subprocess("--pair", "toy-a:remote", "--record-mode=once", "--snapshot-update",
                                               "--skilltransfer-progress", "0.2", "-n", str(workers))
        sent = len(fake.received)
    result.assert_outcomes(passed=2)
    lines = _progress(result)
    assert len(lines) >= 2  # at least one line while working, and the last word
    last = lines[-1]
    assert (last[1], last[2]) == ("2", "2")
    assert int(last[3]) == sent == _recorded(pytester)  # every answer counted once
    assert int(last[3]) <= int(last[4].replace(",", ""))  # the plan is an upper bound
    counts = [(int(m[1]), int(m[3])) for m in lines]
    assert counts == sorted(counts)  # figures only grow
    left = [int(m[6]) for m in lines if m[6]]  # the round trips left on the critical path, while items run
    assert left and left == sorted(left, reverse=True) and last[6] is None, [m[0] for m in lines]


def _standing(now: float = 1_000_000.0, elapsed: float = 120.0, done: int = 0, items: int = 3, **counts: Any) -> Any:
    from pytest_skilltransfer.plugin.live_progress import Counts
    from pytest_skilltransfer.reports.run_standing import estimate

    return estimate(Counts(items=items, **counts), elapsed, now, done)


def test_the_eta_and_the_rate_limit_wait_come_from_what_was_observed() -> None:
    """Round trips left x the turnaround observed so far; a run answered only with 429s says so, for how long and
    when it tries next (an injected clock: `now`)."""
    from pytest_skilltransfer.models.limiter import Limiters
    from pytest_skilltransfer.reports.run_standing import when_text

    now = 1_000_000.0
    assert when_text(_standing(path_total=18, elapsed=5.0)) == " · 18 round trip(s) on the critical path"
    assert when_text(_standing(path_total=18, path_done=6)) == " · 12 round trip(s) left, ends in ~4m00s (~20s each)"
    assert when_text(_standing(path_total=18, path_done=18, done=3)) == ""  # every item done
    waiting = _standing(path_total=18, path_done=6, throttled_since=now - 242, throttled_until=now + 20.5)
    assert (waiting.throttled_s, waiting.retry_in_s) == (242, 20.5)
    assert when_text(waiting) == (" · waiting on rate limits (HTTP 429) for 4m02s, next try in ~20s · 12 round trip(s) "
                                  "left, ends in ~4m00s (~20s each)")
    assert when_text(_standing(throttled_since=now - 3, throttled_until=now - 1)) == (
        " · waiting on rate limits (HTTP 429) for 3s")  # the retry-after has run: the SDK tries again
    assert when_text(_standing(throttled_since=now - 3, throttled_status=529)) == (
        " · waiting on rate limits (HTTP 529 overloaded) for 3s")

    limiters = Limiters()  # a run's own (the suite's run holds what earlier tests left in its scope)
    limiter = limiters.get("m", 4)
    limiter.throttled(429, 30.0)
    since = limiter.throttled_since
    limiter.throttled(529, 0.0)
    assert since is not None and limiter.throttled_since == since  # since the first throttle in a row
    assert limiters.throttled_status() == 529
    assert limiters.throttled_since() == since
    assert limiters.throttled_until() == limiter.throttled_until >= since + 30  # the longest wait asked for
    limiter.succeeded()
    assert limiter.throttled_since is None and limiters.throttled_since() is None and limiters.throttled_until() is None


def test_the_batch_lanes_eta_comes_from_the_batches_turnaround() -> None:
    """In the batch lane a round trip takes what a batch takes: the median turnaround of those that came back, the
    batch in flight counted as far along as it has waited; before any came back, how long the first has waited."""
    from pytest_skilltransfer.reports.run_standing import when_text

    now = 1_000_000.0
    first = _standing(path_total=18, path_done=0, elapsed=900.0, batch_waiting_since=now - 720)
    assert first.eta_s is None and first.batch_waited_s == 720
    assert when_text(first) == " · 18 round trip(s) left, no batch back yet (waited 12m00s)"
    # 3 batches back (50, 60 and 70 minutes: median 1h), the 4th in flight for 20 minutes: 15 left, 14h40m
    going = _standing(path_total=18, path_done=3, elapsed=3 * 3600.0, batch_turnarounds=[3000.0, 4200.0, 3600.0],
                      batch_waiting_since=now - 1200)
    assert (going.each_s, going.eta_s) == (3600.0, 15 * 3600.0 - 1200)
    assert when_text(going) == " · 15 round trip(s) left, ends in ~14h40m (batches take ~1h00m)"
    overdue = _standing(path_total=18, path_done=3, batch_turnarounds=[3600.0], batch_waiting_since=now - 5000)
    assert overdue.eta_s == 14 * 3600.0  # the batch in flight is late: at least the ones after it are left
    between = _standing(path_total=18, path_done=3, batch_turnarounds=[3600.0])  # none in flight (gathering)
    assert between.eta_s == 15 * 3600.0


def test_a_batch_lane_reports_its_turnarounds_and_the_oldest_batch_in_flight(tmp_path: Path) -> None:
    """`BatchLane.observed`: what the progress publishes for the ETA (wall clock, so it crosses processes)."""
    import time

    from pytest_skilltransfer.models.batch.lane import BatchLane, BatchSettings, Group, InFlight

    lane = BatchLane(BatchSettings(), tmp_path, api_for=lambda group: None)
    assert lane.observed() == ([], None)
    lane._turnarounds.append(61.0)
    group = Group("anthropic", "http://127.0.0.1:9", "m", "k")
    lane._in_flight["b1"] = InFlight("b1", group, "s1", since=time.monotonic() - 30)
    lane._in_flight["b2"] = InFlight("b2", group, "s2", since=time.monotonic() - 5)
    turnarounds, since = lane.observed()
    assert turnarounds == [61.0] and since is not None and 29 <= time.time() - since <= 60


def test_replay_under_ci_prints_no_progress(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeProvider() as fake:
        _project(pytester, fake.anthropic_url, ("alpha",))
        pytester.runpytest_subprocess("--pair", "toy-a:remote", "--record-mode=once", "--snapshot-update").assert_outcomes(
            passed=1)
        monkeypatch.setenv("CI", "true")
        result = pytester.runpytest_subprocess("--pair", "toy-a:remote", "--skilltransfer-progress", "0.05")
    result.assert_outcomes(passed=1)
    assert not [line for line in result.outlines + result.errlines if "skilltransfer:" in line]


def test_in_process_models_record_nothing_and_print_nothing(pytester: pytest.Pytester) -> None:
    _project(pytester, "http://127.0.0.1:9", ("alpha",))
    result = pytester.runpytest_subprocess("--pair", "toy-a:toy-b", "--snapshot-update", "--skilltransfer-progress", "0.05")
    result.assert_outcomes(passed=1)
    assert not [line for line in result.outlines + result.errlines if "skilltransfer:" in line]


def test_a_bad_interval_is_a_usage_error(pytester: pytest.Pytester) -> None:
    _project(pytester, "http://127.0.0.1:9", ("alpha",))
    result = pytester.runpytest_subprocess("--pair", "toy-a:toy-b", "--skilltransfer-progress", "soon")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--skilltransfer-progress: expected auto, off or a number of seconds, got 'soon'*"])


def test_by_default_a_short_recording_in_a_log_prints_its_last_line_only(pytester: pytest.Pytester) -> None:
    with FakeProvider() as fake:
        _project(pytester, fake.anthropic_url, ("alpha",))
        result = pytester.runpytest_subprocess("--pair", "toy-a:remote", "--record-mode=once", "--snapshot-update")
    result.assert_outcomes(passed=1)
    lines = _progress(result)  # not a terminal: a line a minute, and the last word
    assert len(lines) == 1 and (lines[0][1], lines[0][2]) == ("1", "1")
    off = pytester.runpytest_subprocess("--pair", "toy-a:remote", "--record-mode=new_episodes",
                                        "--skilltransfer-progress", "off")
    assert not [line for line in off.outlines + off.errlines if "skilltransfer:" in line]
