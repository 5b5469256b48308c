"""--max-cost is a hard budget: reservations before sending, settled after, shared by processes.

A loopback provider that reports every reply as its whole `max_tokens` makes each call cost exactly its
worst case (input is free here), so a budget of k calls must admit exactly k, whatever the concurrency.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import signal

import pytest
from fake_provider import FakeProvider
from plugin_support import make_seed, project

from pytest_skilltransfer.pricing.reservations import BudgetExceeded, ReservationLedger

OUTPUT_PRICE = 1000.0  # $ per million output tokens: an agent call (512 tokens at most) costs $0.512
CALL_USD = 512 * OUTPUT_PRICE / 1_000_000


@pytest.fixture
def fake() -> FakeProvider:
    with FakeProvider() as server:
        server.report_max_output = True
        yield server


def _project(pytester: pytest.Pytester, fake: FakeProvider, seeds: tuple[str, ...], tasks: int = 6) -> None:
    project(pytester, ini="skilltransfer_pair = paid:paid\nskilltransfer_nights = 1\n", seeds=())
    for name in seeds:
        make_seed(pytester.path / "seeds", name, tasks=tasks)
    pytester.makepyprojecttoml(f'''
        [tool.skilltransfer.models]
        paid = "openai:fake-paid@{fake.openai_url}"
        [tool.skilltransfer.prices]
        "fake-paid" = {{ input = 0.0, output = {OUTPUT_PRICE} }}
    ''')


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["default-concurrency", "xdist-2"])
@pytest.mark.parametrize("k", [1, 3, 5])
def test_a_budget_of_k_calls_sends_exactly_k(pytester: pytest.Pytester, fake: FakeProvider, k: int,
                                             workers: list[str]) -> None:
    _project(pytester, fake, seeds=("alpha", "beta"))
    budget = round(k * CALL_USD, 6)
    result = pytester.runpytest_subprocess("--record-mode=once", "--snapshot-update", f"--max-cost={budget}",
                                           "--skilltransfer-json=r.json", *workers)
    assert len(fake.received) == k  # every baseline call reserves $0.512 and is charged exactly that
    assert result.parseoutcomes().get("errors") == 2
    report = json.loads((pytester.path / "r.json").read_text())["budget"]
    assert report["charged_usd"] <= budget
    assert report["charged_usd"] == pytest.approx(k * CALL_USD)
    assert report["live_calls"] == k and report["refused"] >= 1
    result.stdout.fnmatch_lines([f"*--max-cost {budget:g}: a call to fake-paid was not sent*"])


def test_a_reply_without_usage_is_charged_its_whole_reservation_and_flagged(
        pytester: pytest.Pytester, fake: FakeProvider) -> None:
    fake.report_max_output, fake.omit_usage = False, True
    _project(pytester, fake, seeds=("alpha",), tasks=2)
    result = pytester.runpytest_subprocess("--record-mode=once", "--snapshot-update", "--max-cost=1000",
                                           "--skilltransfer-json=r.json")
    sent = len(fake.received)
    assert sent > 0
    report = json.loads((pytester.path / "r.json").read_text())["budget"]
    assert report["charged_in_full"] == sent == report["live_calls"]
    assert report["charged_usd"] >= sent * CALL_USD  # at least every call's output at its max_tokens
    result.stdout.fnmatch_lines([f"*{sent} call(s) charged their whole reservation because their cost was unknown:",
                                 "*fake-paid: reply without usage: charged its worst case"])


def test_an_unpriced_judge_is_refused_before_any_call(pytester: pytest.Pytester, fake: FakeProvider) -> None:
    _project(pytester, fake, seeds=("alpha",))
    result = pytester.runpytest_subprocess("--max-cost=1", "--judge=openai:mystery-judge@https://llm.example.com")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--max-cost: the models named for this run include models without a price*",
                                 '*mystery-judge) has no price: add [[]tool.skilltransfer.prices[]] "mystery-judge"*'])
    assert fake.received == []


def test_an_unpriced_loopback_model_gets_no_request_and_the_run_names_it(pytester: pytest.Pytester,
                                                                        fake: FakeProvider) -> None:
    _project(pytester, fake, seeds=("alpha",))
    pytester.makepyprojecttoml(f'''
        [tool.skilltransfer.models]
        paid = "openai:fake-paid@{fake.openai_url}"
    ''')  # a loopback URL, no price: a local gateway in front of a paid API looks exactly like this
    result = pytester.runpytest_subprocess("--record-mode=once", "--max-cost=0.01")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(['*paid (fake-paid) has no price: add [[]tool.skilltransfer.prices[]] "fake-paid" = *'
                                 '*[[]tool.skilltransfer.models[]] "paid" = { provider = "openai", model = "fake-paid", '
                                 f'base_url = "{fake.openai_url}", free = true }}*'])
    assert fake.received == []


def test_a_seeds_unpriced_judge_is_refused_when_the_items_are_collected(pytester: pytest.Pytester,
                                                                         fake: FakeProvider) -> None:
    _project(pytester, fake, seeds=("alpha",))
    (pytester.path / "seeds" / "alpha" / "seed.toml").write_text(
        f'[judge]\nmodel = "openai:fake-judge@{fake.openai_url}"\n')
    result = pytester.runpytest_subprocess("--record-mode=once", "--max-cost=0.01")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--max-cost: the collected items include models without a price*",
                                 '*fake-judge) has no price: add [[]tool.skilltransfer.prices[]] "fake-judge"*'])
    assert fake.received == []


def test_under_xdist_a_seeds_unpriced_judge_fails_every_item_before_any_request(pytester: pytest.Pytester,
                                                                               fake: FakeProvider) -> None:
    _project(pytester, fake, seeds=("alpha",))
    (pytester.path / "seeds" / "alpha" / "seed.toml").write_text(
        f'[judge]\nmodel = "openai:fake-judge@{fake.openai_url}"\n')
    result = pytester.runpytest_subprocess("--record-mode=once", "--max-cost=1", "-n", "2")
    assert result.parseoutcomes().get("errors") == 1 and "INTERNALERROR" not in result.stdout.str()
    result.stdout.fnmatch_lines(['*fake-judge) has no price: add [[]tool.skilltransfer.prices[]] "fake-judge"*'])
    assert fake.received == []


def test_a_model_declared_free_runs_under_a_budget(pytester: pytest.Pytester, fake: FakeProvider) -> None:
    _project(pytester, fake, seeds=("alpha",), tasks=2)
    pytester.makepyprojecttoml(f'''
        [tool.skilltransfer.models]
        paid = {{ provider = "openai", model = "fake-paid", base_url = "{fake.openai_url}", free = true }}
    ''')
    result = pytester.runpytest_subprocess("--record-mode=once", "--snapshot-update", "--max-cost=0.01",
                                           "--skilltransfer-json=r.json")
    result.assert_outcomes(passed=1)
    assert json.loads((pytester.path / "r.json").read_text())["budget"]["charged_usd"] == 0.0
    assert fake.received


# -- the ledger itself ------------------------------------------------------------------------------


def _reserve_many(path: str, limit: float, amount: float, tries: int, queue: "multiprocessing.Queue[int]") -> None:
    ledger = ReservationLedger(path, limit, wait_s=5)
    admitted = 0
    for _ in range(tries):
        try:
            token = ledger.reserve("m", amount)
        except BudgetExceeded:
            break
        ledger.settle(token, amount)
        admitted += 1
    queue.put(admitted)


def test_processes_sharing_a_ledger_never_cross_the_limit(tmp_path) -> None:
    path, queue = str(tmp_path / "budget.sqlite3"), multiprocessing.get_context("spawn").Queue()
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_reserve_many, args=(path, 1.0, 0.07, 30, queue)) for _ in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    admitted = sum(queue.get(timeout=5) for _ in workers)
    assert admitted == 14  # 14 x $0.07 = $0.98; a 15th would cross $1
    state = ReservationLedger(path, 1.0).state()
    assert state.committed_usd == pytest.approx(0.98) and state.committed_usd <= 1.0


def test_a_reservation_waits_for_calls_in_flight_and_then_fits(tmp_path) -> None:
    import threading

    ledger = ReservationLedger(tmp_path / "b.sqlite3", 1.0, wait_s=5)
    first = ledger.reserve("m", 0.8)
    threading.Timer(0.2, lambda: ledger.settle(first, 0.1)).start()
    second = ledger.reserve("m", 0.8)  # fits once the first settles at $0.10
    ledger.settle(second, 0.8)
    assert ledger.state().committed_usd == pytest.approx(0.9)
    with pytest.raises(BudgetExceeded, match=r"\$0.900000 is spent and \$0.000000 reserved"):
        ledger.reserve("m", 0.2)  # nothing in flight could free enough: refused at once


def _reserve_and_die(path: str) -> None:
    ledger = ReservationLedger(path, 1.0)
    ledger.reserve("m", 0.6)  # "sent", never settled
    os.kill(os.getpid(), signal.SIGKILL)


def test_a_killed_process_leaves_only_the_calls_it_sent_and_is_not_waited_for(tmp_path) -> None:
    path = str(tmp_path / "b.sqlite3")
    process = multiprocessing.get_context("spawn").Process(target=_reserve_and_die, args=(path,))
    process.start()
    process.join(30)
    ledger = ReservationLedger(path, 1.0, wait_s=30)
    assert ledger.state().open_usd == pytest.approx(0.6)  # counted at its worst case: it may have been charged
    with pytest.raises(BudgetExceeded):
        ledger.reserve("m", 0.5)  # refused at once: the dead process's call will never settle
    ledger.settle(ledger.reserve("m", 0.4), 0.4)
    assert ledger.state().committed_usd == pytest.approx(1.0)


def test_a_step_is_reserved_whole_or_not_at_all(tmp_path) -> None:
    ledger = ReservationLedger(tmp_path / "budget.sqlite3", 1.0)
    first = ledger.reserve_step([("m", 0.3), ("m", 0.3)])
    assert first is not None and len(first) == 2
    assert ledger.reserve_step([("m", 0.3), ("m", 0.3)]) is None  # does not fit now, may once the first settles
    assert ledger.state().open_usd == pytest.approx(0.6)  # nothing of the waiting step was reserved
    for token in first:
        ledger.settle(token, 0.05)
    assert ledger.reserve_step([("m", 0.3), ("m", 0.3)]) is not None  # fits after the settles
    with pytest.raises(BudgetExceeded, match="a step of 4 request.s. to m was not sent.*never a trickle"):
        ledger.reserve_step([("m", 0.3)] * 4)  # cannot fit even with nothing in flight: refused whole
    assert ledger.state().refused == 4


def test_the_batch_lane_refuses_a_step_that_cannot_fit_whole_instead_of_trickling(pytester: pytest.Pytester) -> None:
    from batch_provider import BatchProvider

    with BatchProvider() as fake:
        project(pytester, ini="skilltransfer_pair = paid:paid\nskilltransfer_nights = 1\n", seeds=())
        make_seed(pytester.path / "seeds", "alpha", tasks=6)
        pytester.makepyprojecttoml(f'''
            [tool.skilltransfer.models]
            paid = {{ provider = "anthropic", model = "fake-paid", base_url = "{fake.anthropic_url}", lane = "batch" }}
            [tool.skilltransfer.prices]
            "fake-paid" = {{ input = 1.0, output = 1.0, batch = {{ input = 1.0, output = 1.0 }} }}
        ''')  # one request's worst case is about $0.002: a step of 6 needs about $0.012
        result = pytester.runpytest_subprocess("--record-mode=once", "--max-cost=0.006",
                                               "--transfer-batch-gather=0.3", "--transfer-batch-poll=0.05")
        assert fake.created == []  # not a batch of one or two requests: nothing
    result.stdout.fnmatch_lines(["*--max-cost 0.006: a step of * request(s) to fake-paid was not sent*"])
