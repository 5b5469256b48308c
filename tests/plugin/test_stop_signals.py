"""Stop means stop: SIGTERM or SIGINT to the controller of a `-n 2` recording stops every process's requests
within a second, the reports say the run was interrupted and what it paid, and the next run pays nothing twice.

One subprocess recording, against a loopback provider that answers each request 0.25 s after it arrived,
is stopped twice (SIGTERM, then SIGINT after resuming) and then finished."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fake_provider import FakeProvider
from plugin_support import project

PRICES = '"fake-small" = { input = 1.0, output = 2.0 }\n"fake-large" = { input = 3.0, output = 6.0 }'
# `--dist load` hands one seed to each worker once both have collected, so both are sending at the signal
COMMAND = ("-m", "pytest", "-n", "2", "--dist", "load", "-p", "no:randomly", "--record-mode=new_episodes",
           "--snapshot-update", "--skilltransfer-json=r.json", "--skilltransfer-md=r.md", "--skilltransfer-html=r.html",
           "--skilltransfer-progress=off", "--limit-replay=2", "--limit-holdout=2")


class TimedProvider(FakeProvider):
    """The fake, noting when each request arrived."""

    def __init__(self) -> None:
        super().__init__()
        self.arrivals: list[float] = []

    def log(self, path: str, headers: dict[str, str], body: dict) -> None:
        with self._lock:
            self.arrivals.append(time.monotonic())
        super().log(path, headers, body)


def _stopped_run(root: Path, fake: TimedProvider, signum: int, after: int) -> tuple[str, float]:
    """The command, sent `signum` once `after` more requests arrived; its output and when the signal went."""
    start = len(fake.received)
    for name in ("r.json", "r.md", "r.html"):
        (root / name).unlink(missing_ok=True)
    run = subprocess.Popen([sys.executable, *COMMAND], cwd=root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
    deadline = time.monotonic() + 120
    while run.poll() is None and time.monotonic() < deadline:  # both workers sending, `after` requests in
        bodies = [json.dumps(r["body"]) for r in fake.received[start:]]
        if len(bodies) >= after and all(any(f"# {seed}" in b for b in bodies) for seed in ("alpha", "beta")):
            break
        time.sleep(0.02)
    assert run.poll() is None, run.communicate()[0]
    sent = time.monotonic()
    run.send_signal(signum)
    out, _ = run.communicate(timeout=120)
    assert run.returncode == pytest.ExitCode.INTERRUPTED, out
    return out, sent


def test_a_signal_to_the_controller_stops_every_worker_within_a_second(pytester: pytest.Pytester) -> None:
    with TimedProvider() as fake:
        fake.delay = 0.25
        project(pytester, ini="skilltransfer_pair = small:large\nskilltransfer_nights = 1\n", seeds=("alpha", "beta"))
        pytester.makepyprojecttoml(f'''
            [tool.skilltransfer.models]
            small = "anthropic:fake-small@{fake.anthropic_url}"
            large = "openai:fake-large@{fake.openai_url}"
            [tool.skilltransfer.prices]
            {PRICES}
        ''')
        for signum in (signal.SIGTERM, signal.SIGINT):
            out, sent = _stopped_run(pytester.path, fake, signum, after=8)
            late = [round(t - sent, 2) for t in fake.arrivals if t > sent + 1.0]
            assert late == [], (signum, late, out)
            report = json.loads((pytester.path / "r.json").read_text())
            stopped = report["interrupted"]
            name = signal.Signals(signum).name
            assert stopped["by"] == f"{name} to the controller" and stopped["answers"] > 0, stopped
            assert out.count("not sent: the run was stopped") >= 2, out  # both workers' items stopped
            assert stopped["paid_usd"] > 0, stopped
            assert f"INTERRUPTED ({name} to the controller): ${stopped['paid_usd']:.4f}" in out, out
            assert (pytester.path / "r.md").read_text().startswith(f"**INTERRUPTED ({name} to the controller)")
            assert f"Interrupted ({name} to the controller)" in (pytester.path / "r.html").read_text()
            assert "Traceback" not in out, out
        done = subprocess.run([sys.executable, *COMMAND], cwd=pytester.path, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "interrupted" not in json.loads((pytester.path / "r.json").read_text())
        bodies = [json.dumps(r["body"], sort_keys=True) for r in fake.received]
    assert len(bodies) == len(set(bodies)), "an answer paid for was paid again"


def test_a_halted_batch_lane_stops_waiting_and_leaves_its_batch_for_the_next_run(tmp_path: Path) -> None:
    """A call waiting for its batch fails at once when the process halts; the batch stays in the manifest,
    and after the stop the same call is collected from it, not paid again."""
    import threading

    from pytest_skilltransfer.cassettes import recording
    from pytest_skilltransfer.models.base import Message, Request
    from pytest_skilltransfer.models.batch import BatchSettings, configure_batch
    from pytest_skilltransfer.models.halt import RunStopped, halt, resume
    from pytest_skilltransfer.models.providers import build_model

    from batch_provider import BatchProvider

    request = Request(system="s", messages=(Message("user", "call 0"),), max_tokens=16)
    outcome: list[BaseException | str] = []
    try:
        with BatchProvider() as fake:
            fake.hold_from = 1  # the batch does not end until released
            configure_batch(BatchSettings(gather_s=0.05, poll_s=0.02), tmp_path)
            model = build_model(f"anthropic:held@{fake.anthropic_url}")
            with recording(tmp_path, "seed", "new_episodes"):
                def call() -> None:
                    try:
                        outcome.append(model.complete(request).text)
                    except Exception as exc:  # noqa: BLE001 - the outcome is what is checked
                        outcome.append(exc)
                waiting = threading.Thread(target=call)
                waiting.start()
                while not fake.created:
                    time.sleep(0.01)
                stopped = time.monotonic()
                halt("SIGTERM to the controller")
                waiting.join(timeout=5)
                assert time.monotonic() - stopped < 1.0 and isinstance(outcome[0], RunStopped), outcome
                with pytest.raises(RunStopped):
                    model.complete(Request(system="s", messages=(Message("user", "call 1"),), max_tokens=16))
            resume()
            fake.hold_from = None
            configure_batch(BatchSettings(gather_s=0.05, poll_s=0.02), tmp_path)
            with recording(tmp_path, "seed", "new_episodes"):
                again = model.complete(request).text
            assert len(fake.created) == 1 and not fake.paid_twice() and again
    finally:
        resume()
        configure_batch(None)


def test_a_signal_to_a_worker_reaches_every_process_through_the_stop_file(tmp_path: Path) -> None:
    """SIGTERM to a worker halts it, ends its session after the item running, and writes the stop file
    every other process of the run (the controller, the other workers) acts on within a fraction of a second."""
    import os
    from types import SimpleNamespace

    from pytest_skilltransfer.models.halt import halted, resume
    from pytest_skilltransfer.plugin.state import RUN_DIR_KEY
    from pytest_skilltransfer.plugin.stopping import STOP_FILE, StopOnSignal

    def process(worker: str) -> tuple[StopOnSignal, SimpleNamespace]:
        config = SimpleNamespace(workerinput={"workerid": worker, RUN_DIR_KEY: str(tmp_path)})
        session = SimpleNamespace(shouldstop=False)
        stopper = StopOnSignal(config)  # type: ignore[arg-type]
        stopper.pytest_sessionstart(session)  # type: ignore[arg-type]
        return stopper, session

    before = signal.getsignal(signal.SIGTERM)
    other, other_session = process("gw0")
    signalled, session = process("gw1")  # the last one made holds the signal handlers
    try:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.05)  # the handler runs in the main thread between instructions
        assert halted() == "SIGTERM to worker gw1" and session.shouldstop == "stopped: SIGTERM to worker gw1"
        assert (tmp_path / STOP_FILE).read_text() == "SIGTERM to worker gw1"
        deadline = time.monotonic() + 1.0
        while not other_session.shouldstop and time.monotonic() < deadline:
            time.sleep(0.01)
        assert other.reason == "SIGTERM to worker gw1" and other_session.shouldstop
    finally:
        signalled.pytest_unconfigure()
        other.pytest_unconfigure()
        resume()
    assert signal.getsignal(signal.SIGTERM) == before


def test_sigterm_to_a_single_process_run_ends_it_after_the_item_running_with_reports(pytester: pytest.Pytester) -> None:
    """Without xdist: the item running when SIGTERM arrives ends, no other starts, the reports say so."""
    project(pytester, ini="skilltransfer_nights = 1\nskilltransfer_no_direct = true\n", seeds=("alpha", "beta"))
    pytester.makeconftest(pytester.path.joinpath("conftest.py").read_text() + '''
import os, signal

def pytest_runtest_setup(item):
    if "alpha" in item.nodeid:
        os.kill(os.getpid(), signal.SIGTERM)
''')
    result = pytester.runpytest("--pair", "toy-a->toy-b", "-p", "no:randomly", "--snapshot-update",
                                "--skilltransfer-json=r.json", "--skilltransfer-md=r.md")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.assert_outcomes(passed=1)  # alpha ran to its end; beta never started
    report = json.loads((pytester.path / "r.json").read_text())
    assert report["interrupted"]["by"] == "SIGTERM to the controller" and len(report["results"]) == 1
    assert report["interrupted"]["paid_usd"] == 0 and report["interrupted"]["answers"] == 0  # toy models: none paid
    assert "INTERRUPTED (SIGTERM to the controller): $0.0000 paid" in result.stdout.str()
    assert (pytester.path / "r.md").read_text().startswith("**INTERRUPTED (SIGTERM to the controller)")
