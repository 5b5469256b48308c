"""Node ids rerun: every id `--co -q` prints selects exactly that item, in every layout; and under
xdist every seed's items (hand-written tests included) run on one worker, sending no request twice."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from plugin_support import make_seed, project

MATRIX = "skilltransfer_source = toy-a\nskilltransfer_target = toy-b toy-half\n"
COUNTING = '''
import os
from pytest_skilltransfer.models.base import Reply, Usage, register_family

LOG = os.path.join(os.path.dirname(__file__), "requests.log")
EDIT = '[{"op": "add", "content": "OWNER-LINE: end every answer with `Owner: @team`."}]'


class Counting:
    def __init__(self, name):
        self.name = self.model_id = name

    def complete(self, request):
        user = request.messages[0].content
        with open(LOG, "a") as log:
            log.write(repr((self.name, request.system, user, request.sample_id)) + "\\n")
        text = EDIT if "# Failing criteria" in user else "Routed" + (" Owner: @team" if "OWNER-LINE" in request.system else "")
        return Reply(text=text, usage=Usage(len(user) // 4, len(text) // 4), model=self.name)


register_family("toy", lambda name: name.startswith("toy-"), Counting, "toy-<name>: a counting test model")
'''


def collected(result: pytest.RunResult) -> list[str]:
    return [line for line in result.outlines if "::" in line and not line.startswith(("ERROR", "FAILED"))]


def assert_every_id_reruns(pytester: pytest.Pytester, *args: str) -> list[str]:
    ids = collected(pytester.runpytest("--co", "-q", *args))
    assert ids
    for nodeid in ids:
        # pytest finds its configuration from the paths it is given: an absolute id needs `-c`
        config = ("-c", "tox.ini") if nodeid.startswith("/") else ()
        again = pytester.runpytest("--co", "-q", *config, nodeid)
        assert collected(again) == [nodeid], (nodeid, again.outlines)
    return ids


def test_ids_under_the_rootdir_rerun(pytester: pytest.Pytester) -> None:
    project(pytester, ini=MATRIX)
    pytester.makepyfile(test_gate='''
        import pytest

        @pytest.mark.skilltransfer(seed="seeds/alpha")
        def test_gate(transfer_result):
            pass
    ''')
    ids = assert_every_id_reruns(pytester, "seeds", "test_gate.py")
    assert "seeds/alpha/SKILL.md::transfer[toy-a->toy-half]" in ids
    assert "test_gate.py::test_gate[toy-a->toy-b]" in ids


def test_ids_of_seeds_outside_the_rootdir_are_absolute_and_rerun(pytester: pytest.Pytester, tmp_path_factory) -> None:
    project(pytester, ini=MATRIX, seeds=("alpha",))
    shared = tmp_path_factory.mktemp("shared") / "skillopt-v1"
    make_seed(shared, "outside")
    by_path = assert_every_id_reruns(pytester, "seeds", str(shared))
    assert f"{shared.as_posix()}/outside/SKILL.md::transfer[toy-a->toy-b]" in by_path
    by_option = collected(pytester.runpytest("--co", "-q", "seeds", "--seeds-dir", str(shared)))
    assert by_option == by_path


def test_ids_found_through_testpaths_rerun(pytester: pytest.Pytester) -> None:
    project(pytester, ini=MATRIX + "testpaths = eval\n", seeds=())
    make_seed(pytester.path / "eval" / "skillopt-v1", "gamma")
    ids = assert_every_id_reruns(pytester)
    assert ids[0] == "eval/skillopt-v1/gamma/SKILL.md::transfer[toy-a->toy-b]"


def test_stepwise_resumes_at_the_failing_pair(pytester: pytest.Pytester) -> None:
    project(pytester, ini=MATRIX + "skilltransfer_min_score = 0.9\n", seeds=())
    for name in ("alpha", "beta"):
        make_seed(pytester.path / "seeds", name, tasks=40)
    first = pytester.runpytest("--sw", "-q", "--snapshot-update")
    first.assert_outcomes(passed=1, failed=1)
    again = pytester.runpytest("--sw", "--snapshot-update")
    again.stdout.fnmatch_lines(["*skipping 1 already passed items*"])
    again.assert_outcomes(failed=1, deselected=1)


def test_xdist_keeps_every_seed_on_one_worker_and_sends_no_request_twice(pytester: pytest.Pytester,
                                                                         tmp_path_factory) -> None:
    pytester.makeconftest(COUNTING)
    pytester.makeini("[pytest]\nskilltransfer_pair = toy-a:toy-b toy-b:toy-a toy-a:toy-c\n")
    for name in ("alpha", "beta", "gamma"):
        make_seed(pytester.path / "seeds", name)
    shared = tmp_path_factory.mktemp("shared")
    make_seed(shared, "delta")
    pytester.makepyfile(test_gates='''
        import pytest

        @pytest.mark.skilltransfer(seed="seeds/alpha", source="toy-a", target="toy-b")
        def test_alpha_gate(transfer_result):
            pass

        @pytest.mark.skilltransfer(seed="seeds/beta")
        def test_beta_every_pair(transfer_result):
            pass

        def test_plain():
            pass
    ''')
    result = pytester.runpytest_subprocess("-n", "2", "-v", "--snapshot-update", "seeds", "test_gates.py",
                                           "--seeds-dir", str(shared))
    result.assert_outcomes(passed=17)
    workers: dict[str, set[str]] = {}
    for worker, nodeid in re.findall(r"\[(gw\d)\] \[\s*\d+%\] PASSED (\S+)", result.stdout.str()):
        seed = next((s for s in ("alpha", "beta", "gamma", "delta") if s in nodeid), nodeid)
        workers.setdefault(seed, set()).add(worker)
    assert all(len(w) == 1 for w in workers.values()), workers  # how they spread over workers depends on which
    # worker collects first, on a busy machine all of them on one: tests/plugin/test_seed_scheduling.py checks it
    requests = Path(pytester.path / "requests.log").read_text().splitlines()
    assert len(requests) == len(set(requests))
