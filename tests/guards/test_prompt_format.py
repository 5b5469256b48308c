"""The prompts the engine writes are read by the simulator through one definition of their wording
(`guards.prompt_format`): what `engine.reflect` and `engine.rubric` build, the simulator parses back whole."""

from __future__ import annotations

from pytest_skilltransfer.engine.judges import Check, Judge
from pytest_skilltransfer.engine.reflect import Observation, RejectedEdit, build_reflect_request
from pytest_skilltransfer.engine.rubric import judge_request
from pytest_skilltransfer.guards.edits import Edit
from pytest_skilltransfer.guards.prompt_format import REFLECT_SECTIONS
from pytest_skilltransfer.models.sim import judge as sim_judge
from pytest_skilltransfer.models.sim.optimizer import is_reflect_request, read_prompt


def test_the_simulated_optimizer_reads_what_the_engine_writes() -> None:
    checks = (Check("contains", "Owner:"), Check("max_chars", 400))
    failing = Observation("t1", "Route ticket 1", "Billing.", Judge(kind="rule", checks=checks),
                          failed=tuple(c.label() for c in checks))
    rejected = RejectedEdit(Edit("add", "Be brief.", None), 2, 0.5, 0.4)
    request = build_reflect_request("# Skill\n\nRoute it.", [failing], [], [rejected], edit_budget=4)
    text = request.messages[0].content
    assert [text.index(header) for header in REFLECT_SECTIONS] == sorted(text.index(h) for h in REFLECT_SECTIONS)
    assert is_reflect_request(text)
    prompt = read_prompt(text)
    assert prompt.skill == "# Skill\n\nRoute it."
    assert {(c.op, c.arg) for c in prompt.criteria} == {("contains", "Owner:"), ("max_chars", 400)}
    assert prompt.rejected == frozenset({"be brief."}) and prompt.budget == 4


def test_the_simulated_judge_reads_the_rubric_request() -> None:
    request = judge_request("Summarize the outage.", "Root cause: a bad deploy.", "names the root cause")
    parts = sim_judge.sections(request.messages[0].content)
    assert parts is not None and list(parts.values()) == ["Summarize the outage.", "Root cause: a bad deploy.",
                                                          "names the root cause"]
