"""Wire format for OpenAI models (and any OpenAI-compatible server at a base URL): Chat Completions.

Function calling maps to our ToolSpec/ToolCall; tool results are role "tool" messages. The sample id
is sent as `seed`, so repeated samples are distinct requests (and sample differently on servers
that honour it). The official API gets `max_completion_tokens` (GPT-6 rejects `max_tokens`);
compatible servers get `max_tokens`, which they all understand. No temperature or top_p is sent.
Prompt caching is automatic on OpenAI's side; `prompt_tokens_details.cached_tokens` (and
`cache_write_tokens` where reported) are metered.
A request's `response_schema` becomes a strict `json_schema` response format (structured output).
A service tier (the model's `service_tier`, else the run's) is sent as `service_tier`, so a flex
recording and a standard one are different requests; flex calls get the longer flex timeout.
"""

from __future__ import annotations

import json
from typing import Any

from .aliases import Target
from .base import Message, Reply, Request, ToolCall, Usage


CLIENT_CLASS = ("openai", "OpenAI")  # the SDK module and client class, imported on first use

def _wire_message(message: Message) -> dict[str, Any]:
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    if message.role == "assistant" and message.tool_calls:
        return {
            "role": "assistant",
            "content": message.content or None,
            "tool_calls": [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": json.dumps(call.arguments, sort_keys=True)},
                }
                for call in message.tool_calls
            ],
        }
    return {"role": message.role, "content": message.content}


def wire_messages(system: str, messages: tuple[Message, ...]) -> list[dict[str, Any]]:
    """Our turns as Chat Completions messages, the system text first."""
    head = [{"role": "system", "content": system}] if system else []
    return head + [_wire_message(m) for m in messages]


def service_tier(target: Target, run_tier: str | None) -> str | None:
    """The service tier a call to `target` asks for: the model's own, else the run's."""
    return target.service_tier or run_tier


def request_params(target: Target, request: Request, run_tier: str | None = None) -> dict[str, Any]:
    """Keyword arguments for `chat.completions.create`."""
    params: dict[str, Any] = {
        "model": target.model_id,
        "messages": wire_messages(request.system, request.messages),
        "seed": request.sample_id,
    }
    tier = service_tier(target, run_tier)
    if tier:
        params["service_tier"] = tier
    params["max_tokens" if target.base_url else "max_completion_tokens"] = request.max_tokens
    if request.tools:
        params["tools"] = [
            {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
            for t in request.tools
        ]
    if request.response_schema is not None:
        shape = request.response_schema
        params["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": shape.name, "description": shape.description, "schema": shape.schema, "strict": True},
        }
    return params


def _arguments(raw: str | None) -> dict[str, Any]:
    try:
        value = json.loads(raw or "{}")
    except ValueError:
        return {"_unparsed_arguments": raw}
    return value if isinstance(value, dict) else {"_arguments": value}


def _detail(details: Any, name: str) -> int:
    """A count from `usage.prompt_tokens_details` (an object or, from older servers, a dict), else 0."""
    value = details.get(name) if isinstance(details, dict) else getattr(details, name, None)
    return value if isinstance(value, int) else 0


def parse_reply(completion: Any, model_id: str) -> Reply:
    """A chat completion as our Reply (first choice); a `refusal` message becomes stop reason `refusal`."""
    choice = completion.choices[0] if completion.choices else None
    message = getattr(choice, "message", None)
    calls = tuple(
        ToolCall(id=call.id, name=call.function.name, arguments=_arguments(call.function.arguments))
        for call in (getattr(message, "tool_calls", None) or [])
        if getattr(call, "function", None) is not None
    )
    refusal = getattr(message, "refusal", None) or ""
    usage = getattr(completion, "usage", None)
    details = getattr(usage, "prompt_tokens_details", None)
    return Reply(
        text=(getattr(message, "content", None) or ""),
        tool_calls=calls,
        usage=Usage(
            input_tokens=getattr(usage, "prompt_tokens", 0) or 0,
            output_tokens=getattr(usage, "completion_tokens", 0) or 0,
            cache_write_tokens=_detail(details, "cache_write_tokens"),
            cache_read_tokens=_detail(details, "cached_tokens"),
            unreported=0 if usage is not None and getattr(usage, "prompt_tokens", None) is not None else 1,
        ),
        model=getattr(completion, "model", "") or model_id,
        stop_reason="refusal" if refusal else (getattr(choice, "finish_reason", "") or ""),
        refusal=refusal,
    )


def send(client: Any, target: Target, request: Request) -> Any:
    """One call; returns the SDK's raw response (`.http_response`, `.parse()`), checked before parsing."""
    from .sdk_common import call_policy

    policy = call_policy()
    params = request_params(target, request, policy.service_tier)
    timeout = policy.timeout_for(params.get("service_tier"))
    extra = {"timeout": timeout} if timeout != policy.timeout_s else {}
    return client.chat.completions.with_raw_response.create(**params, **extra)
