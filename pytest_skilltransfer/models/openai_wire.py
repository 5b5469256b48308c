"""Wire format for OpenAI models (and any OpenAI-compatible server at a base URL): Chat Completions.

Function calling maps to our ToolSpec/ToolCall; tool results are role "tool" messages. The sample id
is sent as `seed`, so repeated samples are distinct requests (and sample differently on servers
that honour it). The official API gets `max_completion_tokens` (GPT-6 rejects `max_tokens`);
compatible servers get `max_tokens`, which they all understand. No top_p is sent, and no temperature
unless the request sets one (the sampled A/A check).
Prompt caching is automatic on OpenAI's side; `prompt_tokens_details.cached_tokens` (and
`cache_write_tokens` where reported) are metered.
A request's `response_schema` becomes a strict `json_schema` response format (structured output).
A service tier (the model's `service_tier`, else the run's) is sent as `service_tier`, so a flex
recording and a standard one are different requests; flex calls get the longer flex timeout.

A call goes through the client's `post` with the body already plain JSON (see `send`); the reply is
read from the response's JSON (`parse_reply`), which the caller has checked to be a complete answer.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Callable

from .base import Message, Reply, Request, ToolCall, Usage
from .sdk_common import CallPolicy, call_policy, make_client
from .wire import SuffixWire

if TYPE_CHECKING:
    from .aliases import Target


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
    """The tier of a model's requests: its own lane `flex`, else its own `service_tier`, else the run's
    (unless the model's own lane is another: standard or batch)."""
    if target.lane == "flex":
        return "flex"
    if target.lane in ("standard", "batch"):
        return target.service_tier
    return target.service_tier or run_tier


def request_params(target: Target, request: Request, run_tier: str | None = None) -> dict[str, Any]:
    """The request body for `/chat/completions`, keys in the order `chat.completions.create` writes them."""
    params: dict[str, Any] = {"model": target.model_id}
    tier = service_tier(target, run_tier)
    if tier:
        params["service_tier"] = tier
    params["messages"] = wire_messages(request.system, request.messages)
    params["max_tokens" if target.base_url else "max_completion_tokens"] = request.max_tokens
    if request.response_schema is not None:
        shape = request.response_schema
        params["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": shape.name, "description": shape.description, "schema": shape.schema, "strict": True},
        }
    params["seed"] = request.sample_id
    if request.temperature is not None:
        params["temperature"] = request.temperature
    if request.tools:
        params["tools"] = [
            {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
            for t in request.tools
        ]
    return params


def _arguments(raw: str | None) -> dict[str, Any]:
    try:
        value = json.loads(raw or "{}")
    except ValueError:
        return {"_unparsed_arguments": raw}
    return value if isinstance(value, dict) else {"_arguments": value}


def _field(mapping: Any, name: str) -> Any:
    """`mapping[name]` of a JSON object, None when it is missing or the object is not one."""
    return mapping.get(name) if isinstance(mapping, dict) else None


def _detail(details: Any, name: str) -> int:
    """A count from `usage.prompt_tokens_details`, else 0."""
    value = _field(details, name)
    return value if isinstance(value, int) else 0


def parse_reply(completion: dict[str, Any], model_id: str) -> Reply:
    """A chat completion's JSON as our Reply (first choice); a `refusal` message becomes stop reason `refusal`."""
    choices = completion.get("choices")
    choice = choices[0] if isinstance(choices, list) and choices else None
    message = _field(choice, "message")
    calls = tuple(
        ToolCall(id=_field(call, "id") or "", name=function.get("name") or "", arguments=_arguments(function.get("arguments")))
        for call in (_field(message, "tool_calls") or [])
        if isinstance(function := _field(call, "function"), dict)
    )
    refusal = _field(message, "refusal") or ""
    usage = completion.get("usage")
    details = _field(usage, "prompt_tokens_details")
    return Reply(
        text=_field(message, "content") or "",
        tool_calls=calls,
        usage=Usage(
            input_tokens=_field(usage, "prompt_tokens") or 0,
            output_tokens=_field(usage, "completion_tokens") or 0,
            cache_write_tokens=_detail(details, "cache_write_tokens"),
            cache_read_tokens=_detail(details, "cached_tokens"),
            unreported=0 if _field(usage, "prompt_tokens") is not None else 1,
        ),
        model=completion.get("model") or model_id,
        stop_reason="refusal" if refusal else (_field(choice, "finish_reason") or ""),
        refusal=refusal,
    )


# `with_raw_response` is this header; the SDK sends it, so the request stays byte for byte what
# `chat.completions.with_raw_response.create` sends (body, headers) while skipping its typed transform.
_RAW_RESPONSE = {"X-Stainless-Raw-Response": "true"}
_SECURITY = {"bearer_auth": True}  # the credentials `chat.completions.create` sends


def send(client: Any, target: Target, request: Request) -> Any:
    """One call through the client's `post` (the SDK's retries, timeouts and errors); returns the
    httpx response, checked and parsed by the caller.

    The body is plain JSON already, so the SDK's typed request transform (which would return it
    unchanged at a third of a millisecond per call) is skipped: `request_params` writes the keys in
    the order `create` does, and the bytes sent are the same (tests/models/test_sdk_route.py)."""
    return send_body(client, request_params(target, request, call_policy().service_tier))


def send_body(client: Any, params: dict[str, Any]) -> Any:
    """`send` for a body already built (`request_params`): the one route the SDK builds requests by."""
    from openai.types.chat import ChatCompletion

    policy = call_policy()
    options: dict[str, Any] = {"headers": _RAW_RESPONSE, "security": _SECURITY}
    timeout = policy.timeout_for(params.get("service_tier"))
    if timeout != policy.timeout_s:
        options["timeout"] = timeout
    from .sent_bodies import note_sent

    response = client.post("/chat/completions", cast_to=ChatCompletion, body=params, options=options)
    return note_sent(WIRE.name, params, response.http_response)


def answer_problem(data: dict[str, Any]) -> str | None:
    """Why a 2xx JSON object is not a finished chat completion (every choice with a finish reason), or None."""
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        return "the completion has no choices"
    for choice in choices:
        if not isinstance(choice, dict) or not isinstance(choice.get("message"), dict):
            return "a choice has no message"
        if not choice.get("finish_reason"):
            return "a choice has no finish_reason (an unfinished stream or a cut-off body)"
    return None


def _batch_api(client: Any) -> Any:
    from .batch.apis import OpenAIBatches

    return OpenAIBatches(client)


class OpenAIWire(SuffixWire):
    """Chat Completions (`POST {base}/chat/completions`) through the official `openai` SDK, for OpenAI and any
    compatible server (`models.wire.Wire`)."""

    name = "openai"
    sdk = "openai"
    key_variables = ("OPENAI_API_KEY",)
    default_base_url = "https://api.openai.com/v1"
    secret_headers = frozenset({"openai-organization", "openai-project"})
    kept_request_headers: frozenset[str] = frozenset()
    stop_kinds = {"stop": "complete", "tool_calls": "tool_use", "function_call": "tool_use", "length": "truncated",
                  "refusal": "refusal", "content_filter": "content_filter"}
    service_tiers = ("flex", "default")
    batch_api: Callable[[Any], Any] | None = staticmethod(_batch_api)
    SUFFIX = "/chat/completions"  # appended to the base URL's path by the SDK

    def listed_models(self) -> tuple[str, ...]:
        from .aliases import sdk_literals

        return tuple(sdk_literals("openai", "types/shared/chat_model.py"))

    def builtin_aliases(self, listed: tuple[str, ...]) -> dict[str, str]:
        from .aliases import newest_gpt_aliases

        return newest_gpt_aliases(listed)

    def serves_bare_id(self, name: str, listed: tuple[str, ...]) -> bool:
        return name in listed

    def request_params(self, target: Target, request: Request, policy: CallPolicy) -> dict[str, Any]:
        return request_params(target, request, policy.service_tier)

    def max_output(self, body: dict[str, Any]) -> int | None:
        output = body.get("max_tokens") or body.get("max_completion_tokens")
        return output if isinstance(output, int) else None

    def make_client(self, api_key: str, base_url: str | None, max_retries: int, timeout: float, policy: CallPolicy,
                    transport: Any = None, on_request: Callable[[Any], None] | None = None) -> Any:
        return make_client(CLIENT_CLASS, api_key, base_url, max_retries, timeout, policy, transport, on_request)

    def send_body(self, client: Any, model_id: str, params: dict[str, Any], policy: CallPolicy) -> Any:
        return send_body(client, params)

    def answer_problem(self, answer: dict[str, Any]) -> str | None:
        return answer_problem(answer)

    def parse_reply(self, answer: dict[str, Any], model_id: str) -> Reply:
        return parse_reply(answer, model_id)

    def service_tier(self, target: Target, run_tier: str | None) -> str | None:
        return service_tier(target, run_tier)


WIRE = OpenAIWire()
