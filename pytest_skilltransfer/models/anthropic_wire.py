"""Wire format for Claude: the official SDK's Messages API, with tool use for the agent's tool loop.

Tool results (role "tool") become `tool_result` blocks in a user turn; consecutive user-side turns
merge into one message, as the API requires. The sample id travels as `metadata.user_id`
("skilltransfer-sample-<n>") so repeated samples are distinct requests. No temperature or top_p is
sent: some current models refuse them, and determinism comes from the cassettes. A request's
`response_schema` becomes a tool the reply is forced to call (`tool_choice`), the structured reply.
"""

from __future__ import annotations

from typing import Any

from .aliases import Target
from .base import Message, Reply, Request, ToolCall, Usage


CLIENT_CLASS = ("anthropic", "Anthropic")  # the SDK module and client class, imported on first use

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


def request_params(target: Target, request: Request) -> dict[str, Any]:
    """Keyword arguments for `messages.create`."""
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
    return params


def parse_reply(message: Any, model_id: str) -> Reply:
    """A Messages API response as our Reply."""
    texts, calls = [], []
    for block in message.content or []:
        kind = getattr(block, "type", "")
        if kind == "text":
            texts.append(block.text)
        elif kind == "tool_use":
            arguments = block.input if isinstance(block.input, dict) else {"input": block.input}
            calls.append(ToolCall(id=block.id, name=block.name, arguments=dict(arguments)))
    usage = message.usage
    input_tokens = (
        (getattr(usage, "input_tokens", 0) or 0)
        + (getattr(usage, "cache_creation_input_tokens", 0) or 0)
        + (getattr(usage, "cache_read_input_tokens", 0) or 0)
    )
    return Reply(
        text="".join(texts),
        tool_calls=tuple(calls),
        usage=Usage(input_tokens=input_tokens, output_tokens=getattr(usage, "output_tokens", 0) or 0),
        model=getattr(message, "model", "") or model_id,
        stop_reason=getattr(message, "stop_reason", "") or "",
    )


def send(client: Any, target: Target, request: Request) -> Any:
    """One call; returns the SDK's response object."""
    return client.messages.create(**request_params(target, request))
