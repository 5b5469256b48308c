"""A seed's reply limit (`max_tokens` in seed.toml): the plan bounds and expects the agent's replies by it, and
the simulator stops a reply there as a provider does, with the same choices under any limit."""

from pathlib import Path

from scripted_model import router_seed

from pytest_skilltransfer.engine.results import ProtocolConfig
from pytest_skilltransfer.engine.seeds import load_seed
from pytest_skilltransfer.models.base import Message, Request
from pytest_skilltransfer.models.sim.model import SimModel
from pytest_skilltransfer.planning.plan import Planner

CHECKS = {"kind": "rule", "checks": [{"op": "contains", "arg": "Team:"}]}


def agent_share(seed, model: str = "claude-sonnet-5-5"):
    planner = Planner(seed, ProtocolConfig())
    return next(s for s in planner.evaluation(model, seed.test, planner.seed_skill) if s.role == "agent")


def test_the_plan_bounds_and_expects_replies_by_the_seeds_limit(tmp_path: Path) -> None:
    default = router_seed(tmp_path / "default", CHECKS)
    short = router_seed(tmp_path / "short", CHECKS)
    (short.path / "seed.toml").write_text("max_tokens = 64\n")
    short = load_seed(short.path)
    wide, narrow = agent_share(default), agent_share(short)
    assert wide.output_tokens == wide.calls * 512 and narrow.output_tokens == narrow.calls * 64
    assert (narrow.expected_output, wide.expected_output) == (6 * 26, 6 * 205), "40% of each limit, rounded up"
    assert narrow.input_tokens == wide.input_tokens, "a call without a tool loop sends no earlier reply back"


def test_the_simulator_stops_at_max_tokens_with_the_same_choices() -> None:
    model = SimModel("sim-large")
    ask = lambda limit: model.complete(Request(  # noqa: E731
        system="# Report\nWrite a long, detailed status report with every section in depth.\n",
        messages=(Message("user", "Write the weekly status report for the Billing project."),), max_tokens=limit))
    full, cut = ask(4096), ask(16)
    assert full.stop_reason == "end_turn" and full.usage.output_tokens <= 4096
    assert cut.stop_reason == "max_tokens" and cut.usage.output_tokens <= 16
    assert full.text.startswith(cut.text), "the limit cuts the answer; it does not change it"
