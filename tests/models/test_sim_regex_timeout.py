"""Seed-provided patterns in the simulator's optimizer run under the shared time limit (timed_regex)."""

from __future__ import annotations

import json
import time
import warnings
from pathlib import Path

import pytest

from pytest_skilltransfer.engine import judges
from pytest_skilltransfer.engine.protocol import SeedSession
from pytest_skilltransfer.engine.results import ProtocolConfig
from pytest_skilltransfer.engine.seeds import load_seed
from pytest_skilltransfer.guards import timed_regex
from pytest_skilltransfer.models.registry import resolve_model
from pytest_skilltransfer.models.sim.regex_template import template_for

# `re` backtracks for hours on this one (the optimizer used to hang on it); the `regex` library returns at once.
HANGS_RE = r"^(\w+\s?)+[^\w\s]{2}Q$"
# Exponential in the `regex` library too: only the time limit ends it.
HANGS_REGEX = r"^(\w|\w\w|\s)+[^\w\s]{2}Q$"


def write_seed(root: Path, pattern: str) -> Path:
    root.mkdir(parents=True)
    (root / "SKILL.md").write_text("# Router\n\nRoute the ticket to a team.\n")
    checks = {"kind": "rule", "checks": [{"op": "regex", "arg": pattern}, {"op": "contains", "arg": "Team:"}]}
    line = lambda i, p: json.dumps({"task_id": f"{p}-{i:02d}", "task": f"Route the ticket about the login page {i}",
                                    "judge": checks})
    (root / "benchmark.jsonl").write_text("\n".join(line(i, "bm") for i in range(8)) + "\n")
    (root / "held-out.jsonl").write_text("\n".join(line(i, "hd") for i in range(4)) + "\n")
    return root


def test_the_shared_helper_bounds_a_search_and_judges_use_it(monkeypatch):
    monkeypatch.setattr(timed_regex, "TIMEOUT_SECONDS", 0.05)
    started = time.monotonic()
    with pytest.raises(timed_regex.PatternTimeout) as info:
        timed_regex.search(HANGS_REGEX, "x" + "placeholder text " * 4 + "Q")
    assert time.monotonic() - started < 2 and info.value.pattern == HANGS_REGEX
    assert judges.PatternTimeout is timed_regex.PatternTimeout
    assert judges.RegexTimeoutWarning is timed_regex.RegexTimeoutWarning


@pytest.mark.parametrize("pattern", [HANGS_RE, HANGS_REGEX], ids=["hangs-re", "hangs-regex"])
def test_a_catastrophic_training_pattern_finishes_within_seconds(tmp_path, monkeypatch, pattern):
    monkeypatch.setattr(timed_regex, "TIMEOUT_SECONDS", 0.2)
    monkeypatch.setattr(judges, "REGEX_TIMEOUT_SECONDS", 0.2)
    seed = load_seed(write_seed(tmp_path / "router", pattern))
    started = time.monotonic()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = SeedSession(seed, ProtocolConfig(direct=False)).transfer(resolve_model("sim-small"), resolve_model("sim-large"))
    assert time.monotonic() - started < 30
    assert len(result.learned.nights) >= 1
    assert "Team:" in result.learned.learned_skill, "the rest of the night still learns"
    optimizer = [str(w.message) for w in caught
                 if isinstance(w.message, timed_regex.RegexTimeoutWarning) and "optimizer" in str(w.message)]
    if pattern == HANGS_REGEX:
        assert optimizer, "the degraded step is reported"
        assert all(f"{seed.path / 'benchmark.jsonl'}:" in m and repr(pattern) in m and "run goes on" in m for m in optimizer)


def test_template_for_degrades_one_pattern_with_a_warning(monkeypatch):
    monkeypatch.setattr(timed_regex, "TIMEOUT_SECONDS", 0.05)
    with pytest.warns(timed_regex.RegexTimeoutWarning, match="does not turn it into a template"):
        assert template_for(HANGS_REGEX) is None
    assert template_for(r"^Team: (Platform|Payments)$") == "Team: <Platform|Payments>"
