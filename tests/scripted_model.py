"""A tiny scripted model for protocol tests: its behaviour is spelled out in each test."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Callable

from pytest_skilltransfer.models.base import Reply, Request, Usage

Answer = Callable[[str, str, int], str]  # (skill, task text, sample id) -> answer


@dataclass
class ScriptedModel:
    """Agent: `answer(skill, task, sample)`. Optimizer: pops the next reply from `reflections`."""

    model_id: str
    answer: Answer
    reflections: list[str] = field(default_factory=list)
    requests: list[Request] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.model_id

    def complete(self, request: Request) -> Reply:
        self.requests.append(request)
        user = request.messages[0].content
        if "# Failing criteria (training tasks)" in user:
            text = self.reflections.pop(0) if self.reflections else "[]"
        else:
            text = self.answer(request.system, user, request.sample_id)
        return Reply(text=text, usage=Usage(len(user) // 4, len(text) // 4), model=self.model_id)

    def reflect_prompts(self) -> list[str]:
        return [r.messages[0].content for r in self.requests if "# Failing criteria" in r.messages[0].content]


def edits(*contents: str) -> str:
    return json.dumps([{"op": "add", "content": c} for c in contents])
