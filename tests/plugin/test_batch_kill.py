"""kill -9 of a batch recording at every moment that matters, then the same command: nothing is paid twice."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from batch_provider import BatchProvider
from plugin_support import DEFAULT_DESIGN, project

COMMAND = ("-m", "pytest", "-p", "no:xdist", "-p", "no:randomly", "--record-mode=new_episodes", "--snapshot-update",
           "--transfer-batch", "--transfer-batch-gather=0.3", "--transfer-batch-poll=0.05")


@pytest.mark.parametrize("event, nth", [("create:before", 2), ("create:after", 3), ("status", 4),
                                        ("results:after", 3)])
def test_kill_9_and_rerun_pays_no_request_twice(pytester: pytest.Pytester, event: str, nth: int) -> None:
    with BatchProvider() as fake:
        project(pytester, ini=f"skilltransfer_pair = small:large\nskilltransfer_nights = 1\n{DEFAULT_DESIGN}",
                seeds=("alpha",))
        pytester.makepyprojecttoml(f'''
            [tool.skilltransfer.models]
            small = "anthropic:fake-small@{fake.anthropic_url}"
            large = "openai:fake-large@{fake.openai_url}"
        ''')
        worker = subprocess.Popen([sys.executable, *COMMAND], cwd=pytester.path, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True)
        fake.kill_on(event, worker.pid, nth)
        out, _ = worker.communicate(timeout=300)
        assert worker.returncode == -signal.SIGKILL, out
        created_before = len(fake.created)
        assert created_before >= 1

        rerun = subprocess.run([sys.executable, *COMMAND, "--skilltransfer-json=r.json"], cwd=pytester.path,
                               capture_output=True, text=True, timeout=300)
        assert rerun.returncode == 0, rerun.stdout + rerun.stderr
        assert not fake.paid_twice() and fake.served_sync == 0
        if event == "create:after":
            assert "adopted" in rerun.stdout
        fake.stop()
        replay = pytester.runpytest_subprocess("--record-mode=none", "-p", "no:randomly")
        replay.assert_outcomes(passed=1)
