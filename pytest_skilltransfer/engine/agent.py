"""Run one task with one skill on one model: the skill is the system prompt, the task the user turn.

A seed's fixed context (`context.jsonl`) comes first, unchanged: its user/assistant turns precede the
task's user turn in every request of every arm, so they are part of each request's key.

When the seed has a corpus the model is offered the `search` tool; the harness executes each call
and returns its rows, until the model answers in text or the step limit is reached. A turn the provider
pauses (`pause_turn`) is sent back as it is and continued, within the same step limit. Only calls made
through this loop count for `tool_called` and `qrels`; text that merely mentions a tool counts for nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..models.base import Message, Model, Request
from ..models.stops import PAUSED
from .judges import Attempt
from .ledger import CallCache, Meter
from .seed_data import ANSWER_MAX_TOKENS, ContextTurn, Task
from .tools import SEARCH_TOOL, Page, run_tool

MAX_TOOL_STEPS = 6


@dataclass(frozen=True)
class AgentContext:
    """What every attempt of a phase shares: the model, the call cache, the meter and the role."""

    model: Model
    cache: CallCache
    meter: Meter
    role: str
    corpus: tuple[Page, ...] | None = None
    context: tuple[Message, ...] = ()  # the seed's fixed turns, before every task
    max_tokens: int = ANSWER_MAX_TOKENS  # the reply limit of every call (a seed's `max_tokens`)
    temperature: float | None = None  # sampling temperature sent with every call (None: the provider's default)


def context_messages(turns: tuple[ContextTurn, ...]) -> tuple[Message, ...]:
    """A seed's context turns as conversation messages."""
    return tuple(Message(role="user" if t.role == "user" else "assistant", content=t.content) for t in turns)


def run_task(ctx: AgentContext, skill: str, task: Task, sample_id: int) -> Attempt:
    """Attempt a task, running the tool loop, and return what the judge needs."""
    tools = (SEARCH_TOOL,) if ctx.corpus is not None else ()
    messages: list[Message] = [*ctx.context, Message(role="user", content=task.text)]
    called: list[str] = []
    slugs: list[str] = []
    text, paused, stop_reason = "", "", ""
    for _ in range(MAX_TOOL_STEPS):
        request = Request(system=skill, messages=tuple(messages), tools=tools,
                          max_tokens=ctx.max_tokens, sample_id=sample_id, temperature=ctx.temperature)
        reply = ctx.cache.call(ctx.model, request, ctx.meter, ctx.role)
        text, stop_reason = paused + reply.text, reply.stop_reason
        if reply.stop_reason in PAUSED:  # the provider paused a long turn: send it back to be continued
            messages.append(Message(role="assistant", content=reply.text, tool_calls=reply.tool_calls))
            paused = text
            continue
        paused = ""
        if not reply.tool_calls or not tools:
            break
        messages.append(Message(role="assistant", content=reply.text, tool_calls=reply.tool_calls))
        for call in reply.tool_calls:
            result, returned, ok = run_tool(ctx.corpus or (), call.name, call.arguments)
            if ok:
                called.append(call.name)
                slugs.extend(s for s in returned if s not in slugs)
            messages.append(Message(role="tool", content=result, tool_call_id=call.id))
    return Attempt(text=text.strip(), tools_called=tuple(called), retrieved_slugs=tuple(slugs), stop_reason=stop_reason)
