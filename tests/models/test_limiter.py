"""The adaptive per-model limiter: lowers concurrency on 429/529/overload, honours retry-after, recovers."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from fake_provider import FakeProvider

from pytest_skilltransfer import cassettes
from pytest_skilltransfer.engine.ledger import CallCache, Meter
from pytest_skilltransfer.models.base import Message, Request
from pytest_skilltransfer.models.limiter import LIMITERS, AdaptiveLimiter, retry_after_s
from pytest_skilltransfer.models.providers import build_model


@pytest.fixture(autouse=True)
def _fresh_limiters():
    LIMITERS.configure()
    yield
    LIMITERS.configure()


def ask(text: str, sample_id: int = 0) -> Request:
    return Request(system="You are terse.", messages=(Message("user", text),), max_tokens=32, sample_id=sample_id)


def test_retry_after_prefers_milliseconds_and_ignores_garbage() -> None:
    assert retry_after_s({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert retry_after_s({"retry-after": "2"}) == 2.0
    assert retry_after_s({"retry-after": "soon"}) is None
    assert retry_after_s({}) is None


def test_a_rate_limit_halves_once_per_episode_and_successes_raise_it_back() -> None:
    lines: list[str] = []
    limiter = AdaptiveLimiter("m", 8, lines.append)
    limiter.observe(429, {"retry-after-ms": "5"})
    limiter.observe(429, {"retry-after-ms": "5000"})  # the same episode: calls already in flight
    assert limiter.limit == 4
    assert limiter.lowest == 4 and limiter.throttles == 2
    assert "HTTP 429 (rate limited), concurrency 8 -> 4" in lines[0]
    assert "concurrency stays 4" in lines[1] and "5.00s" in lines[1]
    limiter.succeeded()
    limiter.observe(529, {})  # a success ended the episode: the next push-back halves again
    assert limiter.limit == 2
    assert "HTTP 529 (overloaded)" in lines[-1]
    for _ in range(2):
        limiter.succeeded()
    assert limiter.limit == 3
    assert lines[-1] == "m: 2 calls in a row succeeded, concurrency 2 -> 3"
    for _ in range(3 + 4 + 5 + 6 + 7):
        limiter.succeeded()
    assert limiter.limit == 8  # never above the maximum
    limiter.succeeded()
    assert limiter.limit == 8


def test_new_calls_wait_for_retry_after(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [100.0]
    monkeypatch.setattr("pytest_skilltransfer.models.limiter.time.monotonic", lambda: clock[0])
    limiter = AdaptiveLimiter("m", 2)
    limiter.observe(429, {"retry-after": "3"})
    entered = threading.Event()

    def call() -> None:
        with limiter.slot():
            entered.set()

    worker = threading.Thread(target=call)
    worker.start()
    assert not entered.wait(0.05)  # paused: the clock has not reached the retry-after yet
    clock[0] += 3.0
    with limiter._cond:
        limiter._cond.notify_all()
    assert entered.wait(5)
    worker.join()


def test_a_full_limiter_admits_no_more_calls_than_its_limit() -> None:
    limiter = AdaptiveLimiter("m", 2)
    inside, most, lock, release = [0], [0], threading.Lock(), threading.Event()

    def call() -> None:
        with limiter.slot():
            with lock:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
            release.wait(5)
            with lock:
                inside[0] -= 1

    threads = [threading.Thread(target=call) for _ in range(5)]
    for thread in threads:
        thread.start()
    release.set()
    for thread in threads:
        thread.join()
    assert most[0] <= 2


def test_the_sdk_client_reports_429_to_the_models_limiter(tmp_path: Path, fake_provider: FakeProvider) -> None:
    lines: list[str] = []
    LIMITERS.configure(lambda model_id: 4 if model_id == "fake-claude" else None, lines.append)
    model = build_model(f"anthropic:fake-claude@{fake_provider.anthropic_url}")
    assert model.max_concurrency == 4
    fake_provider.fail_next(429, 529, retry_after_ms=20)
    with cassettes.recording(tmp_path, "seed-l", "once"):
        reply = model.complete(ask("Brief me."))  # the SDK retries after the advertised wait
    assert reply.text.startswith("fake answer")
    limiter = LIMITERS.get("fake-claude", 8)
    assert limiter.throttles == 2
    assert limiter.lowest == 1  # the retry after the advertised wait failed again: halved again
    assert lines[0].startswith("fake-claude: HTTP 429 (rate limited), concurrency 4 -> 2")
    assert "HTTP 529 (overloaded), concurrency 2 -> 1" in lines[1]


def test_the_local_llama_server_gets_one_call_at_a_time() -> None:
    from pytest_skilltransfer.models.local import LOCAL_MODEL_ALIAS

    LIMITERS.configure(lambda _model_id: 8)
    assert build_model(LOCAL_MODEL_ALIAS).max_concurrency == 1
    assert build_model("anthropic:claude-haiku-5-5").max_concurrency == 8


def test_concurrent_identical_requests_are_sent_once(fake_provider: FakeProvider) -> None:
    fake_provider.delay = 0.2
    model = build_model(f"openai:fake-gpt@{fake_provider.openai_url}")
    cache, meter = CallCache(), Meter()
    replies: list = []
    threads = [threading.Thread(target=lambda: replies.append(cache.call(model, ask("Same"), meter, "agent")))
               for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(fake_provider.received) == 1
    assert len({r.text for r in replies}) == 1
    tally = meter.snapshot()[("fake-gpt", "agent")]
    assert (tally.calls, tally.cached) == (1, 3)


def test_flex_resource_unavailable_is_retried_without_lowering_the_limit(tmp_path: Path,
                                                                         fake_provider: FakeProvider) -> None:
    from pytest_skilltransfer.models.aliases import set_user_aliases

    lines: list[str] = []
    LIMITERS.configure(lambda model_id: 4 if model_id == "fake-flex" else None, lines.append)
    set_user_aliases({"flexy": {"provider": "openai", "model": "fake-flex", "base_url": fake_provider.openai_url,
                                "service_tier": "flex"}})
    try:
        model = build_model("flexy")
        fake_provider.flex_unavailable = 2
        fake_provider.fail_next()  # nothing else scripted
        with cassettes.recording(tmp_path, "seed-f", "once"):
            reply = model.complete(ask("Brief me."))  # the SDK retries after our backoff
    finally:
        set_user_aliases({})
    assert reply.text.startswith("fake answer")
    assert [r["body"]["service_tier"] for r in fake_provider.received] == ["flex"] * 3
    limiter = LIMITERS.get("fake-flex", 8)
    assert limiter.throttles == 0 and limiter.limit == 4
    assert lines == ["fake-flex: HTTP 429 flex resource unavailable; retried after backoff, concurrency unchanged"] * 2
