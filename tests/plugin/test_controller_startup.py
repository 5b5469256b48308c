"""An xdist controller engages once its workers have started: a bad setting still ends the run with pytest's
usage error before any item runs; the run folder the workers share is removed at the end."""

from __future__ import annotations

import pytest

from plugin_support import project

PAIR = "skilltransfer_pair = toy-a:toy-b\n"


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
