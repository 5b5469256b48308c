"""A loopback provider that answers as a working model does, for the recording benchmark (not a test).

The easy fake (`tests/fake_provider.py`) answers every agent call with a short hash and every optimizer
call with text that holds no edit, so an optimization's nights propose nothing and never try a
candidate: about 30 calls per item. This server speaks the same two wire formats (Anthropic
`POST /v1/messages`, OpenAI `POST /v1/chat/completions`, on 127.0.0.1) but answers with the
package's simulated models behind the wire: the request body is read back into the harness's
`Request` (system text, turns, tools, the sample id from `metadata.user_id` or `seed`), and the
simulated model named for the requested model answers it. So:

- an optimizer request (one that carries the reflect prompt's failing criteria) gets a JSON array of
  edits written from the criteria the request lists, which applies to the skill's learned block, so
  nights score candidates and the validation gate accepts or rejects them;
- an agent request gets an answer of a working model's length (500-1,500 characters), following the
  skill's rules (learned ones included) as that profile does, so an accepted edit changes later answers;
- a search tool offered gets a tool call first, as the simulated model decides.

Its replies depend only on the request body (the simulator reads nothing else: no seed, no checks,
no answers), and the request it reads is the whole body: the package's wire rebuilds the body received
from it, or the server fails the call. Every answer, errors aside, leaves `delay` seconds after its request arrived, however
long it took to make (as in the easy fake): the latency is fixed, so the critical path times the
latency is a floor.

    python benchmarks/realistic_provider.py DELAY easy|realistic [MODEL=PROFILE ...]

runs it in a process of its own (its CPU is not the recorder's): it prints its port, then answers each
line on standard input with the requests received since the previous line, as JSON
`[[arrival (time.monotonic), model, role ("optimizer" | "agent"), answer characters, input tokens, output tokens],
...]` (the tokens its usage billed).
"""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import fake_provider  # noqa: E402

from pytest_skilltransfer.models import anthropic_wire, openai_wire  # noqa: E402
from pytest_skilltransfer.models.aliases import Target  # noqa: E402
from pytest_skilltransfer.models.base import Message, Reply, Request, ResponseSchema, ToolCall, ToolSpec  # noqa: E402
from pytest_skilltransfer.models.sim.model import SimModel  # noqa: E402
from pytest_skilltransfer.models.sim.optimizer import is_reflect_request  # noqa: E402

DEFAULT_PROFILES = {"bench-small": "sim-small", "bench-large": "sim-large"}
SAMPLE_PREFIX = "skilltransfer-sample-"  # anthropic_wire.sample_user_id


def _text(content: Any) -> str:
    """A turn's or a system prompt's text: a string, or its text blocks joined."""
    if isinstance(content, str):
        return content
    return "".join(block.get("text", "") for block in content or [] if block.get("type") == "text")


def anthropic_request(body: dict[str, Any]) -> Request:
    """A Messages API body read back as the harness's request."""
    messages: list[Message] = []
    for turn in body.get("messages") or []:
        content = turn.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        if turn.get("role") == "assistant":
            calls = tuple(ToolCall(b["id"], b["name"], b.get("input") or {}) for b in blocks if b.get("type") == "tool_use")
            messages.append(Message("assistant", _text(blocks), calls))
            continue
        for block in blocks:
            if block.get("type") == "tool_result":
                messages.append(Message("tool", _text(block.get("content")), tool_call_id=block.get("tool_use_id", "")))
            elif block.get("type") == "text":
                messages.append(Message("user", block.get("text", "")))
    choice = body.get("tool_choice") or {}
    tools = [t for t in body.get("tools") or [] if t.get("name") != choice.get("name")]
    forced = next((t for t in body.get("tools") or [] if t.get("name") == choice.get("name")), None)
    user_id = str((body.get("metadata") or {}).get("user_id") or "")
    return Request(system=_text(body.get("system")), messages=tuple(messages),
                   tools=tuple(ToolSpec(t["name"], t.get("description", ""), t.get("input_schema") or {}) for t in tools),
                   max_tokens=int(body.get("max_tokens") or 1024),
                   sample_id=int(user_id[len(SAMPLE_PREFIX):]) if user_id.startswith(SAMPLE_PREFIX) else 0,
                   response_schema=ResponseSchema(forced["name"], forced.get("description", ""),
                                                  forced.get("input_schema") or {}) if forced else None)


def openai_request(body: dict[str, Any]) -> Request:
    """A Chat Completions body read back as the harness's request."""
    system, messages = "", []
    for turn in body.get("messages") or []:
        role = turn.get("role")
        if role == "system":
            system = _text(turn.get("content"))
        elif role == "tool":
            messages.append(Message("tool", _text(turn.get("content")), tool_call_id=turn.get("tool_call_id", "")))
        elif role == "assistant":
            calls = tuple(ToolCall(c["id"], c["function"]["name"], json.loads(c["function"].get("arguments") or "{}"))
                          for c in turn.get("tool_calls") or [])
            messages.append(Message("assistant", _text(turn.get("content")), calls))
        else:
            messages.append(Message("user", _text(turn.get("content"))))
    tools = tuple(ToolSpec(t["function"]["name"], t["function"].get("description", ""),
                           t["function"].get("parameters") or {}) for t in body.get("tools") or [])
    return Request(system=system, messages=tuple(messages), tools=tools,
                   max_tokens=int(body.get("max_tokens") or body.get("max_completion_tokens") or 1024),
                   sample_id=int(body.get("seed") or 0))


def rebuilt_body(anthropic: bool, model: str, request: Request) -> dict[str, Any]:
    """The body the package's wire builds for `request` (a loopback model: no prompt-cache mark, `max_tokens`):
    equal to the body received when the request was read back whole."""
    wire = anthropic_wire if anthropic else openai_wire
    return wire.request_params(Target("anthropic" if anthropic else "openai", model, "http://127.0.0.1"), request)


def anthropic_body(reply: Reply, model: str, tag: str) -> dict[str, Any]:
    """A Messages API response holding `reply`."""
    content: list[dict[str, Any]] = [{"type": "text", "text": reply.text}] if reply.text else []
    content += [{"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments} for call in reply.tool_calls]
    return {"id": f"msg_{tag}", "type": "message", "role": "assistant", "model": model, "content": content,
            "stop_reason": "tool_use" if reply.tool_calls else "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": reply.usage.input_tokens, "output_tokens": reply.usage.output_tokens}}


def openai_body(reply: Reply, model: str, tag: str) -> dict[str, Any]:
    """A Chat Completions response holding `reply`."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.tool_calls:
        message["tool_calls"] = [{"id": call.id, "type": "function",
                                  "function": {"name": call.name, "arguments": json.dumps(call.arguments)}}
                                 for call in reply.tool_calls]
    usage = reply.usage
    return {"id": f"chatcmpl-{tag}", "object": "chat.completion", "created": 1767225600, "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if reply.tool_calls else "stop"}],
            "service_tier": "default",
            "usage": {"prompt_tokens": usage.input_tokens, "completion_tokens": usage.output_tokens,
                      "total_tokens": usage.input_tokens + usage.output_tokens}}


class Answers:
    """What the server answers: `easy` (the easy fake's replies) or `realistic` (the simulated models)."""

    def __init__(self, kind: str, profiles: dict[str, str]) -> None:
        if kind not in ("easy", "realistic"):
            raise ValueError(f"answers are 'easy' or 'realistic', not {kind!r}")
        self.kind = kind
        self.models = {name: SimModel(profile) for name, profile in profiles.items()}

    def reply(self, path: str, body: dict[str, Any]) -> dict[str, Any] | None:
        """The response body for a request, or None for an unknown route."""
        anthropic = path.endswith("/v1/messages")
        if not anthropic and not path.endswith("/chat/completions"):
            return None
        if self.kind == "easy":
            return fake_provider.anthropic_reply(body) if anthropic else fake_provider.openai_reply(body)
        model = str(body.get("model", ""))
        sim = self.models.get(model)
        if sim is None:
            raise KeyError(f"no simulated profile for model {model!r}; known: {', '.join(self.models)}")
        request = anthropic_request(body) if anthropic else openai_request(body)
        if rebuilt_body(anthropic, model, request) != body:
            raise ValueError(f"the request read back does not rebuild the body sent: {json.dumps(body)[:300]}")
        reply = sim.complete(request)
        tag = fake_provider.digest(body)
        return anthropic_body(reply, model, tag) if anthropic else openai_body(reply, model, tag)


def answer_chars(reply: dict[str, Any]) -> int:
    """Characters of text in a response (either wire)."""
    if "choices" in reply:
        return len(reply["choices"][0]["message"].get("content") or "")
    return sum(len(block.get("text", "")) for block in reply.get("content") or [])


def billed_tokens(reply: dict[str, Any]) -> tuple[int, int]:
    """(input, output) tokens a response's usage bills (either wire)."""
    usage = reply.get("usage") or {}
    if "prompt_tokens" in usage:
        return int(usage["prompt_tokens"]), int(usage.get("completion_tokens") or 0)
    return int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0)


def role_of(body: dict[str, Any]) -> str:
    """"optimizer" for a reflect request, else "agent" (what the request shows)."""
    turns = body.get("messages") or []
    first_user = next((_text(t.get("content")) for t in turns if t.get("role") == "user"), "")
    return "optimizer" if is_reflect_request(first_user) else "agent"


class _Handler(fake_provider._Handler):
    """The easy fake's handler (latency from arrival, headers, keep-alive), answering from `Answers`."""

    def do_POST(self) -> None:  # noqa: N802 - http.server naming
        server = self.server.fake  # type: ignore[attr-defined]
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        try:
            reply = server.answers.reply(self.path, body)  # made while the latency runs, outside any lock
        except (KeyError, ValueError) as exc:  # a request this server cannot read whole: a loud 400
            return self._send(400, {"type": "error", "error": {"type": "invalid_request_error", "message": str(exc)}})
        if reply is None:
            return self._send(404, {"error": {"message": f"no route {self.path}"}})
        with server._lock:
            server.seen.append((self.arrived, str(body.get("model", "?")), role_of(body), answer_chars(reply),
                                *billed_tokens(reply)))
        return self._send(200, reply)


class _Server(fake_provider._Server):
    """The fake's server with a listen queue as deep as a provider's: with the socket module's default of 5, a
    step that opens 18 connections at once overflows it, the kernel drops the connection attempts past it
    (`nstat`'s TcpExtListenOverflows), and each such call waits the 1 s of TCP's first SYN retry, which no
    provider's endpoint makes a client wait."""

    request_queue_size = 1024


class RealisticProvider(fake_provider.FakeProvider):
    """The server: `FakeProvider`'s plumbing with `Answers` behind it; `seen` lists the requests."""

    def __init__(self, answers: Answers, delay: float) -> None:
        super().__init__()
        self.answers, self.delay, self.require_key = answers, delay, False
        self.seen: list[tuple[float, str, str, int, int, int]] = []

    def start(self) -> "RealisticProvider":
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.fake = self
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,), name="realistic-provider",
                                        daemon=True)
        self._thread.start()
        return self

    def take_seen(self) -> list[tuple[float, str, str, int, int, int]]:
        with self._lock:
            seen, self.seen = self.seen, []
        return seen


def main() -> None:
    delay, kind = float(sys.argv[1]), sys.argv[2]
    profiles = dict(DEFAULT_PROFILES, **dict(arg.split("=", 1) for arg in sys.argv[3:]))
    server = RealisticProvider(Answers(kind, profiles), delay).start()
    print(server.port, flush=True)
    for _line in sys.stdin:
        print(json.dumps(server.take_seen()), flush=True)
    server.stop()


if __name__ == "__main__":
    main()
