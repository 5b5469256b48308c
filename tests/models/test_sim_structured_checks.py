"""The simulated optimizer learns JSON-shaped training checks (a key in a regex or a quoted key in `contains`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_skilltransfer.engine.protocol import SeedSession
from pytest_skilltransfer.engine.results import ProtocolConfig
from pytest_skilltransfer.engine.seeds import load_seed
from pytest_skilltransfer.models.registry import resolve_model

CHECKS = {"kind": "rule", "checks": [{"op": "regex", "arg": '\\{\\s*"impact"\\s*:'}, {"op": "contains", "arg": '"root_cause"'}]}
INCIDENTS = ["the checkout outage after the cache flush", "the login errors during the certificate renewal",
             "the slow search after the index rebuild", "the failed payouts after the bank API change",
             "the missing emails after the provider switch", "the broken uploads after the storage migration"]


def write_seed(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "SKILL.md").write_text("# Incident Record\n\nDescribe the incident in the request for the incident log.\n")
    line = lambda i, p: json.dumps({"task_id": f"{p}-{i:02d}", "task": f"Record {INCIDENTS[i % 6]} (case {i}).", "judge": CHECKS})
    (root / "benchmark.jsonl").write_text("\n".join(line(i, "bm") for i in range(12)) + "\n")
    (root / "held-out.jsonl").write_text("\n".join(line(i, "hd") for i in range(12)) + "\n")
    return root


@pytest.mark.parametrize("source, target", [("sim-small", "sim-large"), ("sim-large", "sim-small")])
def test_a_seed_with_json_shaped_checks_is_learned_directly_and_transfers_from_the_small_model(tmp_path, source, target):
    seed = load_seed(write_seed(tmp_path / "incident-record"))
    result = SeedSession(seed, ProtocolConfig()).transfer(resolve_model(source), resolve_model(target))
    assert result.baseline.hard.mean == 0.0
    assert result.direct.hard.mean >= 0.5, "the optimizer turns the JSON-shaped checks into a template or a schema"
    assert '"root_cause"' in result.learned.learned_skill or "root_cause" in result.learned.learned_skill
    if source == "sim-small":
        assert result.transferred.hard.mean >= 0.75
