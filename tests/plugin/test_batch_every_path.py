"""Every recording path reads the batch manifest: a run without `--transfer-batch` after a killed batch run
collects (or cancels) the batches instead of paying for their requests again, and doctor / `index --check`
name what the manifest still holds."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from batch_provider import BatchProvider
from fake_provider import digest
from plugin_support import DEFAULT_DESIGN, project

BASE = ("-m", "pytest", "-p", "no:xdist", "-p", "no:randomly", "--record-mode=new_episodes", "--snapshot-update",
        "--transfer-batch-poll=0.05")
BATCH = (*BASE, "--transfer-batch", "--transfer-batch-gather=0.3")


def _setup(pytester: pytest.Pytester, fake: BatchProvider) -> None:
    project(pytester, ini=f"skilltransfer_pair = small:large\nskilltransfer_nights = 1\n{DEFAULT_DESIGN}", seeds=("alpha",))
    pytester.makepyprojecttoml(f'''
        [tool.skilltransfer.models]
        small = "anthropic:fake-small@{fake.anthropic_url}"
        large = "openai:fake-large@{fake.openai_url}"
    ''')


def _kill_with_batches_in_flight(pytester: pytest.Pytester, fake: BatchProvider, creates: int = 5) -> set[str]:
    """A batch recording killed (-9) just after its fifth create (or its `creates`-th): the last two batches are in
    flight at the provider, the earlier ones' answers recorded. Returns what those two batches hold."""
    fake.hold_from = creates - 1
    worker = subprocess.Popen([sys.executable, *BATCH], cwd=pytester.path, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    fake.kill_on("create:sent", worker.pid, creates)
    out, _ = worker.communicate(timeout=300)
    assert worker.returncode == -signal.SIGKILL, out
    assert len(fake.created) == creates and not fake.received
    return {_body(item["body"]) for batch in fake.created[creates - 2:] for item in batch.items}


def _body(body: dict) -> str:
    return digest({k: v for k, v in body.items() if k != "stream"})


def _batched(fake: BatchProvider) -> set[str]:
    return {_body(item["body"]) for batch in fake.created for item in batch.items}


def _sent_sync(fake: BatchProvider) -> list[str]:
    return [_body(r["body"]) for r in fake.received]


def _run(pytester: pytest.Pytester, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=pytester.path, capture_output=True, text=True, timeout=300)


def test_a_synchronous_run_after_a_killed_batch_run_collects_the_batches_and_pays_nothing_twice(
        pytester: pytest.Pytester) -> None:
    with BatchProvider() as fake:
        _setup(pytester, fake)
        in_flight = _kill_with_batches_in_flight(pytester, fake)
        batched = _batched(fake)

        index = _run(pytester, "-m", "pytest_skilltransfer", "index", "--check", "cassettes")
        assert index.returncode == 1 and "uncollected batch submission(s) holding" in index.stdout, \
            index.stdout + index.stderr
        held = [batch.id for batch in fake.created[3:]]  # the two in flight (which wire's comes first varies)
        assert ": 2 uncollected" in index.stdout and all(f"batch {b} of " in index.stdout for b in held), index.stdout
        doctor = _run(pytester, "-m", "pytest_skilltransfer", "doctor")
        assert "uncollected batch submission(s)" in doctor.stdout and f": batch {held[0]} of " in doctor.stdout, \
            doctor.stdout

        fake.hold_from = None  # the batches end while the next run waits for them
        rerun = _run(pytester, *BASE, "--skilltransfer-json=r.json")  # no --transfer-batch
        assert rerun.returncode == 0, rerun.stdout + rerun.stderr
        sent = _sent_sync(fake)
        print(f"{len(batched)} request(s) batched before the kill, {len(in_flight)} of them in batches in flight; "
              f"the synchronous rerun sent {len(sent)}, {len(batched & set(sent))} of them already batched")
        assert len(in_flight) >= 2  # each held batch holds a request; how many the gather window puts in each varies
        assert not batched & set(sent), "a request sitting in an uncollected batch was sent synchronously"
        assert len(set(sent)) == len(sent) and not fake.paid_twice() and len(fake.created) == len(set(
            b.id for b in fake.created))
        assert fake.total_paid == len(batched)  # the batches ran once and were collected
        assert "This run collects every request of it found in them" in rerun.stdout + rerun.stderr
        assert "batch lane (collect only): " in rerun.stderr

        again = _run(pytester, "-m", "pytest_skilltransfer", "index", "--check", "cassettes")
        assert "uncollected" not in again.stdout, again.stdout
        fake.stop()
        replay = pytester.runpytest_subprocess("--record-mode=none", "-p", "no:randomly")
        replay.assert_outcomes(passed=1)


def test_cancel_instead_of_waiting_cancels_the_batches_and_sends_their_requests_once(pytester: pytest.Pytester) -> None:
    with BatchProvider() as fake:
        _setup(pytester, fake)
        in_flight = _kill_with_batches_in_flight(pytester, fake)  # the held batches never end by themselves
        batched, paid = _batched(fake), fake.total_paid
        rerun = _run(pytester, *BASE, "--transfer-batch-pending=cancel")
        assert rerun.returncode == 0, rerun.stdout + rerun.stderr
        assert [b.canceled for b in fake.created] == [False] * 3 + [True] * 2 and fake.total_paid == paid
        sent = _sent_sync(fake)
        assert in_flight <= set(sent) and not (batched - in_flight) & set(sent)  # only the canceled ones again
        assert len(set(sent)) == len(sent)
        assert "canceled at the provider (--transfer-batch-pending=cancel)" in rerun.stdout + rerun.stderr


def test_the_pending_option_and_the_wait_are_checked(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\n")
    pytester.makepyfile("def test_x(): pass")
    bad = pytester.runpytest("--transfer-batch", "--transfer-batch-pending=later")
    assert "expected one of wait, cancel" in bad.stderr.str()
    huge = pytester.runpytest("--transfer-batch", "--transfer-batch-max-wait=99999999999999")
    assert "at most 7d" in huge.stderr.str()
    timeout = pytester.runpytest("--transfer-batch", "--provider-timeout=1e308")
    assert "--provider-timeout: must be at most 604800 seconds" in timeout.stderr.str()


def test_a_mixed_lane_run_after_a_killed_batch_run_collects_for_the_models_that_left_the_lane_too(
        pytester: pytest.Pytester) -> None:
    """After a killed `--transfer-batch` run, the next run sends only `small` through the batch lane (its own
    `lane = "batch"`) and `large` synchronously: `large`'s requests that the earlier batches hold are still
    collected from them, not paid for again. Killed at its second create, each model's first batch in flight, so
    `large` has requests left to send whichever model's SDK is imported first."""
    with BatchProvider() as fake:
        _setup(pytester, fake)
        _kill_with_batches_in_flight(pytester, fake, creates=2)
        batched = _batched(fake)
        pytester.makepyprojecttoml(f'''
            [tool.skilltransfer.models]
            small = {{ provider = "anthropic", model = "fake-small", base_url = "{fake.anthropic_url}", lane = "batch" }}
            large = {{ provider = "openai", model = "fake-large", base_url = "{fake.openai_url}", lane = "standard" }}
        ''')
        fake.hold_from = None
        rerun = _run(pytester, *BASE, "--transfer-batch-gather=0.3", "--skilltransfer-json=r.json")
        assert rerun.returncode == 0, rerun.stdout + rerun.stderr
        sent = _sent_sync(fake)
        assert sent, "the standard-lane model sent its new requests synchronously"
        assert not batched & set(sent), "a request sitting in an uncollected batch was sent synchronously"
        assert not fake.paid_twice()
        fake.stop()
        replay = pytester.runpytest_subprocess("--record-mode=none", "-p", "no:randomly")
        replay.assert_outcomes(passed=1)
