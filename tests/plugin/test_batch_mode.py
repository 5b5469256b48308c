"""Sleep mode: a recording through the loopback Batch APIs replays exactly like a synchronous one."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from batch_provider import BatchProvider
from plugin_support import project

FAST = ("--transfer-batch-gather=0.3", "--transfer-batch-poll=0.05")


@pytest.fixture
def fake() -> BatchProvider:
    with BatchProvider() as server:
        yield server


def two_by_two(pytester: pytest.Pytester, fake: BatchProvider, nights: int = 1) -> None:
    """Seeds alpha and beta, pairs small:large and large:small; `small` speaks the Anthropic wire format,
    `large` the OpenAI one, both served by the loopback fake."""
    project(pytester, ini=f"skilltransfer_pair = small:large large:small\nskilltransfer_nights = {nights}\n"
)
    pytester.makepyprojecttoml(f'''
        [tool.skilltransfer.models]
        small = "anthropic:fake-small@{fake.anthropic_url}"
        large = "openai:fake-large@{fake.openai_url}"
    ''')


def interactions(folder: Path) -> dict[str, list[tuple[str, str]]]:
    """Per model file, its (request body, response body) pairs in a stable order."""
    found = {}
    for path in sorted(folder.rglob("*.yaml")):
        data = yaml.safe_load(path.read_text())["interactions"]
        pairs = [(json.dumps(i["request"]["body"], sort_keys=True), json.dumps(i["response"]["body"], sort_keys=True))
                 for i in data]
        found[str(path.relative_to(folder))] = sorted(pairs)
    return found


def results(path: Path, lane: str = "standard") -> list[dict]:
    """The report's results without the gate (the regression gate runs once snapshots exist); every
    call priced in `lane` (which then reads as standard)."""
    report = json.loads(path.read_text())
    for result in report["results"]:
        result.pop("gate", None)
        for rows in result["cost"]["phases"].values():
            for row in rows:
                assert row["lane"] == lane
                row["lane"] = "standard"
    return report["results"]


def test_a_batch_recording_replays_exactly_like_a_synchronous_one(pytester: pytest.Pytester, fake: BatchProvider) -> None:
    two_by_two(pytester, fake)
    sync = pytester.runpytest_subprocess("--record-mode=once", "--snapshot-update", "--skilltransfer-json=sync.json")
    sync.assert_outcomes(passed=4)
    sent_sync = fake.served_sync
    assert sent_sync > 0 and not fake.created
    shutil.move(pytester.path / "cassettes", pytester.path / "cassettes-sync")

    batch = pytester.runpytest_subprocess("--record-mode=once", "--transfer-batch", *FAST,
                                          "--skilltransfer-json=batch.json")
    batch.assert_outcomes(passed=4)  # the snapshots the synchronous run wrote still match
    assert fake.served_sync == sent_sync  # nothing went synchronously
    assert fake.total_paid == sent_sync and not fake.paid_twice()  # each request once, as many as synchronously
    out = batch.stdout.str()
    assert "batch msgbatch_" in out and "batch batch_" in out and "requests" in out
    assert {b.provider for b in fake.created} == {"anthropic", "openai"}
    summary = [line for line in batch.stderr.lines if line.startswith("batch lane: ")]
    assert summary and f"batch lane: {sent_sync} request(s) in " in summary[0], batch.stderr.str()
    print(summary[0], f"({sent_sync} synchronous requests)")
    last = [line for line in batch.outlines if line.startswith("skilltransfer: ")][-1]  # live progress
    assert last.startswith(f"skilltransfer: 4/4 items · {sent_sync} calls (plan ≤ ") and " · batch lane · " in last, last

    assert interactions(pytester.path / "cassettes") == interactions(pytester.path / "cassettes-sync")
    assert (pytester.path / "cassettes" / "batch-manifest.jsonl").is_file()
    fake.stop()
    replay = pytester.runpytest_subprocess("--record-mode=none", "--skilltransfer-json=replay.json")
    replay.assert_outcomes(passed=4)
    assert results(pytester.path / "replay.json") == results(pytester.path / "sync.json")
    assert results(pytester.path / "batch.json", lane="batch") == results(pytester.path / "sync.json")
