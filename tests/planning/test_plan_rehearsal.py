"""The plan rehearsed at realistic answer lengths: a project seed planned, then recorded against the realistic
loopback provider (`benchmarks/realistic_provider.py`: the simulated models behind both wires, answers of a working
model's length, optimizer edits that apply) with the group-sequential design on; the provider's bill (its usage x
price) lands within 30% of the plan's expected figure and under its bound. `benchmarks/plan_tightness.py` runs the
same rehearsal over every project seed."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from plugin_support import copy_project_seed

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from realistic_provider import DEFAULT_PROFILES, Answers, RealisticProvider  # noqa: E402

INPUT_USD, OUTPUT_USD = 1.0, 5.0


def test_a_recording_pays_within_30_percent_of_the_plans_expected_figure(pytester: pytest.Pytester,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    server = RealisticProvider(Answers("realistic", DEFAULT_PROFILES), 0.0).start()
    try:
        copy_project_seed(pytester.path / "seeds", "ticket-router")
        pytester.makeini("[pytest]\ntestpaths = seeds\n")  # the default protocol and design
        pytester.makepyprojecttoml(f'''
            [tool.skilltransfer.models]
            bench-small = "anthropic:bench-small@{server.anthropic_url}"
            bench-large = "openai:bench-large@{server.openai_url}"
            [tool.skilltransfer.prices]
            "bench-*" = {{ input = {INPUT_USD}, output = {OUTPUT_USD} }}
        ''')
        pairs = ("--pair=bench-small:bench-large", "--pair=bench-large:bench-small", "-p", "no:randomly")
        planned = pytester.runpytest_subprocess("--plan", *pairs)
        assert planned.ret == 0 and not server.take_seen()
        total = next(re.split(r"\s{2,}", line.strip()) for line in planned.outlines
                     if line.startswith("total (shared phases once)"))
        bound, expected = float(total[4]), float(total[5])
        planned.stdout.fnmatch_lines(["expected * under the group-sequential design*"])
        pytester.runpytest_subprocess(*pairs, "--snapshot-update", "--max-cost=100",
                                      "--skilltransfer-json=r.json").assert_outcomes(passed=2)
        seen = server.take_seen()
    finally:
        server.stop()
    paid = sum(r[4] * INPUT_USD + r[5] * OUTPUT_USD for r in seen) / 1e6  # the provider's bill
    report = json.loads((pytester.path / "r.json").read_text())
    assert report["budget"]["charged_usd"] == pytest.approx(paid, rel=0.01)
    assert all(r["sequential"]["design"] == "group-sequential" for r in report["results"])
    print(f"ticket-router, 2 pairs: paid ${paid:.4f} for {len(seen)} answers; plan expected ${expected:.4f} "
          f"({paid / expected:.2f}x), bound ${bound:.4f}")
    assert 0.7 * expected <= paid <= 1.3 * expected and paid <= bound
