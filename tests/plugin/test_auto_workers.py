"""`-n auto` starts one worker per usable core, as pytest-xdist counts them, whatever else the machine runs."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]


def _auto(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, load: float) -> int:
    monkeypatch.delenv("PYTEST_XDIST_AUTO_NUM_WORKERS", raising=False)
    monkeypatch.setattr("os.getloadavg", lambda: (load, load, load))
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {0, 1, 2, 3})
    config = pytester.parseconfig("-n", "auto")
    return config.hook.pytest_xdist_auto_num_workers(config=config)


def test_a_seed_run_uses_every_core_under_any_load(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makeini("[pytest]\nskilltransfer_pair = sim-small:sim-large\n")
    assert _auto(pytester, monkeypatch, 0.2) == _auto(pytester, monkeypatch, 8.0) == 4


def test_the_environment_variable_still_decides(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makeini("[pytest]\nskilltransfer_pair = sim-small:sim-large\n")
    monkeypatch.setenv("PYTEST_XDIST_AUTO_NUM_WORKERS", "3")
    config = pytester.parseconfig("-n", "auto")
    assert config.hook.pytest_xdist_auto_num_workers(config=config) == 3
