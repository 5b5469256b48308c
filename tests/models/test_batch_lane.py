"""The batch lane per request: out-of-order results, partial failures, fallback, the wait ceiling, re-adoption."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml

from batch_provider import BatchProvider
from pytest_skilltransfer.cassettes import recording
from pytest_skilltransfer.models.base import Message, ModelCallError, Request
from pytest_skilltransfer.models.batch import BatchSettings, BatchWaitExceeded, configure_batch
from pytest_skilltransfer.models.batch.manifest import Manifest, custom_id
from pytest_skilltransfer.models.providers import build_model

FAST = BatchSettings(gather_s=0.1, poll_s=0.02)
WIRES = ("anthropic", "openai")


@pytest.fixture
def fake() -> Any:
    with BatchProvider() as server:
        yield server
    configure_batch(None)


def _model(fake: BatchProvider, wire: str) -> Any:
    return build_model(f"{wire}:lane-{wire}@{fake.anthropic_url if wire == 'anthropic' else fake.openai_url}")


def _asks(n: int, tag: str = "q") -> list[Request]:
    return [Request(system="s", messages=(Message("user", f"{tag} {i}"),), max_tokens=16) for i in range(n)]


def _all(model: Any, requests: list[Request]) -> list[Any]:
    """Every request at once; each outcome is a reply or the exception it raised."""
    def one(request: Request) -> Any:
        try:
            return model.complete(request)
        except ModelCallError as exc:
            return exc

    with ThreadPoolExecutor(len(requests)) as pool:
        return list(pool.map(one, requests))


def _stored(root: Path) -> int:
    return sum(len(yaml.safe_load(p.read_text())["interactions"]) for p in (root / "seed").glob("*.yaml"))


def test_custom_ids_are_valid_for_both_providers_and_stable() -> None:
    cid = custom_id("http://127.0.0.1:1", "/v1/messages", b'{"b": 1, "a": [2]}')
    assert cid == custom_id("http://127.0.0.1:1/", "/v1/messages", b'{"a":[2],"b":1}')
    assert len(cid) <= 64 and cid.replace("-", "").replace("_", "").isalnum()
    assert cid != custom_id("http://127.0.0.1:2", "/v1/messages", b'{"b": 1, "a": [2]}')


@pytest.mark.parametrize("wire", WIRES)
def test_one_step_is_one_batch_and_results_arrive_out_of_order(fake: BatchProvider, tmp_path: Path, wire: str) -> None:
    configure_batch(FAST, tmp_path)
    model = _model(fake, wire)
    with recording(tmp_path, "seed", "new_episodes"):
        replies = _all(model, _asks(12))
    assert len(fake.created) == 1 and len(fake.created[0].items) == 12
    assert [r.text for r in replies] == [r.text for r in _sync_replies(fake, wire, _asks(12))]
    assert _stored(tmp_path) == 12 and fake.served_sync == 12  # (the reference answers above were synchronous)


def _sync_replies(fake: BatchProvider, wire: str, requests: list[Request]) -> list[Any]:
    configure_batch(None)
    return [_model(fake, wire).complete(r) for r in requests]


@pytest.mark.parametrize("wire", WIRES)
def test_failed_items_are_sent_again_and_a_refused_one_fails_unrecorded(fake: BatchProvider, tmp_path: Path,
                                                                        wire: str) -> None:
    configure_batch(FAST, tmp_path)
    fake.shuffle = False
    fake.fail_items("errored", "invalid", "expired", "canceled")
    with recording(tmp_path, "seed", "new_episodes"):
        outcomes = _all(_model(fake, wire), _asks(6))
    refused = [o for o in outcomes if isinstance(o, ModelCallError)]
    assert len(refused) == 1 and "400" in str(refused[0])
    assert [len(b.items) for b in fake.created] == [6, 3]  # the three failed on the provider's side, again
    assert _stored(tmp_path) == 5 and fake.total_paid == 5 and not fake.paid_twice() and fake.served_sync == 0


@pytest.mark.parametrize("wire", WIRES)
def test_fallback_sync_sends_a_failed_item_synchronously(fake: BatchProvider, tmp_path: Path, wire: str) -> None:
    configure_batch(BatchSettings(gather_s=0.1, poll_s=0.02, fallback="sync"), tmp_path)
    fake.shuffle = False
    fake.expire_next = True
    with recording(tmp_path, "seed", "new_episodes"):
        outcomes = _all(_model(fake, wire), _asks(3))
    assert not [o for o in outcomes if isinstance(o, Exception)]
    assert len(fake.created) == 1 and fake.total_paid == 0 and fake.served_sync == 3 and _stored(tmp_path) == 3


@pytest.mark.parametrize("wire", WIRES)
def test_an_item_failing_every_attempt_fails_its_call_with_the_reasons(fake: BatchProvider, tmp_path: Path,
                                                                       wire: str) -> None:
    configure_batch(BatchSettings(gather_s=0.1, poll_s=0.02, max_attempts=2), tmp_path)
    fake.fail_items("errored", "errored")
    with recording(tmp_path, "seed", "new_episodes"):
        (outcome,) = _all(_model(fake, wire), _asks(1))
    assert isinstance(outcome, ModelCallError) and "failed in 2 batch(es)" in str(outcome)
    assert "--transfer-batch-fallback=sync" in str(outcome) and _stored(tmp_path) == 0


@pytest.mark.parametrize("wire", WIRES)
def test_the_wait_ceiling_stops_cleanly_and_the_same_run_later_collects_without_paying_twice(
        fake: BatchProvider, tmp_path: Path, wire: str) -> None:
    fake.turnaround_s = 1.5
    lines: list[str] = []
    configure_batch(BatchSettings(gather_s=0.1, poll_s=0.05, max_wait_s=0.4), tmp_path, lines.append)
    with recording(tmp_path, "seed", "new_episodes"):
        first = _all(_model(fake, wire), _asks(4))
    assert all(isinstance(o, BatchWaitExceeded) for o in first)
    assert "run the same command again" in str(first[0]) and len(fake.created) == 1
    assert any(line.startswith("batches: 1 pending, 0 finished; requests 0/4 done") for line in lines), lines
    fake.turnaround_s = 0.0  # the batch's turnaround has passed (no wait on the clock)
    configure_batch(FAST, tmp_path, lines.append)  # a new run: reads the manifest, adopts the batch
    with recording(tmp_path, "seed", "new_episodes"):
        second = _all(_model(fake, wire), _asks(4))
    assert not [o for o in second if isinstance(o, Exception)]
    assert len(fake.created) == 1 and fake.total_paid == 4 and not fake.paid_twice() and _stored(tmp_path) == 4


@pytest.mark.parametrize("wire", WIRES)
def test_an_uncertain_creation_is_looked_up_and_adopted(fake: BatchProvider, tmp_path: Path, wire: str) -> None:
    configure_batch(FAST, tmp_path)
    with recording(tmp_path, "seed", "new_episodes"):
        _all(_model(fake, wire), _asks(3))
    manifest = tmp_path / "batch-manifest.jsonl"
    kept = [line for line in manifest.read_text().splitlines() if '"created"' not in line]
    manifest.write_text("\n".join(kept) + "\n")  # as if the process died before the create call returned
    for path in (tmp_path / "seed").glob("*.yaml*"):
        path.unlink()  # and before anything was recorded
    lines: list[str] = []
    configure_batch(FAST, tmp_path, lines.append)
    with recording(tmp_path, "seed", "new_episodes"):
        again = _all(_model(fake, wire), _asks(3))
    assert not [o for o in again if isinstance(o, Exception)]
    assert len(fake.created) == 1 and fake.total_paid == 3 and any("adopted" in line for line in lines)
    assert Manifest.open(tmp_path).submissions.popitem()[1].batch_id == fake.created[0].id


def test_batch_traffic_is_never_recorded_and_replay_needs_no_lane(fake: BatchProvider, tmp_path: Path) -> None:
    configure_batch(FAST, tmp_path)
    model = _model(fake, "openai")
    with recording(tmp_path, "seed", "new_episodes"):
        first = _all(model, _asks(2))
    text = "".join(p.read_text() for p in (tmp_path / "seed").glob("*.yaml"))
    assert "/batches" not in text and "/files" not in text and text.count("chat/completions") == 2
    fake.stop()
    with recording(tmp_path, "seed", "none"):  # the lane stays on: replayed calls never reach it
        assert [r.text for r in _all(model, _asks(2))] == [r.text for r in first]


@pytest.mark.parametrize("wire", WIRES)
def test_a_create_whose_answer_is_lost_is_never_retried_blindly_but_looked_up(fake: BatchProvider, tmp_path: Path,
                                                                              wire: str) -> None:
    lines: list[str] = []
    configure_batch(FAST, tmp_path, lines.append)
    fake.fail_batch_calls("reset-after-create")
    with recording(tmp_path, "seed", "new_episodes"):
        outcomes = _all(_model(fake, wire), _asks(3))
    assert not [o for o in outcomes if isinstance(o, Exception)]
    assert len(fake.created) == 1 and fake.total_paid == 3 and any("adopted" in line for line in lines)


@pytest.mark.parametrize("wire", WIRES)
def test_provider_errors_on_create_and_status_are_survived(fake: BatchProvider, tmp_path: Path, wire: str) -> None:
    configure_batch(FAST, tmp_path)
    fake.fail_batch_calls(529 if wire == "anthropic" else 500, 429, 500)  # create twice refused, one status check
    with recording(tmp_path, "seed", "new_episodes"):
        outcomes = _all(_model(fake, wire), _asks(3))
    assert not [o for o in outcomes if isinstance(o, Exception)]
    assert len(fake.created) == 1 and fake.total_paid == 3 and _stored(tmp_path) == 3


class _Ledger:
    """A budget gate that records what it was asked."""

    def __init__(self) -> None:
        self.reserved: list[float] = []
        self.settled: list[float] = []
        self.released: list[int] = []

    def reserve(self, model_id: str, worst_usd: float) -> int:
        self.reserved.append(worst_usd)
        return len(self.reserved)

    def reserve_step(self, worst: list[tuple[str, float]]) -> list[int]:
        return [self.reserve(model_id, usd) for model_id, usd in worst]

    def settle(self, token: int, actual_usd: float, flag: str = "") -> None:
        self.settled.append(actual_usd)

    def settle_in_full(self, token: int, flag: str) -> None:
        self.settled.append(self.reserved[token - 1])

    def release(self, token: int) -> None:
        self.released.append(token)


def test_under_a_budget_each_parked_request_reserves_at_batch_prices_and_settles(fake: BatchProvider,
                                                                                 tmp_path: Path) -> None:
    from pytest_skilltransfer.pricing import prices
    from pytest_skilltransfer.models import spend_gate

    prices.configure_prices({"lane-anthropic": {"input": 2.0, "output": 4.0, "batch": {"input": 1.0, "output": 2.0}}})
    ledger = _Ledger()
    spend_gate.install(ledger)
    try:
        configure_batch(FAST, tmp_path)
        fake.shuffle = False
        fake.fail_items("invalid")
        with recording(tmp_path, "seed", "new_episodes"):
            outcomes = _all(_model(fake, "anthropic"), _asks(3))
    finally:
        spend_gate.install(None)
        prices.configure_prices({})
    assert sum(isinstance(o, ModelCallError) for o in outcomes) == 1
    assert len(ledger.reserved) == 3 and len(ledger.released) == 1 and len(ledger.settled) == 2
    replies = [o for o in outcomes if not isinstance(o, Exception)]
    expected = [(r.usage.input_tokens * 1.0 + r.usage.output_tokens * 2.0) / 1e6 for r in replies]
    assert sorted(ledger.settled) == pytest.approx(sorted(expected))  # batch rates, not the synchronous ones
    assert all(s <= r for s, r in zip(sorted(ledger.settled), sorted(ledger.reserved)))


def test_the_progress_line_gives_an_eta_from_the_observed_turnaround(fake: BatchProvider, tmp_path: Path) -> None:
    lines: list[str] = []
    configure_batch(FAST, tmp_path, lines.append)
    fake.turnaround_s = 0.3
    model = _model(fake, "anthropic")
    with recording(tmp_path, "seed", "new_episodes"):
        _all(model, _asks(3, "first"))  # no turnaround observed yet: no ETA
        assert not any("next answer in" in line for line in lines)
        _all(model, _asks(3, "second"))
    eta = [line for line in lines if "batches: 1 pending" in line and "batches take ~0:00:00, next answer in ~" in line]
    assert eta, lines


def test_under_a_budget_a_resumed_run_charges_the_adopted_answers_once(fake: BatchProvider, tmp_path: Path) -> None:
    from pytest_skilltransfer.models import spend_gate
    from pytest_skilltransfer.pricing import prices

    prices.configure_prices({"lane-anthropic": {"input": 2.0, "output": 4.0, "batch": {"input": 1.0, "output": 2.0}}})
    fake.turnaround_s = 1.5
    first_ledger, second_ledger = _Ledger(), _Ledger()
    try:
        spend_gate.install(first_ledger)
        configure_batch(BatchSettings(gather_s=0.1, poll_s=0.05, max_wait_s=0.4), tmp_path)
        with recording(tmp_path, "seed", "new_episodes"):
            first = _all(_model(fake, "anthropic"), _asks(4))
        assert all(isinstance(o, BatchWaitExceeded) for o in first)
        assert len(first_ledger.reserved) == 4 and len(first_ledger.released) == 4  # the step, whole; nothing charged
        fake.turnaround_s = 0.0  # the batch's turnaround has passed (no wait on the clock)
        spend_gate.install(second_ledger)
        configure_batch(FAST, tmp_path)  # a new run adopts the batch: nothing is sent, every answer is charged
        with recording(tmp_path, "seed", "new_episodes"):
            second = _all(_model(fake, "anthropic"), _asks(4))
    finally:
        spend_gate.install(None)
        prices.configure_prices({})
    replies = [o for o in second if not isinstance(o, Exception)]
    assert len(replies) == 4 and len(fake.created) == 1 and fake.total_paid == 4
    expected = [(r.usage.input_tokens * 1.0 + r.usage.output_tokens * 2.0) / 1e6 for r in replies]
    assert sorted(second_ledger.settled) == pytest.approx(sorted(expected)) and not second_ledger.released


@pytest.mark.parametrize("wire", WIRES)
def test_a_look_up_that_keeps_failing_ends_in_a_clear_error_after_bounded_tries(fake: BatchProvider, tmp_path: Path,
                                                                                  wire: str) -> None:
    lines: list[str] = []
    configure_batch(BatchSettings(gather_s=0.1, poll_s=0.02, max_checks=4, max_wait_s=20), tmp_path, lines.append)
    fake.fail_batch_calls("reset-after-create")
    fake.list_fault = 404
    started = time.monotonic()
    with recording(tmp_path, "seed", "new_episodes"):
        outcomes = _all(_model(fake, wire), _asks(2))
    assert time.monotonic() - started < 10 and fake.listings == 4  # 4 tries, with backoff, never to the ceiling
    assert all(isinstance(o, ModelCallError) and not isinstance(o, BatchWaitExceeded) for o in outcomes), outcomes
    text = str(outcomes[0])
    assert f"{tmp_path / 'batch-manifest.jsonl'}:1: the look-up of submission " in text and "4 time(s)" in text
    assert "a batch of 2 request(s) submitted" in text and "may exist at" in text
    submission = Manifest.open(tmp_path).submissions.popitem()[0]
    assert f"python -m pytest_skilltransfer batches adopt {submission} BATCH_ID" in text
    assert f"batches abandon {submission}" in text
    assert len(fake.created) == 1 and fake.served_sync == 0 and _stored(tmp_path) == 0
    assert [line for line in lines if "look-up failed" in line][-1].endswith("try 3 of 4, next in 0.16 s")

    # resolved by hand with the command the error names: the next run collects the batch, paying nothing again
    from pytest_skilltransfer.commands.cli import main

    assert main(["batches", "adopt", submission, fake.created[0].id, "--cassette-dir", str(tmp_path)]) == 0
    fake.list_fault = None
    configure_batch(FAST, tmp_path)
    with recording(tmp_path, "seed", "new_episodes"):
        again = _all(_model(fake, wire), _asks(2))
    assert not [o for o in again if isinstance(o, Exception)]
    assert len(fake.created) == 1 and fake.total_paid == 2 and _stored(tmp_path) == 2


@pytest.mark.parametrize("wire", WIRES)
def test_abandon_looks_the_batch_up_first_and_refuses_when_it_exists(fake: BatchProvider, tmp_path: Path, wire: str,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """`batches abandon` on a submission whose batch exists at the provider would pay its requests twice: it
    refuses, naming `adopt`; a batch id the provider does not know is abandoned; `--force` skips the look-up."""
    from pytest_skilltransfer.commands.cli import main

    configure_batch(BatchSettings(gather_s=0.1, poll_s=0.02, max_checks=2, max_wait_s=20), tmp_path)
    fake.fail_batch_calls("reset-after-create")
    fake.list_fault = 404
    with recording(tmp_path, "seed", "new_episodes"):
        _all(_model(fake, wire), _asks(2))
    submission = Manifest.open(tmp_path).submissions.popitem()[0]
    fake.list_fault = None
    capsys.readouterr()
    assert main(["batches", "abandon", submission, "--cassette-dir", str(tmp_path)]) == 2
    refusal = capsys.readouterr().out
    assert f"is batch {fake.created[0].id} at the provider" in refusal and "pay for them twice" in refusal
    assert f"batches adopt {submission} {fake.created[0].id}" in refusal
    assert not Manifest.open(tmp_path).submissions[submission].abandoned

    fake.list_fault = 500  # a look-up that fails is no answer either
    assert main(["batches", "abandon", submission, "--cassette-dir", str(tmp_path)]) == 2
    assert "could not be looked up" in capsys.readouterr().out and "--force" in refusal
    assert main(["batches", "abandon", submission, "--cassette-dir", str(tmp_path), "--force"]) == 0
    assert Manifest.open(tmp_path).submissions[submission].abandoned

    manifest = Manifest.open(tmp_path)  # a batch id the provider no longer has: abandoned after the look-up
    manifest.append({"event": "submit", "submission": "gone", "group": Manifest.open(tmp_path).submissions[submission].group,
                     "custom_ids": ["x"], "at": time.time()})
    manifest.append({"event": "created", "submission": "gone", "batch_id": "batch_9999"})
    fake.list_fault = None
    assert main(["batches", "abandon", "gone", "--cassette-dir", str(tmp_path)]) == 0
