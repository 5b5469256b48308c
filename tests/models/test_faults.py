"""Faults a provider can throw at a recording, over both wire formats: what is retried, what is stored, what fails.

Each test records through the real SDKs against a fault-injecting loopback provider and checks the
three things a reliability review asks: the requests sent, the interactions saved, and the outcome
(a reply equal to a clean run's, or one clear error); then that replay needs no connection at all.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml
from faulty_provider import FaultyProvider

from pytest_skilltransfer import cassettes
from pytest_skilltransfer.cassettes import CassetteMiss, recording, scan_for_secrets
from pytest_skilltransfer.cassettes import store as cassette_store
from pytest_skilltransfer.models import sdk_common
from pytest_skilltransfer.models.base import Message, ModelCallError, Request
from pytest_skilltransfer.models.providers import build_model

PROTOCOLS = ("anthropic", "openai")
KEY = "sk-ant-api03-" + "K7" * 24


def ask(text: str, sample_id: int = 0) -> Request:
    return Request(system="You are terse.", messages=(Message("user", text),), max_tokens=64, sample_id=sample_id)


def model_for(fake: FaultyProvider, protocol: str) -> object:
    url = fake.anthropic_url if protocol == "anthropic" else fake.openai_url
    return build_model(f"{protocol}:fault-{protocol}@{url}")


def saved(root: Path, seed: str) -> list[dict]:
    """Every interaction on disk for a seed: model files plus journals not folded yet."""
    from pytest_skilltransfer.cassettes.journal import live_or_orphan_entries

    folder = root / seed
    entries = [e for p in cassette_store.model_files(folder) for e in yaml.safe_load(p.read_text())["interactions"]]
    return entries + live_or_orphan_entries(folder)


def clean_reply(protocol: str, text: str) -> object:
    with FaultyProvider() as fake:
        return model_for(fake, protocol).complete(ask(text))


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("fault", ["429", "529", "500", "reset", "slow", "cut"])
def test_a_streak_of_five_retryable_faults_is_retried_at_the_default_budget(
        tmp_path: Path, faulty_provider: FaultyProvider, protocol: str, fault: str) -> None:
    if fault == "slow":
        faulty_provider.slow_s = 0.4
        sdk_common.configure_calls(sdk_common.CallPolicy(backoff_s=0.001, max_backoff_s=0.01, timeout_s=0.15))
    model = model_for(faulty_provider, protocol)
    faulty_provider.inject(*[fault] * 5)
    with recording(tmp_path, "seed", "once"):
        reply = model.complete(ask("Survive the streak"))
    assert faulty_provider.served == 6
    assert reply == clean_reply(protocol, "Survive the streak")
    entries = saved(tmp_path, "seed")
    assert [e["response"]["status"]["code"] for e in entries] == [200]
    served = faulty_provider.served
    with recording(tmp_path, "seed", "none"):
        assert model.complete(ask("Survive the streak")) == reply
    assert faulty_provider.served == served  # replay never connects


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_retry_after_is_waited_for(faulty_provider: FaultyProvider, protocol: str) -> None:
    faulty_provider.retry_after_ms = 300
    faulty_provider.inject("429", "429")
    started = time.monotonic()
    model_for(faulty_provider, protocol).complete(ask("Patience"))
    assert time.monotonic() - started >= 0.6  # the backoff alone would wait milliseconds
    assert faulty_provider.served == 3


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_an_exhausted_budget_fails_with_one_clear_message(faulty_provider: FaultyProvider, protocol: str) -> None:
    sdk_common.configure_calls(sdk_common.CallPolicy(max_retries=2, backoff_s=0.001, max_backoff_s=0.01))
    faulty_provider.inject("529", "529", "529")
    with pytest.raises(ModelCallError, match=r"HTTP 529\) after 2 retries: raise --provider-retries"):
        model_for(faulty_provider, protocol).complete(ask("Too much"))
    assert faulty_provider.served == 3


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize(("fault", "message"), [
    ("html200", r"answered HTTP 200 but the body is not JSON\. Body starts: '<!doctype html>"),
    ("unfinished", r"answered HTTP 200 but .* no (stop_reason|finish_reason)"),
    ("401", r"authentication failed .*HTTP 401"),
])
def test_a_bad_answer_is_never_stored_and_new_episodes_records_it_later(
        tmp_path: Path, faulty_provider: FaultyProvider, protocol: str, fault: str, message: str) -> None:
    model = model_for(faulty_provider, protocol)
    faulty_provider.inject(fault)
    with recording(tmp_path, "seed", "once"):
        with pytest.raises(ModelCallError, match=message) as caught:
            model.complete(ask("Bad day"))
    assert "Nothing was saved" in str(caught.value) or "nothing was saved" in str(caught.value)
    assert faulty_provider.served == 1
    assert saved(tmp_path, "seed") == []
    with recording(tmp_path, "seed", "new_episodes"):
        reply = model.complete(ask("Bad day"))
    assert faulty_provider.served == 2
    assert reply.text.startswith("fake answer")
    assert len(saved(tmp_path, "seed")) == 1


def _plant(root: Path, seed: str, entry: dict) -> Path:
    path = root / seed / "fault-anthropic.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(cassette_store.render([entry]))
    return path


def test_an_old_bad_entry_is_a_miss_and_new_episodes_replaces_it(tmp_path: Path, faulty_provider: FaultyProvider) -> None:
    model = model_for(faulty_provider, "anthropic")
    with recording(tmp_path, "seed", "once"):
        good = model.complete(ask("Once stored as a 401"))
    path = tmp_path / "seed" / "fault-anthropic.yaml"
    entry = yaml.safe_load(path.read_text())["interactions"][0]
    entry["response"]["status"] = {"code": 401, "message": "Unauthorized"}
    entry["response"]["body"] = {"json": {"type": "error", "error": {"type": "authentication_error",
                                                                      "message": "invalid x-api-key"}}}
    _plant(tmp_path, "seed", entry)
    served = faulty_provider.served
    with recording(tmp_path, "seed", "none"):
        with pytest.raises(CassetteMiss, match=r"fault-anthropic.yaml, interaction 1, holds HTTP 401"):
            model.complete(ask("Once stored as a 401"))
    with recording(tmp_path, "seed", "new_episodes"):
        assert model.complete(ask("Once stored as a 401")) == good
    assert faulty_provider.served == served + 1
    assert [e["response"]["status"]["code"] for e in saved(tmp_path, "seed")] == [200]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_key_echoed_in_a_body_is_redacted_in_the_reply_the_cassette_and_the_replay(
        tmp_path: Path, faulty_provider: FaultyProvider, protocol: str, monkeypatch: pytest.MonkeyPatch) -> None:
    variable = "ANTHROPIC_API_KEY" if protocol == "anthropic" else "OPENAI_API_KEY"
    monkeypatch.setenv(variable, KEY)
    model = model_for(faulty_provider, protocol)
    faulty_provider.inject("echo-body")
    with recording(tmp_path, "seed", "once"):
        reply = model.complete(ask("Tell me my key"))
    assert KEY not in reply.text and f"[redacted: {variable}]" in reply.text
    assert scan_for_secrets(tmp_path) == []
    assert KEY not in "".join(p.read_text() for p in (tmp_path / "seed").glob("*.yaml"))
    monkeypatch.delenv(variable)
    with recording(tmp_path, "seed", "none"):
        assert model.complete(ask("Tell me my key")) == reply


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_key_echoed_in_an_error_is_redacted_from_the_message(
        tmp_path: Path, faulty_provider: FaultyProvider, protocol: str, monkeypatch: pytest.MonkeyPatch) -> None:
    variable = "ANTHROPIC_API_KEY" if protocol == "anthropic" else "OPENAI_API_KEY"
    monkeypatch.setenv(variable, KEY)
    faulty_provider.inject("echo-401")
    with recording(tmp_path, "seed", "once"):
        with pytest.raises(ModelCallError) as caught:
            model_for(faulty_provider, protocol).complete(ask("Who am I"))
    assert KEY not in str(caught.value) and "[redacted: " in str(caught.value)
    assert saved(tmp_path, "seed") == []


def test_a_models_table_key_variable_is_redacted_too(tmp_path: Path, faulty_provider: FaultyProvider,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_skilltransfer.models.providers import configure_aliases

    secret = "team-gateway-" + "x9" * 12  # not token-shaped: only its variable makes it a secret
    monkeypatch.setenv("TEAM_GATEWAY_KEY", secret)
    configure_aliases({"gateway": {"provider": "openai", "model": "fault-gw", "base_url": faulty_provider.openai_url,
                                   "api_key_env": "TEAM_GATEWAY_KEY"}})
    try:
        faulty_provider.inject("echo-body")
        with recording(tmp_path, "seed", "once"):
            reply = build_model("gateway").complete(ask("Echo"))
    finally:
        configure_aliases({})
    assert secret not in reply.text and "[redacted: TEAM_GATEWAY_KEY]" in reply.text
    assert secret not in (tmp_path / "seed" / "fault-gw.yaml").read_text()


def test_the_secret_scan_refuses_a_write_that_still_holds_a_key(tmp_path: Path) -> None:
    path = tmp_path / "seed" / "m.yaml"
    with pytest.raises(cassette_store.SecretInCassette, match=r"refusing to write .*m.yaml.*line 2: Anthropic API key"):
        cassette_store.write_atomically(path, f"version: 2\nnote: {KEY}\n")
    assert not path.parent.exists() or list(path.parent.iterdir()) == []


def test_missing_usage_is_flagged_not_zero(faulty_provider: FaultyProvider) -> None:
    for protocol in PROTOCOLS:
        faulty_provider.shape_next("no_usage")
        reply = model_for(faulty_provider, protocol).complete(ask(f"No usage {protocol}"))
        assert reply.usage.unreported == 1
        assert model_for(faulty_provider, protocol).complete(ask(f"With usage {protocol}")).usage.unreported == 0


def test_recording_modes_need_the_folder_lock_beside_the_cassette(tmp_path: Path, faulty_provider: FaultyProvider,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path / "elsewhere"))
    with recording(tmp_path, "seed", "once"):
        model_for(faulty_provider, "openai").complete(ask("Where is the lock"))
    assert (tmp_path / "seed" / ".lock").exists() and not (tmp_path / "elsewhere").exists()
    assert cassettes.active_recording() is None
