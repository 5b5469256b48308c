"""Pay once, lose nothing: recorders in different processes never send the same request twice, and a failed
write stops sending at once, keeps every answer received or names the loss."""

from __future__ import annotations

import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import json
import re

import pytest
import yaml
from faulty_provider import FaultyProvider

from pytest_skilltransfer.cassettes import recording
from pytest_skilltransfer.cassettes.journal import journals
from pytest_skilltransfer.models.base import Message, ModelCallError, Request
from pytest_skilltransfer.models.providers import build_model

ROOT = Path(__file__).resolve().parents[2]
CALLS = 12

RECORDER = """
import errno, os, sys
from pathlib import Path
from pytest_skilltransfer.cassettes import recording, journal
from pytest_skilltransfer.models.base import Message, ModelCallError, Request
from pytest_skilltransfer.models.providers import build_model

root, url, calls, fail_after = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
if fail_after >= 0:  # the disk is full after `fail_after` journal writes, and stays full
    from pytest_skilltransfer.cassettes import seedstore
    real, count = journal.Journal.append, [0]
    def append(self, entry):
        count[0] += 1
        if count[0] > fail_after:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(self, entry)
    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")
    journal.Journal.append = append
    seedstore.write_model_file = full
from pytest_skilltransfer.pricing.prices import configure_prices, cost_usd
configure_prices({"payonce": {"input": 100, "output": 100}})
model = build_model(f"anthropic:payonce@{url}")
try:
    with recording(root, "seed", "new_episodes"):
        for i in range(calls):
            try:
                reply = model.complete(Request(system="s", messages=(Message("user", f"call {i}"),), max_tokens=16))
                usage = reply.usage.tokens_only()
                print(f"answered {i} paid {cost_usd(model.model_id, reply.usage):.9f} "
                      f"worth {cost_usd(model.model_id, usage):.9f}", flush=True)
            except ModelCallError as err:
                print(f"refused {i}: {err}", flush=True)
except Exception as err:
    print(f"closing failed: {type(err).__name__}: {err}", flush=True)
"""


def _recorder(root: Path, url: str, calls: int = CALLS, fail_after: int = -1) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", RECORDER, str(root), url, str(calls), str(fail_after)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _stored(folder: Path) -> list[str]:
    path = folder / "payonce.yaml"
    entries = yaml.safe_load(path.read_text())["interactions"] if path.exists() else []
    return sorted(e["request"]["body"]["json"]["messages"][0]["content"] for e in entries)


@pytest.mark.parametrize("apart_s", [0.0, 1.0])
def test_two_recorders_on_the_same_seed_send_each_request_once(tmp_path: Path, apart_s: float) -> None:
    with FaultyProvider() as fake:
        fake.delay = 0.1
        first = _recorder(tmp_path, fake.anthropic_url)
        time.sleep(apart_s)
        second = _recorder(tmp_path, fake.anthropic_url)
        outputs = [w.communicate(timeout=180)[0] for w in (first, second)]
        sent = Counter(json.dumps(r["body"], sort_keys=True) for r in fake.received)
    assert [w.returncode for w in (first, second)] == [0, 0]
    assert [o.count("answered") for o in outputs] == [CALLS, CALLS], outputs
    assert sorted(sent.values()) == [1] * CALLS, "a request was paid twice"
    assert _stored(tmp_path / "seed") == sorted(f"call {i}" for i in range(CALLS))
    assert journals(tmp_path / "seed") == []
    assert sorted(p.name for p in (tmp_path / "seed").iterdir()) == [".lock", "payonce.yaml", "payonce.yaml.index"]
    # each recorder's bill is what it paid: an answer the other sent costs it nothing, and the two add up to
    # the provider's bill (every distinct answer at its price, once)
    paid = [[float(w) for w in re.findall(r"^answered \d+ paid ([\d.]+)", o, re.M)] for o in outputs]
    worth = {int(i): float(w) for o in outputs for i, w in re.findall(r"^answered (\d+) paid [\d.]+ worth ([\d.]+)", o, re.M)}
    billed = sum(worth.values())
    assert billed > 0 and sum(map(sum, paid)) == pytest.approx(billed, rel=0.01), (paid, worth)


def test_a_full_disk_stops_sending_at_once_and_keeps_what_was_received(tmp_path: Path) -> None:
    with FaultyProvider() as fake:
        worker = _recorder(tmp_path, fake.anthropic_url, fail_after=3)
        out, _ = worker.communicate(timeout=120)
        sent = len(fake.received)
    assert out.count("answered") == 4, out  # the answer whose write failed still reaches its caller
    assert sent == 4, f"{sent} requests sent: recording must stop sending once a write failed"
    refusals = [line for line in out.splitlines() if line.startswith("refused")]
    assert len(refusals) == CALLS - 4
    assert "No space left on device" in refusals[0] and "recording stopped" in refusals[0]
    assert "closing failed" in out and "1 answer(s) received but not written" in out and "call 3" in out
    # the three written answers survive; the next run folds them in and pays only for the rest
    with FaultyProvider() as fake:
        with recording(tmp_path, "seed", "new_episodes"):
            model = build_model(f"anthropic:payonce@{fake.anthropic_url}")
            for i in range(CALLS):
                model.complete(Request(system="s", messages=(Message("user", f"call {i}"),), max_tokens=16))
        assert len(fake.received) == CALLS - 3
    assert _stored(tmp_path / "seed") == sorted(f"call {i}" for i in range(CALLS))


def test_a_write_that_fails_once_loses_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    from pytest_skilltransfer.cassettes import journal

    real, count = journal.Journal.append, [0]

    def append(self: journal.Journal, entry: dict) -> None:
        count[0] += 1
        if count[0] == 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(self, entry)

    monkeypatch.setattr(journal.Journal, "append", append)
    with FaultyProvider() as fake:
        with recording(tmp_path, "seed", "new_episodes"):
            model = build_model(f"anthropic:payonce@{fake.anthropic_url}")
            answers = [model.complete(Request(system="s", messages=(Message("user", f"call {i}"),), max_tokens=16))
                       for i in range(3)]
            with pytest.raises(ModelCallError, match="recording stopped"):
                model.complete(Request(system="s", messages=(Message("user", "call 3"),), max_tokens=16))
        assert len(fake.received) == 3
    assert len(answers) == 3
    assert _stored(tmp_path / "seed") == ["call 0", "call 1", "call 2"]  # the unjournaled one was folded in at close
