"""Lanes per model: one run sends an Anthropic model through the Batch API and an OpenAI model through flex
(each model's own `lane` in the models table, no run-wide option); the plan and the bill price each at its lane."""

from __future__ import annotations

import json

import pytest
from batch_provider import BatchProvider
from plugin_support import project

FAST = ("--transfer-batch-gather=0.3", "--transfer-batch-poll=0.05")


def test_each_model_runs_and_is_priced_in_its_own_lane(pytester: pytest.Pytester) -> None:
    with BatchProvider() as fake:
        fake.shuffle = False
        project(pytester, ini="skilltransfer_pair = small:large\nskilltransfer_nights = 1\n", seeds=("alpha",))
        pytester.makepyprojecttoml(f'''
            [tool.skilltransfer.models]
            small = {{ provider = "anthropic", model = "fake-small", base_url = "{fake.anthropic_url}", lane = "batch" }}
            large = {{ provider = "openai", model = "fake-large", base_url = "{fake.openai_url}/v1", lane = "flex" }}
            [tool.skilltransfer.prices]
            "fake-small" = {{ input = 10.0, output = 10.0, batch = {{ input = 5.0, output = 5.0 }} }}
            "fake-large" = {{ input = 20.0, output = 20.0, flex = {{ input = 10.0, output = 10.0 }} }}
        ''')
        plan = pytester.runpytest_subprocess("--plan", "--skilltransfer-json=plan.json")
        assert fake.received == [] and not fake.created
        plan.stdout.fnmatch_lines(["*by model (lane): fake-large (flex) * fake-small (batch) *",
                                   "as configured (each model in its lane)*"])
        planned = json.loads((pytester.path / "plan.json").read_text())["plan"]
        assert set(planned["breakdown"]["by_model"]) == {"fake-small (batch)", "fake-large (flex)"}
        assert planned["lanes"]["as_configured"]["bound"] < planned["lanes"]["standard"]["bound"]

        run = pytester.runpytest_subprocess("--record-mode=once", "--snapshot-update", "--skilltransfer-json=r.json",
                                            *FAST)
        run.assert_outcomes(passed=1)
        sync = [r for r in fake.received if r["path"].endswith(("/chat/completions", "/v1/messages"))]
        assert sync and all(r["path"].endswith("/chat/completions") for r in sync)  # the OpenAI model, synchronously
        assert all(r["body"].get("service_tier") == "flex" for r in sync)  # ... through flex
        assert fake.created and all(b.provider == "anthropic" for b in fake.created)  # the Anthropic model: batches
    report = json.loads((pytester.path / "r.json").read_text())
    lanes = {row["model"]: row["lane"] for r in report["results"] for rows in r["cost"]["phases"].values() for row in rows}
    assert lanes == {"fake-small": "batch", "fake-large": "flex"}
    assert set(report["summary"]["cost"]["by_lane"]) == {"batch", "flex"}


def test_a_lane_a_model_is_not_offered_is_an_error_naming_it(pytester: pytest.Pytester) -> None:
    project(pytester, ini="skilltransfer_pair = small:small\n", seeds=("alpha",))
    pytester.makepyprojecttoml('''
        [tool.skilltransfer.models]
        small = { provider = "anthropic", model = "fake-small", lane = "flex" }
    ''')
    result = pytester.runpytest_subprocess("--plan")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*small: lane = 'flex' is not offered; use one of standard, flex, batch (flex: OpenAI models only)*"])
