"""A tiny scripted model for protocol tests: its behaviour is spelled out in each test."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from pytest_skilltransfer.engine.seed_data import Seed
from pytest_skilltransfer.engine.seeds import load_seed
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


def router_seed(root: Path, checks: dict, train: int = 12, held_out: int = 6,
                skill: str = "# Router\nRoute the ticket.\n", task: str = "Route ticket {i}") -> Seed:
    """A seed folder `root` of routing tasks judged by `checks`: `train` benchmark and `held_out` tasks
    (`task` formats `{i}` and `{split}`, bm or hd), loaded."""
    root.mkdir()
    (root / "SKILL.md").write_text(skill)
    line = lambda i, p: json.dumps({"task_id": f"{p}-{i:02d}", "task": task.format(i=i, split=p), "judge": checks})
    (root / "benchmark.jsonl").write_text("\n".join(line(i, "bm") for i in range(train)))
    (root / "held-out.jsonl").write_text("\n".join(line(i, "hd") for i in range(held_out)))
    return load_seed(root)
