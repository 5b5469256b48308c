"""A bounded wait: one provider call, retries included, never takes longer than the call deadline."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from faulty_provider import FaultyProvider
from plugin_support import project

from pytest_skilltransfer.cassettes import recording
from pytest_skilltransfer.models import sdk_common
from pytest_skilltransfer.models.base import Message, ModelCallError, Request
from pytest_skilltransfer.models.providers import build_model


def ask(text: str) -> Request:
    return Request(system="You are terse.", messages=(Message("user", text),), max_tokens=64)


def test_the_default_deadline_is_below_retries_times_timeout() -> None:
    policy = sdk_common.CallPolicy()
    assert policy.deadline_s < (policy.max_retries + 1) * policy.timeout_s
    assert policy.deadline_s >= policy.timeout_s


@pytest.mark.parametrize("protocol", ["anthropic", "openai"])
def test_a_provider_that_never_answers_costs_at_most_the_deadline(
        tmp_path: Path, faulty_provider: FaultyProvider, protocol: str) -> None:
    faulty_provider.slow_s = 30.0
    url = faulty_provider.anthropic_url if protocol == "anthropic" else faulty_provider.openai_url
    model = build_model(f"{protocol}:deadline@{url}")
    with recording(tmp_path, "seed", "once"):
        model.complete(ask("Warm up"))  # imports the SDK outside the timing, under the default deadline
        sdk_common.configure_calls(sdk_common.CallPolicy(backoff_s=0.05, max_backoff_s=0.1, timeout_s=600.0,
                                                         deadline_s=1.5))
        faulty_provider.inject(*["slow"] * 20)
        started = time.monotonic()
        with pytest.raises(ModelCallError) as caught:
            model.complete(ask("Are you there?"))
    took = time.monotonic() - started
    assert took < 10.0, took  # 1.5 s plus scheduling on a loaded machine; unbounded it would be 30 s
    message = str(caught.value)
    assert "call deadline of 1.5 s" in message and "--transfer-call-deadline" in message
    assert "1 attempt" in message or "attempts" in message


def test_retries_stop_at_the_deadline_and_the_message_says_what_was_tried(
        tmp_path: Path, faulty_provider: FaultyProvider) -> None:
    faulty_provider.retry_after_ms = 700
    model = build_model(f"anthropic:deadline@{faulty_provider.anthropic_url}")
    with recording(tmp_path, "seed", "once"):
        model.complete(ask("Warm up"))
        sdk_common.configure_calls(sdk_common.CallPolicy(backoff_s=0.05, max_backoff_s=0.1, deadline_s=1.0))
        faulty_provider.inject(*["429"] * 20)
        started = time.monotonic()
        with pytest.raises(ModelCallError) as caught:
            model.complete(ask("Are you there?"))
    assert time.monotonic() - started < 2.5
    assert faulty_provider.served <= 4
    assert "HTTP 429" in str(caught.value) and "call deadline of 1 s" in str(caught.value)


@pytest.mark.parametrize("value, message", [
    ("0", "--transfer-call-deadline: must be a positive number of seconds"),
    ("soon", "--transfer-call-deadline: expected a number of seconds"),
])
def test_the_deadline_option_is_validated(pytester: pytest.Pytester, value: str, message: str) -> None:
    project(pytester, seeds=("alpha",))
    result = pytester.runpytest_subprocess("--pair", "toy-a:toy-b", "--transfer-call-deadline", value)
    assert result.ret == pytest.ExitCode.USAGE_ERROR and message in result.stderr.str()


def test_the_deadline_has_an_ini_key(pytester: pytest.Pytester) -> None:
    project(pytester, ini="skilltransfer_call_deadline = never\n", seeds=("alpha",))
    result = pytester.runpytest_subprocess("--pair", "toy-a:toy-b")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "skilltransfer_call_deadline: expected a number of seconds" in result.stderr.str()
