"""One bill: every dollar figure of a run is what the provider billed (its usage x price), each answer once.

A project seed is recorded against loopback providers at $100/Mtok ($50/Mtok in the batch lane). The
provider's bill is recomputed from what it really answered; the JSON report's total, the sum of its
items, the terminal summary, the live progress line, the Markdown report and (with --max-cost) the budget
ledger must all equal it. The fake's optimizer replies are no usable edit, so the transferred and direct
phases send exactly the baseline's requests: served once, paid once, shown as reused. Every run is at the default
protocol, so held-out tasks are scored in the group-sequential design's waves (here: no task moves, so every
item stops at its first look).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from batch_provider import BatchProvider
from fake_provider import anthropic_reply, openai_reply

PROJECT_SEEDS = Path(__file__).resolve().parents[2] / "seeds"
PRICE, BATCH_PRICE = 100.0, 50.0
FAST_BATCH = ["--transfer-batch", "--transfer-batch-gather=0.3", "--transfer-batch-poll=0.05"]

RUNS = {
    # name: (wire, pairs, extra options)
    "openai-sync": ("openai", ["--pair=a:b"], []),
    "anthropic-sync": ("anthropic", ["--pair=a:b"], []),
    "anthropic-batch": ("anthropic", ["--pair=a:b"], FAST_BATCH),
    "openai-batch-budget": ("openai", ["--pair=a:b"], [*FAST_BATCH, "--max-cost=50"]),
    "pairs-xdist-budget": ("openai", ["--pair=a:b", "--pair=c:b", "--pair=a:c"], ["-n", "2", "--max-cost=50"]),
}


def _tokens(provider: str, body: dict) -> int:
    if provider == "openai":
        usage = openai_reply(body)["usage"]
        return usage["prompt_tokens"] + usage["completion_tokens"]
    usage = anthropic_reply(body)["usage"]
    return usage["input_tokens"] + usage["output_tokens"]


def provider_bill(fake: BatchProvider) -> tuple[float, int]:
    """(dollars, requests answered) as the provider bills them: every answered request, batch items at batch rates."""
    usd, answered = 0.0, 0
    for received in fake.received:
        path = received["path"]
        if path.endswith("/chat/completions") or path.endswith("/v1/messages"):
            usd += _tokens("openai" if path.endswith("/chat/completions") else "anthropic", received["body"]) * PRICE
            answered += 1
    for batch in fake.created:
        bodies = {item["custom_id"]: item["body"] for item in batch.items}
        succeeded = [bodies[r["custom_id"]] for r in batch.results or []
                     if (r.get("result") or {}).get("type") == "succeeded" or (r.get("response") or {}).get("status_code") == 200]
        usd += sum(_tokens(batch.provider, body) for body in succeeded) * BATCH_PRICE
        answered += len(succeeded)
    return usd / 1e6, answered


@pytest.mark.parametrize("name", list(RUNS))
def test_every_dollar_figure_is_the_providers_bill(pytester: pytest.Pytester, name: str) -> None:
    wire, pairs, options = RUNS[name]
    shutil.copytree(PROJECT_SEEDS / "changelog-writer", pytester.path / "seeds" / "changelog-writer",
                    ignore=shutil.ignore_patterns("__snapshots__"))
    pytester.makeini("[pytest]\n")  # the default protocol: the group-sequential design's waves
    with BatchProvider() as fake:
        fake.shuffle = False
        url = fake.openai_url if wire == "openai" else fake.anthropic_url
        pytester.makepyprojecttoml(f'''
            [tool.skilltransfer.models]
            a = "{wire}:fake-a@{url}"
            b = "{wire}:fake-b@{url}"
            c = "{wire}:fake-c@{url}"
            [tool.skilltransfer.prices]
            "fake-*" = {{ input = {PRICE}, output = {PRICE}, batch = {{ input = {BATCH_PRICE}, output = {BATCH_PRICE} }} }}
        ''')
        result = pytester.runpytest_subprocess(
            "seeds", *pairs, "--record-mode=once", "--snapshot-update", "-p", "no:randomly", "--skilltransfer-json=r.json",
            "--skilltransfer-md=r.md", "--skilltransfer-progress=60", *options)
        billed, answered = provider_bill(fake)
    report = json.loads((pytester.path / "r.json").read_text())
    assert len(report["results"]) == len(pairs), result.stdout.str()
    cost = report["summary"]["cost"]
    print(f"{name}: provider billed ${billed:.4f} for {answered} answers; report ${cost['total_usd']:.4f}; "
          f"reused {cost['reused_calls']} use(s) worth ${cost['reused_usd']:.4f}")

    assert cost["total_usd"] == pytest.approx(billed, rel=0.01)
    assert sum(r["cost"]["total_usd"] for r in report["results"]) == pytest.approx(cost["total_usd"], abs=1e-5)
    assert sum(r["cost"]["calls"] for r in report["results"]) == answered  # each answer paid once, by one item
    assert cost["reused_calls"] > 0  # the transferred arm reuses the baseline's answers on the pair's tasks, and
    # pays only for the regression gate's reference past the pair's stop (this run writes snapshots)
    past_the_stop = any((r.get("sequential") or {}).get("reference") for r in report["results"])
    assert (cost["by_phase"]["transferred"] > 0.0) == past_the_stop
    if "budget" in report:
        assert report["budget"]["charged_usd"] == pytest.approx(billed, rel=0.01)
        assert report["budget"]["live_calls"] == answered
    out = result.stdout.str()
    assert f"cost: ${cost['total_usd']:.4f} paid, each answer once" in out
    assert f"cost: ${cost['total_usd']:.4f} paid, each answer once" in (pytester.path / "r.md").read_text()
    progress = [float(m) for m in re.findall(r"skilltransfer: \d+/\d+ items · .* · \$([\d.,]+)", out)]
    assert progress and progress[-1] == pytest.approx(billed, abs=0.006)  # the last progress line: the same bill


def _project(pytester: pytest.Pytester, fake: BatchProvider, wire: str) -> None:
    shutil.copytree(PROJECT_SEEDS / "changelog-writer", pytester.path / "seeds" / "changelog-writer",
                    ignore=shutil.ignore_patterns("__snapshots__"))
    pytester.makeini("[pytest]\n")  # the default protocol: the group-sequential design's waves
    url = fake.openai_url if wire == "openai" else fake.anthropic_url
    pytester.makepyprojecttoml(f'''
        [tool.skilltransfer.models]
        a = "{wire}:fake-a@{url}"
        b = "{wire}:fake-b@{url}"
        [tool.skilltransfer.prices]
        "fake-*" = {{ input = {PRICE}, output = {PRICE}, batch = {{ input = {BATCH_PRICE}, output = {BATCH_PRICE} }} }}
    ''')


def test_an_item_stopped_by_the_budget_keeps_its_spend_in_every_figure(pytester: pytest.Pytester) -> None:
    """An item that errors (here: the budget stops it) spent what its answered calls cost: the JSON total,
    its error record, the terminal and Markdown bills and the budget ledger all say the provider's bill."""
    with BatchProvider() as fake:
        _project(pytester, fake, "openai")
        result = pytester.runpytest_subprocess(
            "seeds", "--pair=a:b", "--record-mode=once", "--snapshot-update", "-p", "no:randomly",
            "--skilltransfer-json=r.json", "--skilltransfer-md=r.md", "--skilltransfer-progress=60", "--max-cost=0.3")
        billed, answered = provider_bill(fake)
    report = json.loads((pytester.path / "r.json").read_text())
    out = result.stdout.str()
    assert not report["results"] and len(report["errors"]) == 1, out
    error = report["errors"][0]
    print(f"budget stop: provider billed ${billed:.4f} for {answered} answers; error record {error.get('cost')}")
    assert answered > 0 and "budget" in error["reason"]
    assert error["cost"]["calls"] == answered
    assert error["cost"]["total_usd"] == pytest.approx(billed, rel=0.01)
    assert report["summary"]["cost"]["total_usd"] == pytest.approx(billed, rel=0.01)
    assert report["summary"]["cost"]["by_phase"] == {"errored": pytest.approx(billed, rel=0.01)}
    assert report["budget"]["charged_usd"] == pytest.approx(billed, rel=0.01)
    total = report["summary"]["cost"]["total_usd"]
    assert f"cost: ${total:.4f} paid, each answer once" in out
    assert f"cost by phase: errored ${total:.4f}" in out
    markdown = (pytester.path / "r.md").read_text()
    assert f"cost: ${total:.4f} paid, each answer once" in markdown and f", spent ${total:.4f} on {answered} call(s)" in markdown


def test_the_batch_lanes_synchronous_fallback_is_billed_at_the_synchronous_rate(pytester: pytest.Pytester) -> None:
    """Batch items that errored at the provider and were sent synchronously (`--transfer-batch-fallback=sync`)
    cost the synchronous rate: the report's total, its lanes and the last progress line say the provider's bill."""
    with BatchProvider() as fake:
        fake.shuffle = False
        fake.fail_items("errored", "errored", "errored")
        _project(pytester, fake, "anthropic")
        result = pytester.runpytest_subprocess(
            "seeds", "--pair=a:b", "--record-mode=once", "--snapshot-update", "-p", "no:randomly",
            "--skilltransfer-json=r.json", "--skilltransfer-progress=60", *FAST_BATCH, "--transfer-batch-fallback=sync")
        billed, answered = provider_bill(fake)
        sync = fake.served_sync
    report = json.loads((pytester.path / "r.json").read_text())
    cost = report["summary"]["cost"]
    out = result.stdout.str()
    print(f"sync fallback: provider billed ${billed:.4f} for {answered} answers ({sync} synchronous); "
          f"report ${cost['total_usd']:.4f}, by lane {cost['by_lane']}")
    assert len(report["results"]) == 1 and sync == 3, out
    assert cost["total_usd"] == pytest.approx(billed, rel=0.01)
    assert set(cost["by_lane"]) == {"batch", "standard"}
    assert sum(r["cost"]["calls"] for r in report["results"]) == answered
    progress = [float(m) for m in re.findall(r"skilltransfer: \d+/\d+ items · .* · \$([\d.,]+)", out)]
    assert progress and progress[-1] == pytest.approx(billed, abs=0.006)


def test_answers_without_usage_are_labelled_in_the_bill() -> None:
    """A reply that carried no usage is counted at 0 tokens: the bill's first line says so, it never passes silently."""
    from pytest_skilltransfer.pricing.cost_breakdown import breakdown, breakdown_lines

    rows = [{"model": "m", "role": "agent", "usd": 0.1, "usage_unreported": 2}]
    line = breakdown_lines(breakdown([{"cost": {"phases": {"baseline": rows}}}]))[0]
    assert line.startswith("cost: $0.1000 paid, each answer once; 2 answer(s) came without usage"), line


def test_a_rerun_keeps_what_its_errored_try_spent() -> None:
    """pytest-rerunfailures: the try that errored paid for answers the passing try reuses; the result carries
    that spend (phase errored) so the run's bill does not lose it, and so does an item that errors twice."""
    from types import SimpleNamespace

    from plugin_support import item_record
    from pytest_skilltransfer.plugin.reporting import ERROR_ATTRIBUTE, REPORT_ATTRIBUTE, TransferReporting
    from pytest_skilltransfer.pricing.cost_breakdown import breakdown

    row = {"model": "m", "role": "agent", "usd": 0.25, "calls": 5, "input_tokens": 90, "output_tokens": 10}
    spent = {"phases": {"errored": [row]}, "total_usd": 0.25, "calls": 5, "tokens": 100}
    config = SimpleNamespace()  # the controller: no workerinput
    reporting = TransferReporting(config, None)  # type: ignore[arg-type]
    error = {"item": "i", "seed": "s", "source": "a", "target": "b", "when": "setup", "reason": "x", "cost": spent}
    for _ in range(2):
        reporting.pytest_runtest_logreport(SimpleNamespace(**{ERROR_ATTRIBUTE: error}))  # type: ignore[arg-type]
    assert reporting.errors["i"]["cost"]["total_usd"] == 0.5 and len(reporting.errors["i"]["cost"]["phases"]["errored"]) == 2
    result = item_record(item="i", seed="s", source="a", target="b",
                         cost={"phases": {"baseline": [{**row, "usd": 0.1, "calls": 2}]}, "total_usd": 0.1, "calls": 2,
                               "tokens": 40})
    report = SimpleNamespace(**{REPORT_ATTRIBUTE: json.dumps(result.to_json())})
    reporting.pytest_runtest_logreport(report)  # type: ignore[arg-type]
    kept = reporting.results["i"].cost
    assert not reporting.errors and kept.total_usd == pytest.approx(0.6) and kept.calls == 12
    assert breakdown([{"cost": kept.to_json()}])["by_phase"] == {"baseline": 0.1, "errored": 0.5}
