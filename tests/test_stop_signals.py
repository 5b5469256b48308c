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
COMMAND = ("-m", "pytest", "-n", "2", "--dist", "load", "-p", "no:randomly", "--record-mode=new_episodes", "--snapshot-update",
           "--skilltransfer-json=r.json", "--skilltransfer-md=r.md", "--skilltransfer-html=r.html",
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
