"""Every stop reason over both wire formats: recorded, replayed to equal results, and counted."""

from __future__ import annotations

from pathlib import Path

import pytest
from faulty_provider import SHAPES, FaultyProvider

from pytest_skilltransfer.engine.agent import AgentContext, run_task
from pytest_skilltransfer.cassettes import recording
from pytest_skilltransfer.engine.judges import Judge
from pytest_skilltransfer.engine.ledger import CallCache, Meter
from pytest_skilltransfer.models.base import Message, Request
from pytest_skilltransfer.models.providers import build_model
from pytest_skilltransfer.models.stops import problem_counts, stop_kind
from pytest_skilltransfer.engine.seed_data import Task

EXPECTED = {  # shape -> (anthropic stop_reason, openai stop_reason, kind)
    "max_tokens": ("max_tokens", "length", "truncated"),
    "refusal": ("refusal", "refusal", "refusal"),
    "content_filter": ("refusal", "content_filter", None),  # Anthropic has no content filter: it refuses
    "pause_turn": ("end_turn", "length", None),  # continued on Anthropic; cut off on Chat Completions
    "empty": ("end_turn", "stop", "empty"),
    "no_usage": ("end_turn", "stop", "complete"),
}


def _attempt(model: object, text: str) -> object:
    task = Task(id="t", text=text, judge=Judge(kind="rule", checks=()))
    ctx = AgentContext(model=model, cache=CallCache(), meter=Meter(), role="target")  # type: ignore[arg-type]
    return run_task(ctx, "Answer briefly.", task, sample_id=0)


@pytest.mark.parametrize("protocol", ["anthropic", "openai"])
@pytest.mark.parametrize("shape", SHAPES)
def test_each_stop_reason_records_and_replays_to_an_equal_attempt(tmp_path: Path, protocol: str, shape: str) -> None:
    fake = FaultyProvider().start()
    url = fake.anthropic_url if protocol == "anthropic" else fake.openai_url
    model = build_model(f"{protocol}:stops-{protocol}@{url}")
    fake.shape_next(shape)
    with recording(tmp_path, "seed", "once"):
        recorded = _attempt(model, f"Explain {shape}")
    fake.stop()
    with recording(tmp_path, "seed", "none"):
        replayed = _attempt(model, f"Explain {shape}")
    assert replayed == recorded
    anthropic_reason, openai_reason, kind = EXPECTED[shape]
    assert recorded.stop_reason == (anthropic_reason if protocol == "anthropic" else openai_reason)
    if kind is not None:
        assert stop_kind(recorded.stop_reason, recorded.text) == kind
    if shape == "pause_turn" and protocol == "anthropic":  # sent back once and continued to the end
        assert len(fake.received) == 2 and recorded.text.startswith("partial answer (pause_turn)fake answer")
        assert fake.received[1]["body"]["messages"][-1]["role"] == "assistant"


def test_openai_refusal_text_is_kept() -> None:
    with FaultyProvider() as fake:
        fake.shape_next("refusal")
        reply = build_model(f"openai:r@{fake.openai_url}").complete(Request(system="", messages=(Message("user", "no"),)))
    assert (reply.stop_reason, reply.text, reply.refusal) == ("refusal", "", "I can't help with that request.")


def test_problem_counts_cover_every_kind() -> None:
    samples = [("max_tokens", "cut"), ("length", "cut"), ("refusal", ""), ("content_filter", ""),
               ("end_turn", "  "), ("stop", "fine"), ("tool_use", ""), ("pause_turn", "half")]
    assert problem_counts(samples) == {"truncated": 3, "refusal": 1, "content_filter": 1, "empty": 2}
