"""A seed's fixed context (`context.jsonl`): loaded and validated with file:line errors, accepted by
the task schema exactly where the loader accepts it, sent unchanged before every task in every arm,
part of every request's key, and never shown to the optimizer."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from pytest_skilltransfer.engine.protocol import SeedSession
from pytest_skilltransfer.engine.results import ProtocolConfig
from pytest_skilltransfer.engine.seeds import load_seed
from pytest_skilltransfer.engine.seed_data import SeedError
from pytest_skilltransfer.models.base import Message, Reply, Request, Usage
from pytest_skilltransfer.models.sim import SimModel

CHECKS = {"kind": "rule", "checks": [{"op": "contains", "arg": "Owner:"}]}
EXAMPLE = [{"role": "user", "content": "Route ticket 99: the printer is on fire."},
           {"role": "assistant", "content": "Routed to facilities.\nOwner: @facilities"}]
SCHEMA = json.loads(resources.files("pytest_skilltransfer").joinpath("task.schema.json").read_text(encoding="utf-8"))
TURN_SCHEMA = {"$defs": SCHEMA["$defs"], "$ref": "#/$defs/context_turn"}


def write_seed(root: Path, context: list[object] | str | None) -> Path:
    root.mkdir(parents=True)
    (root / "SKILL.md").write_text("# Router\nRoute the ticket.\n")
    line = lambda i, p: json.dumps({"task_id": f"{p}-{i:02d}", "task": f"Route ticket {i}", "judge": CHECKS})  # noqa: E731
    (root / "benchmark.jsonl").write_text("\n".join(line(i, "bm") for i in range(12)) + "\n")
    (root / "held-out.jsonl").write_text("\n".join(line(i, "hd") for i in range(6)) + "\n")
    if context is not None:
        text = context if isinstance(context, str) else "".join(json.dumps(t) + "\n" for t in context)
        (root / "context.jsonl").write_text(text)
    return root


def problems(root: Path) -> list[str]:
    with pytest.raises(SeedError) as info:
        load_seed(root)
    return [str(p) for p in info.value.problems]


def test_context_loads_in_order_with_where_each_turn_is(tmp_path: Path) -> None:
    seed = load_seed(write_seed(tmp_path / "router", EXAMPLE))
    assert [(t.role, t.content) for t in seed.context] == [(t["role"], t["content"]) for t in EXAMPLE]
    assert seed.context[1].origin == f"{tmp_path / 'router' / 'context.jsonl'}:2"
    assert load_seed(write_seed(tmp_path / "plain", None)).context == ()


BAD_LINES = {
    "unknown field": ({"role": "user", "content": "hi", "name": "x"}, "unknown field(s): name"),
    "missing content": ({"role": "user"}, "missing field(s): content"),
    "system role": ({"role": "system", "content": "be nice"}, "'role' must be \"user\" or \"assistant\", got \"system\""),
    "empty content": ({"role": "user", "content": "  "}, "'content' must be a non-empty string"),
    "not a string": ({"role": "user", "content": 3}, "'content' must be a non-empty string"),
    "not an object": (["user", "hi"], "each line must be a JSON object"),
}


@pytest.mark.parametrize("name", list(BAD_LINES))
def test_a_bad_line_names_its_file_and_line_and_the_schema_refuses_it_too(tmp_path: Path, name: str) -> None:
    line, message = BAD_LINES[name]
    root = write_seed(tmp_path / "router", [EXAMPLE[0], EXAMPLE[1], line])
    found = problems(root)
    assert any(p.startswith(f"{root / 'context.jsonl'}:3: ") and message in p for p in found), found
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(line, TURN_SCHEMA)


def test_the_schema_accepts_every_valid_turn() -> None:
    for turn in EXAMPLE:
        jsonschema.validate(turn, TURN_SCHEMA)


def test_order_end_emptiness_and_malformed_json_are_all_reported_at_once(tmp_path: Path) -> None:
    root = write_seed(tmp_path / "router", '{"role": "assistant", "content": "hello"}\n{oops\n'
                                           '{"role": "user", "content": "Route ticket 99"}\n')
    file = root / "context.jsonl"
    found = problems(root)
    assert f"{file}:1: a assistant turn where a user turn belongs: the turns alternate, starting with user " \
           "(both wire protocols require it)" in found
    assert any(p.startswith(f"{file}:2: malformed JSON") for p in found)
    assert any(p.startswith(f"{file}:3: the context ends with a user turn") for p in found)
    assert problems(write_seed(tmp_path / "empty", "\n")) == [
        f"{tmp_path / 'empty' / 'context.jsonl'}: holds no turns: remove the file, or add user/assistant turns"]


def test_a_held_out_task_in_the_context_is_refused(tmp_path: Path) -> None:
    turns = [{"role": "user", "content": "Route ticket 3"}, {"role": "assistant", "content": "Owner: @infra"}]
    root = write_seed(tmp_path / "router", turns)
    found = problems(root)
    assert len(found) == 1 and found[0].startswith(f"{root / 'context.jsonl'}:1: the user turn contains held-out task 'hd-03'")
    assert "must not hold held-out data" in found[0]


class Recorder:
    """Agent and optimizer in one: answers with the Owner line only when the skill asks for it."""

    model_id = name = "recorder"

    def __init__(self) -> None:
        self.requests: list[Request] = []

    def complete(self, request: Request) -> Reply:
        self.requests.append(request)
        first = request.messages[0].content
        if "# Failing criteria (training tasks)" in first:
            text = json.dumps([{"op": "add", "content": "End with `Owner: @team`."}])
        else:
            text = "Routed. Owner: @team" if "Owner:" in request.system else "Routed."
        return Reply(text=text, usage=Usage(len(first) // 4, len(text) // 4), model=self.model_id)


def test_every_agent_call_of_every_arm_carries_the_context_and_the_optimizer_never_sees_it(tmp_path: Path) -> None:
    seed = load_seed(write_seed(tmp_path / "router", EXAMPLE))
    source, target = Recorder(), Recorder()
    result = SeedSession(seed, ProtocolConfig(limit_replay=0, limit_holdout=0, nights=1)).transfer(source, target)
    assert result.transferred.hard.mean == 1.0 and result.baseline.hard.mean == 0.0
    agent_calls = [r for r in source.requests + target.requests
                   if "# Failing criteria" not in r.messages[0].content]
    reflections = [r for r in source.requests + target.requests if r not in agent_calls]
    assert agent_calls and reflections
    for request in agent_calls:  # baseline, optimization (train, val), transferred and direct: the same turns first
        assert [(m.role, m.content) for m in request.messages[:2]] == [(t["role"], t["content"]) for t in EXAMPLE]
        assert request.messages[2].role == "user" and request.messages[2].content.startswith("Route ticket ")
    for request in reflections:
        text = request.system + "".join(m.content for m in request.messages)
        assert "printer is on fire" not in text and "@facilities" not in text


def test_the_context_is_part_of_the_request_key(tmp_path: Path) -> None:
    seed = load_seed(write_seed(tmp_path / "router", EXAMPLE))
    other = [EXAMPLE[0], {"role": "assistant", "content": "Routed to facilities.\nOwner: @it"}]
    edited = load_seed(write_seed(tmp_path / "edited", other))
    keys = []
    for s in (seed, edited):
        recorder = Recorder()
        SeedSession(s, ProtocolConfig(limit_replay=0, limit_holdout=0, nights=1, direct=False)).evaluate(
            recorder, s.skill, "test")
        keys.append({r.key(recorder.model_id) for r in recorder.requests})
    assert len(keys[0]) == 6 and keys[0].isdisjoint(keys[1])


def test_the_simulator_answers_the_task_not_the_context_and_decides_as_without_it() -> None:
    skill = "# Router\nEnd every answer with `Owner: @team`.\n"
    turns = tuple(Message(role=t["role"], content=t["content"]) for t in EXAMPLE)  # type: ignore[arg-type]
    task = Message(role="user", content="Route ticket 7")
    sim = SimModel("sim-small")
    for sample in range(5):
        alone = Request(system=skill, messages=(task,), max_tokens=512, sample_id=sample)
        after = Request(system=skill, messages=(*turns, task), max_tokens=512, sample_id=sample)
        assert sim.complete(after).text == sim.complete(alone).text


def test_how_the_context_was_chosen_is_kept_and_needs_a_context(tmp_path: Path) -> None:
    root = write_seed(tmp_path / "router", EXAMPLE)
    (root / "seed.toml").write_text('context_chosen = "from 3 candidates on the first 4 training tasks"\n')
    assert load_seed(root).context_chosen == "from 3 candidates on the first 4 training tasks"
    assert load_seed(write_seed(tmp_path / "plain", EXAMPLE)).context_chosen == ""
    bare = write_seed(tmp_path / "bare", None)
    (bare / "seed.toml").write_text('context_chosen = "by hand"\n')
    assert any("context_chosen" in p and "no context.jsonl" in p for p in problems(bare))


def test_the_page_shows_how_the_context_was_chosen() -> None:
    """(The terminal's line under the table is in the README's main-job sample.)"""
    from plugin_support import item_record
    from pytest_skilltransfer.reports.html_item import _gaming

    assert "<b>Fixed context:</b> chosen from 3 candidates" in _gaming(item_record(context_chosen="from 3 candidates"))
    assert _gaming(item_record()) == ""
