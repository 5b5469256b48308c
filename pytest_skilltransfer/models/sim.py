"""SIMULATED models `sim-small` and `sim-large`: deterministic, in-process, free. NOT real models.

They exist for demos and tests of the transfer protocol without keys or cost. They answer a
`Request` only from its text (system, messages, tools); they never see judges or checks.

- As the agent, a sim model reads the skill (the system text) through wording recognizers
  (`sim_skill`), follows each directive with a probability set by its profile, lets later rules
  override earlier ones, and writes a plausible answer to the task (`sim_answer`). It calls the
  `search` tool first when the skill, as it understood it, says to look things up.
- As the optimizer (a request whose user text has a "# Failing criteria (training tasks)"
  section) it proposes edits as a JSON array (`sim_optimizer`).

Capacity differs so transfer is not trivial: sim-small follows literal, concrete rules (exact
headings, label lines with allowed values, templates, numeric limits, named tools) and rarely
abstract ones ("be concise", "close with your confidence level"); sim-large follows both. As
optimizers, sim-small writes literal rules and sim-large mostly terse abstract ones (now and then
with a concrete example, now and then literal), so skills learned on sim-small tend to transfer
to sim-large better than the reverse.

Noise is drawn from sha256 of (model id, request, sample id): the same request and sample id
always give the same reply in any process, and different sample ids give different samples.
"""

from __future__ import annotations

import hashlib
import json

from .base import Message, ModelError, Reply, Request, ToolCall, Usage, register_family
from .sim_answer import Noise, Profile, parse_notes, read_task, render_answer, resolve
from .sim_optimizer import is_reflect_request, reflect_reply
from .sim_skill import ABSTRACT, LITERAL, NATURAL, parse_skill

PROFILES: dict[str, Profile] = {
    "sim-small": Profile(
        follow={LITERAL: 0.9, ABSTRACT: 0.07, NATURAL: 0.9},
        overshoot=0.1,
        abstract_style=0.0,
    ),
    "sim-large": Profile(
        follow={LITERAL: 0.97, ABSTRACT: 0.9, NATURAL: 0.95},
        overshoot=0.02,
        abstract_style=0.7,
        example_rate=0.35,
    ),
}
SEARCH_TOOL_NAME = "search"


class SimModel:
    """A simulated model bound to one profile. `model_id` equals the name."""

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
        return self._answer(request, user)

    def _answer(self, request: Request, task: str) -> Reply:
        # Decisions are seeded by the skill, the task, the tools and the sample id (not by later turns),
        # so the model keeps one plan across the turns of a tool loop.
        opening = Request(system=request.system, messages=request.messages[:1], tools=request.tools,
                          max_tokens=request.max_tokens, sample_id=request.sample_id)
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
        return Reply(text=text, tool_calls=calls, usage=_usage(request, text, calls), model=self.model_id,
                     stop_reason="tool_use" if calls else "end_turn")


def _usage(request: Request, text: str, calls: tuple[ToolCall, ...]) -> Usage:
    """Plausible token counts: about four characters a token."""
    prompt = request.system + "".join(_message_text(m) for m in request.messages)
    prompt += "".join(t.name + t.description + json.dumps(t.parameters) for t in request.tools)
    output = text + "".join(c.name + json.dumps(c.arguments) for c in calls)
    return Usage(input_tokens=len(prompt) // 4 + 1, output_tokens=len(output) // 4 + 1)


def _message_text(message: Message) -> str:
    return message.content + "".join(c.name + json.dumps(c.arguments) for c in message.tool_calls)


register_family(
    "sim",
    lambda name: name in PROFILES,
    SimModel,
    "sim-small, sim-large: SIMULATED in-process models (deterministic, free; not real models)",
)
