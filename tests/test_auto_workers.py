"""`-n auto` in a skill-transfer run starts only the workers idle cores can run; other runs keep xdist's count."""

from __future__ import annotations

import pytest

from pytest_skilltransfer.plugin.workers import idle_workers

pytest_plugins = ["pytester"]


@pytest.mark.parametrize("cores, load, workers", [
    (2, 0.1, 2), (2, 0.6, 0), (2, 1.6, 0), (2, 8.0, 0), (8, 0.3, 8), (8, 3.4, 5), (8, 6.6, 0), (1, 0.0, 0),
])
def test_idle_cores_decide_and_fewer_than_two_mean_no_workers(cores: int, load: float, workers: int) -> None:
    assert idle_workers(cores, load) == workers


def _auto(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, load: float) -> int:
    monkeypatch.delenv("PYTEST_XDIST_AUTO_NUM_WORKERS", raising=False)
    monkeypatch.setattr("os.getloadavg", lambda: (load, load, load))
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {0, 1, 2, 3})
    config = pytester.parseconfig("-n", "auto")
    return config.hook.pytest_xdist_auto_num_workers(config=config)


def test_a_seed_run_counts_idle_cores(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makeini("[pytest]\nskilltransfer_pair = sim-small:sim-large\n")
    assert _auto(pytester, monkeypatch, 0.2) == 4
    assert _auto(pytester, monkeypatch, 3.0) == 0


def test_another_projects_run_keeps_xdists_count(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makepyfile("def test_a():\n    pass\n")
    busy = _auto(pytester, monkeypatch, 3.0)
    assert busy == _auto(pytester, monkeypatch, 0.2) and busy >= 1  # xdist's own: the load is not read


def test_the_environment_variable_still_decides(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makeini("[pytest]\nskilltransfer_pair = sim-small:sim-large\n")
    monkeypatch.setenv("PYTEST_XDIST_AUTO_NUM_WORKERS", "3")
    config = pytester.parseconfig("-n", "auto")
    assert config.hook.pytest_xdist_auto_num_workers(config=config) == 3

