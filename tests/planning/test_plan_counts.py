"""One count: the plan's `calls ≤` is the calls sent to providers, the in-process ones (the simulator, its
judge) apart, so a recording run's progress line (`plan ≤ N`) and the plan say the same N."""

from __future__ import annotations

import json
import re

import pytest

from fake_provider import FakeProvider
from test_live_progress import _progress, _project


@pytest.fixture(autouse=True)
def _recording_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)


def test_the_plan_and_the_progress_line_count_the_same_provider_calls(pytester: pytest.Pytester) -> None:
    with FakeProvider() as fake:
        _project(pytester, fake.anthropic_url, ("alpha",))
        planned = pytester.runpytest_subprocess("--pair", "toy-a:remote", "--plan", "--skilltransfer-json=plan.json")
        total = next(line for line in planned.outlines if line.startswith("total (shared phases once)"))
        cells = re.split(r"\s{2,}", total.strip())
        header = re.split(r"\s{2,}", next(line for line in planned.outlines if line.startswith("item ")).strip())
        provider, in_process = int(cells[header.index("calls ≤")]), int(cells[header.index("in-process")])
        assert provider > 0 and in_process > 0 and fake.received == []
        plan = json.loads((pytester.path / "plan.json").read_text())["plan"]["total"]
        assert (plan["provider_calls"], plan["in_process_calls"]) == (provider, in_process)
        assert plan["calls"] == provider + in_process
        recorded = pytester.runpytest_subprocess("--pair", "toy-a:remote", "--record-mode=once", "--snapshot-update",
                                                 "--skilltransfer-progress", "0.2")
        sent = len(fake.received)
    recorded.assert_outcomes(passed=1)
    assert int(_progress(recorded)[-1][4].replace(",", "")) == provider >= sent  # one count, an upper bound
