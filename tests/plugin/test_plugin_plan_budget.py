"""--plan and --max-cost against a loopback provider: the plan calls nothing; the budget stops recording."""

from __future__ import annotations

import json
import re

import pytest
from fake_provider import FakeProvider
from plugin_support import project


@pytest.fixture
def fake() -> FakeProvider:
    with FakeProvider() as server:
        yield server


def _setup(pytester: pytest.Pytester, fake: FakeProvider, seeds: tuple[str, ...] = ("alpha",), price: str = "") -> None:
    project(pytester, ini="skilltransfer_pair = small:large\nskilltransfer_nights = 1\n", seeds=seeds)
    pytester.makepyprojecttoml(f'''
        [tool.skilltransfer.models]
        small = "anthropic:fake-small@{fake.anthropic_url}"
        large = "openai:fake-large@{fake.openai_url}"
        [tool.skilltransfer.prices]
        {price}
    ''')


def _row(result: pytest.RunResult, start: str) -> list[str]:
    line = next(line for line in result.stdout.lines if line.startswith(start))
    return re.split(r"\s{2,}", line.strip())


def test_plan_calls_nothing_and_tells_what_the_cassettes_hold(pytester: pytest.Pytester, fake: FakeProvider) -> None:
    _setup(pytester, fake, price='"fake-*" = { input = 1.0, output = 5.0 }')
    before = pytester.runpytest_subprocess("--plan", "--record-mode=once")
    assert before.ret == 0
    assert fake.received == []
    item = _row(before, "seeds/alpha")
    calls_bound, dollars = int(item[1]), float(item[4])
    assert dollars > 0
    assert item[6] == f"0 call(s) replay, then a miss in baseline: up to {calls_bound} to record"
    before.stdout.fnmatch_lines(["*skill transfer plan*", "total (shared phases once)*", "lane (whole run)*", "standard *",
                                 "How: *one token per UTF-8 byte*"])

    recorded = pytester.runpytest_subprocess("--record-mode=once", "--snapshot-update", "--skilltransfer-json=r.json")
    recorded.assert_outcomes(passed=1)
    calls = json.loads((pytester.path / "r.json").read_text())["results"][0]["cost"]["calls"]
    sent = len(fake.received)
    assert 0 < sent <= calls <= calls_bound

    after = pytester.runpytest_subprocess("--plan", "-n", "2")
    assert after.ret == 0
    assert len(fake.received) == sent
    assert _row(after, "seeds/alpha")[6] == f"all recorded: {sent} call(s) replay"
    after.stdout.fnmatch_lines([f"total (shared phases once)*{sent} call(s) recorded; to record: ≤ $0.0000*"])


def test_the_budget_refuses_what_does_not_fit_keeps_what_was_recorded_and_fails_the_rest(
        pytester: pytest.Pytester, fake: FakeProvider) -> None:
    _setup(pytester, fake, seeds=("alpha", "beta"), price='"fake-*" = { input = 1000.0, output = 1000.0 }')
    result = pytester.runpytest_subprocess("--record-mode=once", "--snapshot-update", "--max-cost=4", "-p",
                                           "no:randomly")
    outcome = result.parseoutcomes()
    assert outcome.get("errors") == 2  # a call that cannot be made fails the item's setup, as any call error does
    result.stdout.fnmatch_lines(["*--max-cost 4: a call to fake-* was not sent: it may cost up to $*, and $* is "
                                 "spent and $* reserved for calls in flight, so it does not fit in the budget of $4. "
                                 "What was recorded is kept*"])
    spent = len(fake.received)
    assert 0 < spent < 60  # each call costs about $0.1 and reserves about $1.7
    kept = list((pytester.path / "cassettes").rglob("*.yaml"))
    assert kept, "what was recorded before the budget ran out is kept"

    again = pytester.runpytest_subprocess("--record-mode=new_episodes", "--snapshot-update", "--max-cost=1000")
    again.assert_outcomes(passed=2)  # the recorded calls replayed; the rest were recorded
    assert len(fake.received) > spent


def test_a_budget_needs_prices(pytester: pytest.Pytester, fake: FakeProvider) -> None:
    project(pytester, ini="skilltransfer_pair = mystery:mystery\n", seeds=("alpha",))
    pytester.makepyprojecttoml(f'''
        [tool.skilltransfer.models]
        mystery = "anthropic:mystery-model@https://llm.example.com"
    ''')
    result = pytester.runpytest_subprocess("--max-cost=1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--max-cost: * without a price, so no call to them could be reserved; nothing was "
                                 "sent*", "*mystery (mystery-model) has no price: add [[]tool.skilltransfer.prices[]]*"])


@pytest.mark.parametrize("bad", ["free", "0", "-1", "inf", "nan"])
def test_bad_budgets_are_usage_errors(pytester: pytest.Pytester, bad: str) -> None:
    project(pytester, seeds=("alpha",))
    result = pytester.runpytest_subprocess(f"--max-cost={bad}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--max-cost*"])


def test_plan_json_says_where_the_money_goes_by_pair_phase_role_and_model(pytester: pytest.Pytester,
                                                                          fake: FakeProvider) -> None:
    _setup(pytester, fake, seeds=("alpha", "beta"), price='"fake-*" = { input = 1.0, output = 5.0 }')
    result = pytester.runpytest_subprocess("--plan", "--pair=small:large", "--pair=large:small",
                                           "--skilltransfer-json=plan.json")
    assert result.ret == 0 and fake.received == []
    result.stdout.fnmatch_lines(["where the money goes*", "  by pair: *fake-small->fake-large*", "  by phase: baseline *",
                                 "  by role: agent *", "  by model (lane): *(standard)*"])
    plan = json.loads((pytester.path / "plan.json").read_text())["plan"]
    assert len(plan["items"]) == 4 and {i["pair"] for i in plan["items"]} == {"fake-small->fake-large",
                                                                            "fake-large->fake-small"}
    total = plan["total"]
    for table in ("by_pair", "by_phase", "by_role", "by_model"):  # every unit once, in exactly one row of each table
        rows = plan["breakdown"][table].values()
        assert sum(r["bound_usd"] for r in rows) == pytest.approx(total["bound_usd"], rel=1e-6)
        assert sum(r["expected_usd"] for r in rows) == pytest.approx(total["expected_usd"], rel=1e-6)
        assert sum(r["calls"] for r in rows) == total["calls"]
    assert plan["lanes"]["as_configured"]["bound"] == pytest.approx(total["bound_usd"], rel=1e-6)


def test_after_a_one_line_edit_the_plan_names_the_items_to_pay_and_what(pytester: pytest.Pytester,
                                                                          fake: FakeProvider) -> None:
    """Two seeds recorded, then one line of beta's SKILL.md edited: `--plan`, offline, says alpha's item replays at
    $0 and beta's will be paid, with its expected figure (calibrated by alpha's recording) and its bound; recording
    it pays about that and nothing for alpha."""
    _setup(pytester, fake, seeds=("alpha", "beta"), price='"fake-*" = { input = 1.0, output = 5.0 }')
    pytester.runpytest_subprocess("--record-mode=once", "--snapshot-update").assert_outcomes(passed=2)
    sent = len(fake.received)
    skill = pytester.path / "seeds" / "beta" / "SKILL.md"
    skill.write_text(skill.read_text().replace("Route the ticket to a team.", "Route the ticket to one team."))

    planned = pytester.runpytest_subprocess("--plan", "--skilltransfer-json=plan.json")
    assert planned.ret == 0 and len(fake.received) == sent  # nothing sent
    alpha, beta = _row(planned, "seeds/alpha"), _row(planned, "seeds/beta")
    assert alpha[6].startswith("all recorded: ")
    assert beta[6] == f"0 call(s) replay, then a miss in baseline: up to {beta[1]} to record"
    items = {i["item"].split("/")[1]: i for i in json.loads((pytester.path / "plan.json").read_text())["plan"]["items"]}
    assert items["alpha"]["to_pay"] == {"expected_usd": 0.0, "bound_usd": 0.0}
    expected, bound = items["beta"]["to_pay"]["expected_usd"], items["beta"]["to_pay"]["bound_usd"]
    assert bound == pytest.approx(float(beta[4]), abs=1e-4) and 0 < expected < bound
    planned.stdout.fnmatch_lines([
        f"*to record: ≤ ${bound:.4f}*",
        f"to pay: 1 item(s), ${expected:.4f} expected (≤ ${bound:.4f}); 1 item(s) replay from the cassettes at $0",
        f"  pays {expected:.4f} (≤ {bound:.4f}): seeds/beta/SKILL.md::transfer[[]small->large[]], "
        "from a miss in baseline",
        "  replays at $0: seeds/alpha/SKILL.md::transfer[[]small->large[]]"])

    recorded = pytester.runpytest_subprocess("--record-mode=new_episodes", "--snapshot-update", "--max-cost=100",
                                             "--skilltransfer-json=r.json")
    recorded.assert_outcomes(passed=2)
    paid = json.loads((pytester.path / "r.json").read_text())["budget"]["charged_usd"]  # the live calls' bill
    print(f"beta paid ${paid:.6f} against ${expected:.6f} expected (≤ ${bound:.6f})")
    assert 0.7 * expected <= paid <= min(1.3 * expected, bound)
