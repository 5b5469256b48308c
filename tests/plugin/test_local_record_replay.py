"""Live: the plugin records a real model (SmolLM2 on llama-server, started by --local-server=auto)
into a fresh cassette folder, then replays it offline with the network guard on: identical results.

Off by default (marker `local_llm`, deselected in CI); skipped when the server binary is absent.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_skilltransfer.models import local

pytestmark = [
    pytest.mark.local_llm,
    pytest.mark.skipif(not local.server_available(),
                       reason="llama-server or the SmolLM2 model is missing; run: python -m pytest_skilltransfer.local build"),
]
CHECK = {"kind": "rule", "checks": [{"op": "regex", "arg": r"(?m)^Recommendation: "}]}


def tiny_seed(root: Path) -> None:
    seed = root / "seeds" / "verdict"
    seed.mkdir(parents=True)
    (seed / "SKILL.md").write_text("# Advisor\n\nAnswer the question in two sentences.\n")
    line = lambda p, i: json.dumps({"task_id": f"{p}-{i}", "task": f"Should team {i} adopt weekly releases?", "judge": CHECK})
    (seed / "benchmark.jsonl").write_text("\n".join(line("bm", i) for i in range(4)) + "\n")
    (seed / "held-out.jsonl").write_text(line("hd", 9) + "\n")


def run(pytester: pytest.Pytester, *args: str) -> dict:
    report = pytester.path / "report.json"
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--pair", "sim-small:smollm2-135m", "--no-direct",
                                           "--nights=1", "--limit-replay=2", "--limit-holdout=1", "--snapshot-update",
                                           f"--skilltransfer-json={report}", *args)
    assert result.ret == 0, result.stdout.str()
    return json.loads(report.read_text())["results"][0]


def test_record_with_the_local_model_then_replay_offline(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(local.URL_ENV, raising=False)
    tiny_seed(pytester.path)
    pytester.makeini("[pytest]\ntestpaths = seeds\n")
    recorded = run(pytester, "--record-mode=once", "--local-server=auto")
    cassette = pytester.path / "cassettes" / "verdict" / "smollm2-135m.yaml"
    assert cassette.is_file() and "/v1/chat/completions" in cassette.read_text()
    monkeypatch.setenv("CI", "true")
    replayed = run(pytester, "--record-mode=none", "--local-server=off")
    assert replayed["scores"] == recorded["scores"] and replayed["learned_skill"] == recorded["learned_skill"]
    assert replayed["cost"]["tokens"] == recorded["cost"]["tokens"] > 0
