"""An xdist controller engages once its workers have started: at its session start (when xdist starts the
workers) it has imported none of the settings, models or engine modules; a bad setting still ends the run with
pytest's usage error before any item runs; the run folder the workers share is removed at the end."""

from __future__ import annotations

import pytest

from plugin_support import project

PROBE = '''
import os, sys, pytest

@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session):
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        loaded = sorted(m for m in sys.modules if m.startswith("pytest_skilltransfer"))
        print("AT-START", " ".join(loaded), file=sys.stderr)
'''
PAIR = "skilltransfer_pair = toy-a:toy-b\n"
LATE = ("pytest_skilltransfer.engine.results", "pytest_skilltransfer.models.registry",
        "pytest_skilltransfer.models.providers", "pytest_skilltransfer.plugin.runner")


def _loaded_at_start(result: pytest.RunResult) -> list[str]:
    line = next(line for line in result.errlines if line.startswith("AT-START"))
    return line.split()[1:]


def test_the_controller_starts_its_workers_before_it_engages(pytester: pytest.Pytester) -> None:
    project(pytester, ini=PAIR)
    pytester.makepyfile(startup_probe=PROBE)
    result = pytester.runpytest_subprocess("-p", "startup_probe", "-n", "2", "-p", "no:randomly", "--snapshot-update")
    result.assert_outcomes(passed=2)
    loaded = _loaded_at_start(result)
    assert loaded and not set(LATE) & set(loaded), loaded
    alone = pytester.runpytest_subprocess("-p", "startup_probe", "-n", "0", "-p", "no:randomly", "--snapshot-update")
    alone.assert_outcomes(passed=2)
    assert set(LATE) <= set(_loaded_at_start(alone))  # without workers it engages at configuration, as before


def test_a_bad_setting_under_xdist_is_still_a_usage_error_before_any_item(pytester: pytest.Pytester) -> None:
    project(pytester, ini=PAIR)
    result = pytester.runpytest_subprocess("-n", "2", "--source", "no-such-model", "--target", "toy-b")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "unknown model 'no-such-model'" in result.stderr.str()
    assert "passed" not in result.stdout.str() and "failed" not in result.stdout.str()


def test_the_run_folder_of_a_budgeted_xdist_run_is_removed_at_the_end(pytester: pytest.Pytester,
                                                             tmp_path_factory: pytest.TempPathFactory,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    project(pytester, ini=PAIR)
    temp = tmp_path_factory.mktemp("temp")
    monkeypatch.setenv("TMPDIR", str(temp))
    pytester.makepyprojecttoml("""
        [tool.skilltransfer.prices]
        toy-a = { input = 1, output = 1 }
        toy-b = { input = 1, output = 1 }
    """)
    result = pytester.runpytest_subprocess("-n", "2", "-p", "no:randomly", "--max-cost=1", "--snapshot-update")
    result.assert_outcomes(passed=2)
    assert "--max-cost 1: $0.000000 charged" in result.stdout.str()
    assert not list(temp.glob("skilltransfer-run-*"))
