"""The SDK calls' cheaper routes send what the SDKs' typed calls send; clients keep no cookies; replies
are read from the response JSON as the SDKs' types read them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fake_provider import FakeProvider
from pytest_skilltransfer.models import anthropic_wire, openai_wire, sdk_common
from pytest_skilltransfer.models.aliases import Target
from pytest_skilltransfer.models.base import Message, Request, ResponseSchema, ToolCall, ToolSpec, Usage
from pytest_skilltransfer.models.providers import build_model

SEARCH = ToolSpec("search", "Search the notes.", {"type": "object", "properties": {"query": {"type": "string"}}})
RATING = ResponseSchema("rating", "A rating.", {"type": "object", "properties": {"stars": {"type": "integer"}},
                                                "required": ["stars"], "additionalProperties": False})
REQUESTS = {
    "plain": Request(system="Be brief.", messages=(Message("user", "Grüße, \"quoted\" ✓"),), max_tokens=50, sample_id=3),
    "tool loop": Request(
        system="Use the tools.",
        messages=(Message("user", "find x"),
                  Message("assistant", "Looking.", tool_calls=(ToolCall("c1", "search", {"query": "x", "n": 2}),)),
                  Message("tool", "found: x", tool_call_id="c1")),
        tools=(SEARCH,), sample_id=1),
    "structured, no system": Request(system="", messages=(Message("user", "rate it"),), response_schema=RATING,
                                     max_tokens=20),
    "sampled, tools": Request(system="Use the tools.", messages=(Message("user", "find x"),), tools=(SEARCH,),
                              sample_id=24, temperature=0.8),
}
TARGETS = {
    "official": Target("openai", "gpt-6-luna"),
    "flex tier": Target("openai", "gpt-6-luna", service_tier="flex"),
    "compatible server": Target("openai", "smollm2-135m", "http://127.0.0.1:9/v1"),
}
CHAT = {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-6-luna",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}}


def _capturing_client(sent: list[Any]) -> Any:
    import httpx2

    def answer(request: httpx2.Request) -> httpx2.Response:
        sent.append(request)
        return httpx2.Response(200, json=CHAT)

    return sdk_common.make_client(openai_wire.CLIENT_CLASS, "sk-test-key", "http://127.0.0.1:9/v1", 0, 600.0,
                                  transport=httpx2.MockTransport(answer))


def _typed_send(client: Any, target: Target, request: Request) -> Any:
    """The call as the SDK's typed method makes it (`chat.completions.with_raw_response.create`)."""
    policy = sdk_common.call_policy()
    params = openai_wire.request_params(target, request, policy.service_tier)
    timeout = policy.timeout_for(params.get("service_tier"))
    extra = {"timeout": timeout} if timeout != policy.timeout_s else {}
    return client.chat.completions.with_raw_response.create(**params, **extra).http_response


def _wire_view(request: Any) -> tuple[str, str, list[tuple[str, str]], bytes]:
    """What goes on the wire, less the idempotency key (a fresh random value per call on either route)."""
    headers = [(k, v) for k, v in request.headers.multi_items() if k.lower() != "idempotency-key"]
    return request.method, str(request.url), headers, request.content


@pytest.mark.parametrize("target_name", TARGETS)
@pytest.mark.parametrize("request_name", REQUESTS)
def test_openai_post_route_sends_the_typed_calls_bytes(target_name: str, request_name: str) -> None:
    target, request = TARGETS[target_name], REQUESTS[request_name]
    ours: list[Any] = []
    typed: list[Any] = []
    response = openai_wire.send(_capturing_client(ours), target, request)
    _typed_send(_capturing_client(typed), target, request)
    assert len(ours) == len(typed) == 1
    assert _wire_view(ours[0]) == _wire_view(typed[0])
    assert response.status_code == 200 and json.loads(response.content) == CHAT


def test_the_request_body_is_the_params_in_create_order() -> None:
    sent: list[Any] = []
    openai_wire.send(_capturing_client(sent), TARGETS["flex tier"], REQUESTS["tool loop"])
    assert list(json.loads(sent[0].content)) == ["model", "service_tier", "messages", "max_completion_tokens", "seed",
                                                 "tools"]


def test_clients_never_send_back_a_cookie(fake_provider: FakeProvider) -> None:  # noqa: F811 - fixture
    for spec in (f"anthropic:c@{fake_provider.anthropic_url}", f"openai:g@{fake_provider.openai_url}"):
        model = build_model(spec)
        for sample in range(3):
            model.complete(Request(system="s", messages=(Message("user", "hi"),), max_tokens=8, sample_id=sample))
    sent = [{k.lower() for k in r["headers"]} for r in fake_provider.received]
    assert len(sent) == 6 and not any("cookie" in names for names in sent)  # the fake sets one on every answer


def test_anthropic_reply_from_json() -> None:
    reply = anthropic_wire.parse_reply({
        "type": "message", "model": "claude-x", "stop_reason": "tool_use",
        "content": [{"type": "text", "text": "a"}, {"type": "thinking", "thinking": "hidden"},
                    {"type": "text", "text": "b"}, {"type": "tool_use", "id": "t1", "name": "search", "input": {"q": 1}},
                    {"type": "tool_use", "id": "t2", "name": "echo", "input": "raw"}],
        "usage": {"input_tokens": 10, "output_tokens": 4, "cache_creation_input_tokens": 100,
                  "cache_read_input_tokens": None},
    }, "fallback")
    assert (reply.text, reply.model, reply.stop_reason) == ("ab", "claude-x", "tool_use")
    assert [(c.id, c.name, c.arguments) for c in reply.tool_calls] == [("t1", "search", {"q": 1}),
                                                                      ("t2", "echo", {"input": "raw"})]
    assert reply.usage == Usage(input_tokens=110, output_tokens=4, cache_write_tokens=100, cache_read_tokens=0)
    bare = anthropic_wire.parse_reply({"type": "message", "content": [], "stop_reason": "end_turn"}, "fallback")
    assert (bare.model, bare.usage.unreported) == ("fallback", 1)


def test_openai_reply_from_json() -> None:
    reply = openai_wire.parse_reply({
        "model": "", "choices": [{"finish_reason": "tool_calls", "message": {
            "content": None, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "search", "arguments": "{\"q\": 1}"}},
                {"id": "c2", "type": "function", "function": {"name": "echo", "arguments": "not json"}},
                {"id": "c3", "type": "custom", "custom": {"name": "x", "input": "y"}}]}}],
        "usage": {"prompt_tokens": 7, "completion_tokens": 2,
                  "prompt_tokens_details": {"cached_tokens": 5, "cache_write_tokens": None}},
    }, "fallback")
    assert (reply.text, reply.model, reply.stop_reason) == ("", "fallback", "tool_calls")
    assert [(c.id, c.name, c.arguments) for c in reply.tool_calls] == [
        ("c1", "search", {"q": 1}), ("c2", "echo", {"_unparsed_arguments": "not json"})]
    assert reply.usage == Usage(input_tokens=7, output_tokens=2, cache_read_tokens=5)
    refused = openai_wire.parse_reply({"choices": [{"finish_reason": "stop", "message": {"refusal": "No."}}]}, "m")
    assert (refused.stop_reason, refused.refusal, refused.usage.unreported) == ("refusal", "No.", 1)


def test_one_redaction_pass_over_a_reply_equals_each_part_redacted(monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_skilltransfer.models.base import Reply
    from pytest_skilltransfer.models.providers import redact_reply
    from pytest_skilltransfer.guards.redaction import redact_json, redact_text

    key = "sk-ant-api03-" + "k" * 40
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    replies = [
        Reply(text=f"the key is {key}, see http://user:pw@host/x", refusal="ghp_" + "a" * 36,
              tool_calls=(ToolCall("1", "save", {"value": key, key: ["AKIA" + "B" * 16]}), ToolCall("2", "noop", {}))),
        Reply(text="nothing secret", tool_calls=(ToolCall("3", "search", {"query": "x"}),)),
    ]
    for reply in replies:
        expected = (redact_text(reply.text), redact_text(reply.refusal), [redact_json(c.arguments) for c in reply.tool_calls])
        redacted = redact_reply(reply)
        assert (redacted.text, redacted.refusal, [c.arguments for c in redacted.tool_calls]) == expected
        assert [(c.id, c.name) for c in redacted.tool_calls] == [(c.id, c.name) for c in reply.tool_calls]
    assert redact_reply(replies[1]) is replies[1]  # nothing to redact: the reply itself
    assert key not in repr(redact_reply(replies[0]))


def test_a_temperature_is_sent_only_when_the_request_sets_one() -> None:
    from pytest_skilltransfer.models import anthropic_wire

    greedy, sampled = REQUESTS["plain"], REQUESTS["sampled, tools"]
    target = TARGETS["compatible server"]
    assert "temperature" not in openai_wire.request_params(target, greedy)
    assert "temperature" not in greedy.canonical() and sampled.canonical()["temperature"] == 0.8
    assert list(openai_wire.request_params(target, sampled))[-3:] == ["seed", "temperature", "tools"]
    assert openai_wire.request_params(target, sampled)["seed"] == 24  # the sample id seeds the sampler
    claude = Target("anthropic", "claude-x")
    assert "temperature" not in anthropic_wire.request_params(claude, greedy)
    assert list(anthropic_wire.request_params(claude, sampled))[-1] == "temperature"  # where `extra_body` puts it
