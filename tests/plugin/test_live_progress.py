"""Live progress while a run records: whole lines from the controller only, counts that match the
cassettes, a plan bound that holds, and silence under CI replay."""

from __future__ import annotations

import re

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


def test_the_eta_and_the_rate_limit_wait_come_from_what_was_observed() -> None:
    """Round trips left x the turnaround observed so far; a run answered only with 429s says so and for how long."""
    import time

    from pytest_skilltransfer.models.limiter import Limiters
    from pytest_skilltransfer.plugin.live_progress import Counts, when_it_ends

    assert when_it_ends(Counts(path_total=18), 5.0) == " · 18 round trip(s) on the critical path"
    assert when_it_ends(Counts(path_total=18, path_done=6), 120.0) == " · 12 round trip(s) left, ends in ~4m00s (~20s each)"
    assert when_it_ends(Counts(path_total=18, path_done=18), 120.0, finished=True) == ""
    waiting = when_it_ends(Counts(path_total=18, path_done=6, throttled_since=time.time() - 242), 120.0)
    assert waiting.startswith(" · waiting on rate limits (HTTP 429) for 4m0"), waiting

    limiters = Limiters()  # a run's own (the suite's run holds what earlier tests left in its scope)
    limiter = limiters.get("m", 4)
    limiter.throttled(429, 0.0)
    since = limiter.throttled_since
    limiter.throttled(429, 0.0)
    assert since is not None and limiter.throttled_since == since  # since the first throttle in a row
    assert limiters.throttled_since() == since
    limiter.succeeded()
    assert limiter.throttled_since is None and limiters.throttled_since() is None


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
