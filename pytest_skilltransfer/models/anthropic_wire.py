"""Wire format for Claude: the official SDK's Messages API, with tool use for the agent's tool loop.

Tool results (role "tool") become `tool_result` blocks in a user turn; consecutive user-side turns
merge into one message, as the API requires. The sample id travels as `metadata.user_id`
("skilltransfer-sample-<n>") so repeated samples are distinct requests. No top_p is sent, and no
temperature unless the request sets one (the sampled A/A check; some current models refuse it):
determinism comes from the cassettes.

Prompt caching: the shared prefix of every call (the tools, then the skill as system prompt) gets
one `cache_control` breakpoint on the system block when it is long enough for the model's minimum
cacheable prefix (`CACHE_MIN_TOKENS`, estimated at 4 characters per token). Models whose minimum is
unknown (local servers, new ids) are never marked, so their requests and cassettes do not change. With the
call policy's `prompt_cache` off (`--prompt-cache=off`) nothing is marked. A request's
`response_schema` becomes a tool the reply is forced to call (`tool_choice`), the structured reply.
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any, Callable

from .base import Message, Reply, Request, ToolCall, Usage
from .sdk_common import CallPolicy, call_policy, make_client
from .wire import SuffixWire

if TYPE_CHECKING:
    from .aliases import Target


CLIENT_CLASS = ("anthropic", "Anthropic")  # the SDK module and client class, imported on first use

# Minimum cacheable prefix in tokens per model (Anthropic prompt-caching docs, as of 2026-12-01);
# below it the API skips caching silently. Globs allowed; the longest matching key wins.
CACHE_MIN_TOKENS: dict[str, int] = {
    "claude-opus-5*": 512,
    "claude-sonnet-5*": 1024,
    "claude-sonnet-4-*": 1024,
    "claude-opus-4-8*": 1024,
    "claude-haiku-4-5*": 4096,
    "claude-opus-4-5*": 4096,
    "claude-opus-4-6*": 4096,
}
CHARS_PER_TOKEN = 4  # a low estimate of tokens from characters: a marked prefix is long enough


def sample_user_id(sample_id: int) -> str:
    """The metadata.user_id carrying the sample id."""
    return f"skilltransfer-sample-{sample_id}"


def _assistant_blocks(message: Message) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = [{"type": "text", "text": message.content}] if message.content else []
    blocks += [{"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments} for c in message.tool_calls]
    return blocks


def _user_block(message: Message) -> dict[str, Any]:
    if message.role == "tool":
        return {"type": "tool_result", "tool_use_id": message.tool_call_id, "content": message.content}
    return {"type": "text", "text": message.content}


def wire_messages(messages: tuple[Message, ...]) -> list[dict[str, Any]]:
    """Our turns as Messages API turns (user-side runs merged into one user message)."""
    wire: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "assistant":
            wire.append({"role": "assistant", "content": _assistant_blocks(message)})
        elif wire and wire[-1]["role"] == "user":
            wire[-1]["content"].append(_user_block(message))
        else:
            wire.append({"role": "user", "content": [_user_block(message)]})
    for turn in wire:  # a lone text block reads better (and is sent) as a plain string
        blocks = turn["content"]
        if len(blocks) == 1 and blocks[0]["type"] == "text":
            turn["content"] = blocks[0]["text"]
        elif not blocks:
            turn["content"] = ""
    return wire


def cache_min_tokens(model_id: str) -> int | None:
    """The model's minimum cacheable prefix, or None when unknown."""
    if model_id in CACHE_MIN_TOKENS:
        return CACHE_MIN_TOKENS[model_id]
    globs = sorted((k for k in CACHE_MIN_TOKENS if fnmatchcase(model_id, k)), key=len)
    return CACHE_MIN_TOKENS[globs[-1]] if globs else None


def _prefix_chars(params: dict[str, Any]) -> int:
    tools = params.get("tools") or []
    return len(params.get("system") or "") + sum(len(str(t)) for t in tools)


def caches_prefix(model_id: str, prefix_chars: int) -> bool:
    """Whether a shared prefix (system and tools) of `prefix_chars` characters is marked for caching."""
    minimum = cache_min_tokens(model_id)
    return minimum is not None and prefix_chars // CHARS_PER_TOKEN >= minimum


def mark_cache_prefix(params: dict[str, Any]) -> dict[str, Any]:
    """Put a `cache_control` breakpoint after the shared prefix when it is long enough to cache."""
    if not params.get("system") or not caches_prefix(str(params.get("model", "")), _prefix_chars(params)):
        return params
    block = {"type": "text", "text": params["system"], "cache_control": {"type": "ephemeral"}}
    return {**params, "system": [block]}


def request_params(target: Target, request: Request, prompt_cache: bool = True) -> dict[str, Any]:
    """Keyword arguments for `messages.create` (`prompt_cache` False: no prefix is marked)."""
    params: dict[str, Any] = {
        "model": target.model_id,
        "max_tokens": request.max_tokens,
        "messages": wire_messages(request.messages),
        "metadata": {"user_id": sample_user_id(request.sample_id)},
    }
    if request.system:
        params["system"] = request.system
    if request.tools:
        params["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": t.parameters} for t in request.tools
        ]
    if request.response_schema is not None:  # forced tool use: the reply is one call with the schema's input
        shape = request.response_schema
        params["tools"] = params.get("tools", []) + [
            {"name": shape.name, "description": shape.description, "input_schema": shape.schema}
        ]
        params["tool_choice"] = {"type": "tool", "name": shape.name}
    if request.temperature is not None:  # not a `messages.create` parameter: sent last, as its `extra_body` is
        params["temperature"] = request.temperature
    return mark_cache_prefix(params) if prompt_cache else params


def parse_reply(message: dict[str, Any], model_id: str) -> Reply:
    """A Messages API response's JSON as our Reply."""
    texts, calls = [], []
    for block in message.get("content") or []:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            texts.append(block.get("text") or "")
        elif kind == "tool_use":
            arguments = block.get("input")
            arguments = arguments if isinstance(arguments, dict) else {"input": arguments}
            calls.append(ToolCall(id=block.get("id") or "", name=block.get("name") or "", arguments=dict(arguments)))
    usage = message.get("usage") if isinstance(message.get("usage"), dict) else {}
    written, read = usage.get("cache_creation_input_tokens") or 0, usage.get("cache_read_input_tokens") or 0
    return Reply(
        text="".join(texts),
        tool_calls=tuple(calls),
        usage=Usage(input_tokens=(usage.get("input_tokens") or 0) + written + read,
                    output_tokens=usage.get("output_tokens") or 0, cache_write_tokens=written, cache_read_tokens=read,
                    unreported=0 if usage.get("input_tokens") is not None else 1),
        model=message.get("model") or model_id,
        stop_reason=message.get("stop_reason") or "",
    )


def send(client: Any, target: Target, request: Request) -> Any:
    """One call (`messages.with_raw_response.create`: the SDK's retries, timeouts and errors); returns the
    httpx response, checked and parsed by the caller (its JSON is read once, not into the SDK's types)."""
    return send_body(client, request_params(target, request, prompt_cache=call_policy().prompt_cache))


def send_body(client: Any, params: dict[str, Any]) -> Any:
    """`send` for a body already built (`request_params`): the one route the SDK builds requests by."""
    from .sent_bodies import note_sent

    return note_sent(WIRE.name, params, client.messages.with_raw_response.create(**params).http_response)


def answer_problem(data: dict[str, Any]) -> str | None:
    """Why a 2xx JSON object is not a finished Messages API message, or None."""
    if data.get("type") != "message":
        return f"the body is not a Messages API message (type {data.get('type')!r})"
    if not isinstance(data.get("content"), list):
        return "the message has no content list"
    if not data.get("stop_reason"):
        return "the message has no stop_reason (an unfinished stream or a cut-off body)"
    return None


def _batch_api(client: Any) -> Any:
    from .batch.apis import AnthropicBatches

    return AnthropicBatches(client)


class AnthropicWire(SuffixWire):
    """The Messages API (`POST {base}/v1/messages`) through the official `anthropic` SDK (`models.wire.Wire`)."""

    name = "anthropic"
    sdk = "anthropic"
    key_variables = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
    default_base_url = "https://api.anthropic.com"
    secret_headers = frozenset({"x-api-key", "anthropic-organization-id"})
    kept_request_headers = frozenset({"anthropic-version", "anthropic-beta"})
    stop_kinds = {"end_turn": "complete", "stop_sequence": "complete", "tool_use": "tool_use",
                  "max_tokens": "truncated", "model_context_window_exceeded": "truncated", "refusal": "refusal",
                  "pause_turn": "truncated"}  # still paused when the tool-step limit ended the attempt
    service_tiers: tuple[str, ...] = ()
    batch_api: Callable[[Any], Any] | None = staticmethod(_batch_api)
    SUFFIX = "/v1/messages"  # appended to the base URL's path by the SDK

    def listed_models(self) -> tuple[str, ...]:
        from .aliases import sdk_literals

        return tuple(sdk_literals("anthropic", "types/model_param.py"))

    def builtin_aliases(self, listed: tuple[str, ...]) -> dict[str, str]:
        from .aliases import newest_claude_aliases

        return newest_claude_aliases(listed)

    def serves_bare_id(self, name: str, listed: tuple[str, ...]) -> bool:
        return name in listed or name.startswith("claude-")

    def request_params(self, target: Target, request: Request, policy: CallPolicy) -> dict[str, Any]:
        return request_params(target, request, prompt_cache=policy.prompt_cache)

    def max_output(self, body: dict[str, Any]) -> int | None:
        output = body.get("max_tokens")
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
        return None


WIRE = AnthropicWire()
