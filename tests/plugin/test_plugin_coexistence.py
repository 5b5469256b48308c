"""Other plugins and fixtures keep working next to the seed items: autouse fixtures of every scope,
pytest-recording, pytest-cov, pytest-randomly (seed-grouped under xdist), pytest-rerunfailures and
pytest-timeout. The suite runs with randomly and recording off; each test here turns one on with -p."""

from __future__ import annotations

import json
import re

import pytest

from plugin_support import make_seed, project

MATRIX = "skilltransfer_pair = toy-a:toy-b toy-a:toy-half toy-b:toy-a\n"


def test_autouse_fixtures_of_every_scope_run_around_seed_items(pytester: pytest.Pytester) -> None:
    project(pytester, ini=MATRIX)
    pytester.makeconftest(pytester.path.joinpath("conftest.py").read_text() + '''
import pytest

SEEN = []

@pytest.fixture(scope="session", autouse=True)
def session_wide():
    SEEN.append("session")

@pytest.fixture(scope="package", autouse=True)
def package_wide():
    SEEN.append("package")

@pytest.fixture(scope="module", autouse=True)
def module_wide(request):
    SEEN.append("module " + request.module.__name__)

@pytest.fixture(scope="class", autouse=True)
def class_wide():
    SEEN.append("class")

def pytest_sessionfinish():
    print("SEEN", SEEN.count("session"), SEEN.count("package"),
          len([s for s in SEEN if s.startswith("module")]), SEEN.count("class"))
''')
    result = pytester.runpytest("-s", "--snapshot-update")
    result.assert_outcomes(passed=6)
    result.stdout.fnmatch_lines(["*SEEN 1 1 2 6*"])  # one module per seed, class scope per item


def test_pytest_recording_coexists(pytester: pytest.Pytester) -> None:
    project(pytester, ini=MATRIX)
    pytester.makepyfile(test_http='''
        import pytest

        @pytest.mark.vcr
        def test_marked(vcr):
            assert vcr is not None
    ''')
    result = pytester.runpytest("-p", "recording", "--snapshot-update", "--record-mode=none")
    result.assert_outcomes(passed=7)


def test_pytest_cov_coexists(pytester: pytest.Pytester) -> None:
    project(pytester, ini=MATRIX)
    result = pytester.runpytest_subprocess("--cov=pytest_skilltransfer", "--cov-report=term", "--snapshot-update",
                                           "-n", "2")
    result.assert_outcomes(passed=6)
    result.stdout.fnmatch_lines(["*coverage:*", "TOTAL*"])


def test_pytest_randomly_shuffles_but_keeps_seeds_together(pytester: pytest.Pytester) -> None:
    """In subprocesses: randomly imports numpy, which must not be imported inside an in-process run."""
    project(pytester, ini=MATRIX, seeds=("alpha", "beta", "gamma"))
    pytester.makepyfile(test_gate='''
        import pytest

        @pytest.mark.skilltransfer(seed="seeds/beta", source="toy-a", target="toy-b")
        def test_beta_gate(transfer_result):
            pass

        def test_plain():
            pass
    ''')
    for seed in ("1", "2", "3"):
        alone = pytester.runpytest_subprocess("-p", "randomly", f"--randomly-seed={seed}",
                                   "-v", "--snapshot-update")
        alone.assert_outcomes(passed=11)
        order = [s for s in re.findall(r"(alpha|beta|gamma)\S*(?:::| )\S* PASSED", alone.stdout.str())]
        blocks = [s for i, s in enumerate(order) if i == 0 or order[i - 1] != s]
        assert sorted(blocks) == ["alpha", "beta", "gamma"], order
    distributed = pytester.runpytest_subprocess("-p", "randomly", "--randomly-seed=7", "-n", "2", "-v",
                                                "--snapshot-update")
    distributed.assert_outcomes(passed=11)
    workers: dict[str, set[str]] = {}
    for worker, nodeid in re.findall(r"\[(gw\d)\] \[\s*\d+%\] PASSED (\S+)", distributed.stdout.str()):
        if "beta" in nodeid or "alpha" in nodeid or "gamma" in nodeid:
            seed = next(s for s in ("alpha", "beta", "gamma") if s in nodeid)
            workers.setdefault(seed, set()).add(worker)
    assert all(len(w) == 1 for w in workers.values()), workers


def test_pytest_rerunfailures_reruns_a_failing_pair_and_reports_it_once(pytester: pytest.Pytester) -> None:
    project(pytester, ini=MATRIX + "skilltransfer_min_score = 0.9\n", seeds=())
    make_seed(pytester.path / "seeds", "alpha", tasks=40)
    result = pytester.runpytest("--reruns", "1", "--snapshot-update", "--skilltransfer-json", "run.json")
    outcomes = result.parseoutcomes()
    assert (outcomes["failed"], outcomes["passed"], outcomes["rerun"]) == (1, 2, 1)
    report = json.loads((pytester.path / "run.json").read_text())
    items = [r["item"] for r in report["results"]]
    assert len(items) == len(set(items)) == 3


def test_pytest_timeout_coexists(pytester: pytest.Pytester) -> None:
    project(pytester, ini=MATRIX)
    result = pytester.runpytest("--timeout=60", "--snapshot-update")
    result.assert_outcomes(passed=6)
