"""The suite runs without the optional plugins that change how pytest runs (pytest-randomly reorders
and reseeds, pytest-recording owns --record-mode, pytest-shard shards by hash and owns --shard-id,
pytest-split selects by durations); the coexistence tests turn each on with `-p`.
Provider retries keep their default budget but wait milliseconds, so fault tests stay fast, and no
provider key or base URL from the environment reaches any test.

Every module of the package is imported once here, in the main thread, before any test runs: an
in-process pytester run would otherwise import (and assertion-rewrite, i.e. `ast.parse`) plugin
modules lazily, sometimes from evaluation threads, and CPython 3.11's AST constructor keeps its
recursion depth per interpreter, so two threads parsing at once can fail with "AST constructor
recursion depth mismatch"."""

from __future__ import annotations

from collections.abc import Iterator

import functools
import importlib
import os
import pkgutil
import sys
from pathlib import Path

import pytest

import pytest_skilltransfer
from pytest_skilltransfer.models import sdk_common

# The suite's processes (xdist workers, pytester's runs, the commands' runs) cache their compiled and
# assertion-rewritten modules, as Python does by default, even where the environment sets
# PYTHONDONTWRITEBYTECODE: otherwise every pytest process the suite starts compiles and rewrites the
# package again (0.7 s CPU a start, about a fifth of a subprocess-heavy test module's CPU). Cached files
# are read whether or not they may be written, so only the first process pays.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False

from fake_provider import fake_provider  # noqa: F401,E402  (a fixture every folder's tests use)
from faulty_provider import faulty_provider  # noqa: F401,E402  (likewise)
from shared_runs import main_job_shards

# the suite's folders mirror the package's; a test module may reuse another's helpers by name, whichever
# folder it is in (pytest puts only the importing test's own folder on the path)
for _folder in sorted(p for p in Path(__file__).parent.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))):
    if str(_folder) not in sys.path:
        sys.path.append(str(_folder))

for _module in pkgutil.walk_packages(pytest_skilltransfer.__path__, "pytest_skilltransfer."):
    if not _module.name.endswith("__main__"):
        importlib.import_module(_module.name)

# hypothesis's plugin too: no test project holds a property test, and loading it (it imports hypothesis) cost
# every process of a pytester run about 0.15 s of CPU
OPTIONAL_PLUGINS_OFF = "-p no:randomly -p no:recording -p no:pytest-shard -p no:pytest-split -p no:hypothesispytest"
# Modules whose `runpytest_subprocess` runs in this process (see the `pytester` fixture): checked to
# give the same outcomes both ways, alone and under xdist, and to cost less CPU so. Other modules keep a
# process per run: they cost as much either way (their runs start xdist workers, which are processes
# regardless, or are few); benchmarks/README.md has the figures.
IN_PROCESS = frozenset({"test_plugin_gating", "test_plugin_snapshots", "test_flex", "test_plugin_good_citizen",
                        "test_model_lanes", "test_full_disk",
                        "test_plugin_shards", "test_plugin_collect", "test_plugin_reports", "test_decidability",
                        "test_bounds", "test_restart_gates", "test_direct_on_demand", "test_clusters",
                        "test_call_deadline", "test_terminal_output", "test_plugin_node_ids",
                        "test_plugin_compare", "test_plugin_plan_budget", "test_budget", "test_plugin_validate_on",
                        "test_plugin_rubric", "test_plan_calibration", "test_plan_bounds", "test_prompt_cache",
                        "test_plan_counts", "test_secrets", "test_live_progress", "test_plugin_cassettes",
                        "test_prune_usual_mode", "test_pay_once_edge_cases", "test_plugin_concurrency",
                        "test_plan_rehearsal", "test_concurrent_phases", "test_bill"})
# The slow end-to-end modules (a recorder killed with -9, signals, the batch lane's waits): marked
# `end_to_end`, so `-m "not end_to_end"` gives a quick loop; CI runs them with the rest.
END_TO_END = frozenset({"test_batch_every_path", "test_batch_kill", "test_batch_lane", "test_batch_mode", "test_batch_design",
                        "test_cassette_durability", "test_stop_signals"})
# Modules holding a test of 20 s or more of wall on a 2-core machine that is not end-to-end: they start first too.
LONG = frozenset({"test_stats", "test_merge", "test_reviewer_view", "test_plugin_spellings",
                  "test_plugin_coexistence", "test_restart_gates", "test_plugin_reports", "test_plugin_gating"})
PROVIDER_VARIABLES = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Marks the end-to-end modules, and runs the end-to-end and long modules first, then the other modules that
    start pytest runs: xdist hands out the collection in order, so the long tests start while every worker is
    busy and the quick unit tests fill the workers at the end, instead of one long test running alone last."""
    for item in items:
        if item.path.stem in END_TO_END:
            item.add_marker(pytest.mark.end_to_end)
    rank: dict[Path, int] = {}
    for item in items:
        own = 0 if item.path.stem in END_TO_END | LONG else 1 if "pytester" in getattr(item, "fixturenames", ()) else 2
        rank[item.path] = min(rank.get(item.path, 2), own)
    items.sort(key=lambda item: rank[item.path])  # stable: each module's tests keep their order, together


@pytest.fixture(scope="session")
def main_job_shards_reports(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The main job's three shards' JSON reports (and `shard-i.out`, each one's terminal output beside it), run
    once for the whole test run, whatever the workers (tests/shared_runs.py)."""
    return main_job_shards(tmp_path_factory)


@pytest.fixture(autouse=True)
def _no_provider_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No key or base URL from the environment reaches a test: SDK clients talk only to the loopback
    fakes a test names (a test that needs a variable sets it itself)."""
    for var in PROVIDER_VARIABLES:
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> pytest.Pytester:
    """pytester whose runs (in-process and subprocess) start with the optional plugins off.

    In the modules of `IN_PROCESS`, `runpytest_subprocess` runs in this process (`runpytest_inprocess`:
    no interpreter, pytest or SDK start-up per run) unless the test is marked `subprocess` (what it
    tests is a process of its own: its exit, signals, warnings printed once) or the run starts xdist
    workers. `SKILLTRANSFER_TEST_SUBPROCESS=1` runs every one in a process of its own, as pytester does;
    `SKILLTRANSFER_TEST_IN_PROCESS=module,...` adds modules (to check one before listing it)."""
    monkeypatch.setenv("PYTEST_ADDOPTS", OPTIONAL_PLUGINS_OFF)
    in_process = IN_PROCESS | set(filter(None, os.environ.get("SKILLTRANSFER_TEST_IN_PROCESS", "").split(",")))
    if (request.path.stem in in_process and request.node.get_closest_marker("subprocess") is None
            and not os.environ.get("SKILLTRANSFER_TEST_SUBPROCESS")):
        real = pytester.runpytest_subprocess

        def run(*args: str | os.PathLike[str], timeout: float | None = None) -> pytest.RunResult:
            if any(str(arg).startswith(("-n", "--numprocesses", "--dist")) for arg in args):
                return real(*args, timeout=timeout)
            _import_sdks()
            saved = _package_namespaces()
            try:
                return pytester.runpytest_inprocess(*args)
            finally:
                _restore(saved)
                sdk_common.close_clients()  # as the run's process exit would: the next run builds its own

        monkeypatch.setattr(pytester, "runpytest_subprocess", run)
    return pytester


@functools.cache
def _import_sdks() -> None:
    """The SDKs and vcrpy, imported once in this process before its first in-process run. pytester drops the
    modules a run imported when it ends, so each recording run imported them again (about 2 s of CPU); imported
    before, they are kept. Whether a run imports only the SDKs it needs is checked in processes of their own
    (tests/models/test_lazy_sdks.py, tests/cassettes/test_replay_fidelity.py), which this does not touch."""
    for name in ("anthropic", "openai", "vcr"):
        importlib.import_module(name)


def _package_namespaces() -> dict[str, dict[str, object]]:
    """Every loaded module of the package's names, so what a test project's conftest replaces in them
    (a disk made full, a failing save) is put back after an in-process run, as a process's exit would."""
    return {name: dict(vars(module)) for name, module in list(sys.modules.items())
            if name.startswith("pytest_skilltransfer") and module is not None}


def _restore(saved: dict[str, dict[str, object]]) -> None:
    for name, namespace in saved.items():
        module = sys.modules.get(name)
        current = vars(module) if module is not None else {}
        for key, value in namespace.items():
            if current.get(key, _MISSING) is not value:
                current[key] = value


_MISSING = object()


@pytest.fixture(autouse=True)
def _fast_backoff() -> Iterator[None]:
    previous = sdk_common.call_policy()
    sdk_common.configure_calls(sdk_common.CallPolicy(backoff_s=0.001, max_backoff_s=0.01))
    yield
    sdk_common.configure_calls(previous)
