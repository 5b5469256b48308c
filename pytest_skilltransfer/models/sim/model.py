"""The SIMULATED model object: route a request to the optimizer or the agent, and register the family."""

from __future__ import annotations

import hashlib
import json

from ..base import Message, ModelError, Reply, Request, ToolCall, Usage, register_family
from .answer import parse_notes, read_task, render_answer, resolve
from .noise import Noise
from .optimizer import is_reflect_request, reflect_reply
from .profiles import PROFILES
from .skill_reader import parse_skill

SEARCH_TOOL_NAME = "search"
CHARS_PER_TOKEN = 4  # the simulator counts a token per four characters
NOISE_MAX_TOKENS = 512  # the reply limit in the key that seeds an answer's choices: the same answer under any
# limit, cut at the request's own `max_tokens` (as a provider's sampling does not depend on the limit)


class SimModel:
    """A simulated model bound to one profile. `model_id` equals the name."""

    provider = "sim"  # the in-process simulator family (never a real model)

    def __init__(self, name: str):
        if name not in PROFILES:
            raise ModelError(f"unknown simulated model {name!r}; simulated models are: {', '.join(PROFILES)}")
        self.name = name
        self.model_id = name
        self.profile = PROFILES[name]

    def complete(self, request: Request) -> Reply:
        """Answer as the optimizer or as the agent, from the request text alone."""
        user = next((m.content for m in request.messages if m.role == "user"), "")
        if is_reflect_request(user):
            noise = Noise(request.key(self.model_id))
            return self._reply(request, reflect_reply(user, self.profile, noise))
        return self._answer(request)

    def _answer(self, request: Request) -> Reply:
        # The task is the last user turn: earlier turns (a seed's fixed context) are read as nothing.
        # Decisions are seeded by the skill, the task, the tools and the sample id (not by other turns
        # nor by the reply limit),
        # so the model keeps one plan across the turns of a tool loop, with or without a context.
        last = max((i for i, m in enumerate(request.messages) if m.role == "user"), default=0)
        task = request.messages[last].content if request.messages else ""
        opening = Request(system=request.system, messages=request.messages[last:last + 1], tools=request.tools,
                          max_tokens=NOISE_MAX_TOKENS, sample_id=request.sample_id)
        noise = Noise(opening.key(self.model_id))
        view = read_task(task)
        plan = resolve(parse_skill(request.system), self.profile, noise, task)
        results = [m for m in request.messages if m.role == "tool"]
        can_search = any(t.name == SEARCH_TOOL_NAME for t in request.tools)
        if plan.search and can_search and not results and not plan.decline:
            call_id = "call_" + hashlib.sha256(f"{opening.key(self.model_id)}|search".encode()).hexdigest()[:16]
            call = ToolCall(id=call_id, name=SEARCH_TOOL_NAME, arguments={"query": view.topic})
            return self._reply(request, "", (call,))
        notes = [row for m in results for row in parse_notes(m.content)]
        text = render_answer(plan, view, request.system, noise, self.profile, notes)
        return self._reply(request, text)

    def _reply(self, request: Request, text: str, calls: tuple[ToolCall, ...] = ()) -> Reply:
        limit = CHARS_PER_TOKEN * (request.max_tokens - 1)  # as `_usage` counts: the reply stops at max_tokens
        if not calls and len(text) > limit:
            return Reply(text=text[:limit], usage=_usage(request, text[:limit], ()), model=self.model_id,
                         stop_reason="max_tokens")
        return Reply(text=text, tool_calls=calls, usage=_usage(request, text, calls), model=self.model_id,
                     stop_reason="tool_use" if calls else "end_turn")


def _usage(request: Request, text: str, calls: tuple[ToolCall, ...]) -> Usage:
    """Plausible token counts: about `CHARS_PER_TOKEN` characters a token."""
    prompt = request.system + "".join(_message_text(m) for m in request.messages)
    prompt += "".join(t.name + t.description + json.dumps(t.parameters) for t in request.tools)
    output = text + "".join(c.name + json.dumps(c.arguments) for c in calls)
    return Usage(input_tokens=len(prompt) // CHARS_PER_TOKEN + 1, output_tokens=len(output) // CHARS_PER_TOKEN + 1)


def _message_text(message: Message) -> str:
    return message.content + "".join(c.name + json.dumps(c.arguments) for c in message.tool_calls)


register_family(
    "sim",
    lambda name: name in PROFILES,
    SimModel,
    "sim-small, sim-large: SIMULATED in-process models (deterministic, free; not real models)",
)
