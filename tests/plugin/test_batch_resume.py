"""A killed batch-lane recording, resumed: with the same command in the default record mode, and by a
run in another lane; nothing is paid twice, and the resumed run's bill is the provider's."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import pytest
from batch_provider import BatchProvider
from test_bill import BATCH_PRICE, PRICE, provider_bill

from plugin_support import DEFAULT_DESIGN, project

BATCH = ("--transfer-batch", "--transfer-batch-gather=0.3", "--transfer-batch-poll=0.05")


@pytest.fixture(autouse=True)
def _recording_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)  # CI=true (as the suite runs in CI) would make every run replay only


def _killed_run(pytester: pytest.Pytester, fake: BatchProvider, command: list[str], event: str, nth: int) -> None:
    project(pytester, ini=f"skilltransfer_pair = small:large\nskilltransfer_nights = 1\n{DEFAULT_DESIGN}", seeds=("alpha",))
    pytester.makepyprojecttoml(f'''
        [tool.skilltransfer.models]
        small = "anthropic:fake-small@{fake.anthropic_url}"
        large = "openai:fake-large@{fake.openai_url}"
        [tool.skilltransfer.prices]
        "fake-*" = {{ input = {PRICE}, output = {PRICE}, batch = {{ input = {BATCH_PRICE}, output = {BATCH_PRICE} }} }}
    ''')
    worker = subprocess.Popen([sys.executable, *command], cwd=pytester.path, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    fake.kill_on(event, worker.pid, nth)
    out, _ = worker.communicate(timeout=300)
    assert worker.returncode == -signal.SIGKILL, out
    assert fake.created


def test_the_same_command_resumes_a_killed_run_in_record_mode_once(pytester: pytest.Pytester) -> None:
    """kill -9 while a batch is at the provider, then exactly the same command (record mode `once`, the
    default): the manifest's batch is collected, no cassette miss, nothing paid twice."""
    command = ["-m", "pytest", "-p", "no:xdist", "-p", "no:randomly", "--snapshot-update", *BATCH]
    with BatchProvider() as fake:
        _killed_run(pytester, fake, command, "results:after", 2)
        rerun = subprocess.run([sys.executable, *command, "--skilltransfer-json=r.json"], cwd=pytester.path,
                               capture_output=True, text=True, timeout=300)
        assert rerun.returncode == 0, rerun.stdout + rerun.stderr
        assert not fake.paid_twice() and fake.served_sync == 0
        billed, answered = provider_bill(fake)
    report = json.loads((pytester.path / "r.json").read_text())
    assert not report["errors"] and report["summary"]["cost"]["total_usd"] == pytest.approx(billed, rel=0.01)


def test_a_run_in_another_lane_after_a_kill_reports_the_providers_bill(pytester: pytest.Pytester) -> None:
    """A run restarted without `--transfer-batch` collects the killed run's batch answers (paid at batch
    rates) and sends the rest synchronously: its bill is the provider's, each answer at the rate paid."""
    command = ["-m", "pytest", "-p", "no:xdist", "-p", "no:randomly", "--snapshot-update", "--record-mode=new_episodes"]
    with BatchProvider() as fake:
        _killed_run(pytester, fake, [*command, *BATCH], "status", 2)
        rerun = subprocess.run([sys.executable, *command, "--skilltransfer-json=r.json"], cwd=pytester.path,
                               capture_output=True, text=True, timeout=300)
        assert rerun.returncode == 0, rerun.stdout + rerun.stderr
        assert not fake.paid_twice()
        billed, answered = provider_bill(fake)
        sync = fake.served_sync
    cost = json.loads((pytester.path / "r.json").read_text())["summary"]["cost"]
    print(f"lane change after a kill: provider billed ${billed:.4f} for {answered} answers ({sync} synchronous); "
          f"report ${cost['total_usd']:.4f}, by lane {cost['by_lane']}")
    assert sync > 0 and cost["total_usd"] == pytest.approx(billed, rel=0.01)


