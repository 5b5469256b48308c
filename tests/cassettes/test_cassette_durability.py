"""Recordings survive kill -9, concurrent recorders, and damage: nothing answered is lost, nothing damaged is used."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from faulty_provider import FaultyProvider

from pytest_skilltransfer.cassettes import recording
from pytest_skilltransfer.cassettes.journal import journals, live_or_orphan_entries
from pytest_skilltransfer.cassettes.store import CassetteFileError, model_files
from pytest_skilltransfer.models.base import Message, Request
from pytest_skilltransfer.models.providers import build_model

ROOT = Path(__file__).resolve().parents[2]
CALLS = 10

RECORDER = """
import os, signal, sys
from pathlib import Path
from pytest_skilltransfer.cassettes import recording
from pytest_skilltransfer.guards import whole_file
from pytest_skilltransfer.models.base import Message, Request
from pytest_skilltransfer.models.providers import build_model

root, url, name, mode, die_on_save = Path(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5] == "1"
if die_on_save:  # kill -9 in the middle of folding the journal into the YAML file
    whole_file.os.replace = lambda src, dst: os.kill(os.getpid(), signal.SIGKILL)
model = build_model(f"anthropic:durable@{url}")
with recording(root, "seed", mode):
    for i in range(int(sys.argv[6])):
        model.complete(Request(system="s", messages=(Message("user", f"{name} call {i}"),), max_tokens=16))
        print(f"answered {i}", flush=True)
"""


def _recorder(root: Path, url: str, name: str = "w", mode: str = "new_episodes", die_on_save: bool = False,
              calls: int = CALLS, env: dict[str, str] | None = None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", RECORDER, str(root), url, name, mode, "1" if die_on_save else "0",
                             str(calls)], cwd=ROOT, stdout=subprocess.PIPE, text=True, env={**os.environ, **(env or {})})


def on_disk(folder: Path) -> list[dict]:
    files = [e for p in model_files(folder) for e in yaml.safe_load(p.read_text())["interactions"]]
    return files + live_or_orphan_entries(folder)


def _ask(i: int, name: str = "w") -> Request:
    return Request(system="s", messages=(Message("user", f"{name} call {i}"),), max_tokens=16)


@pytest.mark.parametrize("kill_after", [0, 3, 7])
def test_kill_9_while_recording_loses_at_most_the_call_in_flight(tmp_path: Path, kill_after: int) -> None:
    with FaultyProvider() as fake:
        fake.delay = 0.05
        worker = _recorder(tmp_path, fake.anthropic_url)
        answered = 0
        while answered < kill_after:
            assert worker.stdout is not None and worker.stdout.readline().startswith("answered")
            answered += 1
        worker.send_signal(signal.SIGKILL)
        rest, _ = worker.communicate(timeout=30)
        answered += rest.count("answered")
        assert worker.returncode == -signal.SIGKILL
        folder = tmp_path / "seed"
        stored = len(on_disk(folder))
        assert answered <= stored <= answered + 1  # every answered call is on disk; at most one was in flight
        sent = len(fake.received)
        with recording(tmp_path, "seed", "new_episodes"):  # folds the orphan journal, records only what is missing
            model = build_model(f"anthropic:durable@{fake.anthropic_url}")
            for i in range(CALLS):
                model.complete(_ask(i))
        assert len(fake.received) - sent == CALLS - stored
    assert journals(folder) == [] and len(on_disk(folder)) == CALLS


def test_kill_9_while_saving_leaves_the_journal_and_the_next_open_cleans_up(tmp_path: Path) -> None:
    with FaultyProvider() as fake:
        worker = _recorder(tmp_path, fake.anthropic_url, die_on_save=True, calls=4)
        out, _ = worker.communicate(timeout=60)
        assert worker.returncode == -signal.SIGKILL and out.count("answered") == 4
        folder = tmp_path / "seed"
        assert [p.name for p in folder.iterdir() if p.name.endswith(".tmp")]  # the killed save's temp file
        with recording(tmp_path, "seed", "new_episodes"):
            model = build_model(f"anthropic:durable@{fake.anthropic_url}")
            for i in range(4):
                model.complete(_ask(i))
        assert len(fake.received) == 4  # nothing was sent twice
    assert sorted(p.name for p in folder.iterdir()) == [".lock", "durable.yaml", "durable.yaml.index"]
    assert len(on_disk(folder)) == 4


def test_two_recorders_with_different_tmpdir_keep_every_call(tmp_path: Path) -> None:
    with FaultyProvider() as fake:
        fake.delay = 0.01
        for name in ("gw0", "gw1"):
            (tmp_path / f"tmp-{name}").mkdir()
        workers = [_recorder(tmp_path, fake.anthropic_url, name=name, calls=15,
                             env={"TMPDIR": str(tmp_path / f"tmp-{name}")})
                   for name in ("gw0", "gw1")]
        assert [w.communicate(timeout=120)[0].count("answered") for w in workers] == [15, 15]
        assert [w.returncode for w in workers] == [0, 0]
    entries = yaml.safe_load((tmp_path / "seed" / "durable.yaml").read_text())["interactions"]
    texts = sorted(e["request"]["body"]["json"]["messages"][0]["content"] for e in entries)
    assert texts == sorted(f"{n} call {i}" for n in ("gw0", "gw1") for i in range(15))


@pytest.fixture
def recorded(tmp_path: Path) -> Path:
    """A seed cassette with six recorded calls."""
    with FaultyProvider() as fake:
        with recording(tmp_path, "seed", "once"):
            model = build_model(f"anthropic:durable@{fake.anthropic_url}")
            for i in range(6):
                model.complete(_ask(i))
    return tmp_path / "seed" / "durable.yaml"


@pytest.mark.parametrize("fraction", [0.05, 0.3, 0.6, 0.9, 0.99])
def test_a_truncated_cassette_is_a_clear_error_and_all_rewrites_it(recorded: Path, fraction: float) -> None:
    text = recorded.read_text()
    recorded.write_text(text[: int(len(text) * fraction)])
    for mode in ("none", "once", "new_episodes"):
        with pytest.raises(CassetteFileError) as caught:
            with recording(recorded.parents[1], "seed", mode):
                pass
        message = str(caught.value)
        assert str(recorded) in message and "--record-mode=all" in message
        assert "truncated" in message or "cannot be read" in message or "interaction" in message
    with FaultyProvider() as fake:
        with recording(recorded.parents[1], "seed", "all"):
            model = build_model(f"anthropic:durable@{fake.anthropic_url}")
            replies = [model.complete(_ask(i)) for i in range(6)]
    with recording(recorded.parents[1], "seed", "none"):
        assert [model.complete(_ask(i)) for i in range(6)] == replies


@pytest.mark.parametrize(("damage", "says"), [
    (lambda e: e.pop("response"), "interaction 3 (line "),
    (lambda e: e["response"].pop("status"), "has no response `status.code`"),
    (lambda e: e["request"].pop("uri"), "has no request `method` and `uri`"),
])
def test_a_malformed_interaction_is_named_by_file_number_and_line(recorded: Path, damage: object, says: str) -> None:
    data = yaml.safe_load(recorded.read_text())
    damage(data["interactions"][2])  # type: ignore[operator]
    recorded.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(CassetteFileError, match=rf"{recorded.name}, interaction 3") as caught:
        with recording(recorded.parents[1], "seed", "none"):
            pass
    assert says in str(caught.value)


def test_a_cassette_with_a_wrong_count_is_refused(recorded: Path) -> None:
    recorded.write_text(recorded.read_text().replace("count: 6", "count: 7"))
    with pytest.raises(CassetteFileError, match="says it holds 7 interactions but holds 6"):
        with recording(recorded.parents[1], "seed", "none"):
            pass


def test_answers_that_arrive_together_share_an_fsync_and_each_returns_on_disk(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Group commit: every append returns only after an fsync that began after its line was written."""
    import threading
    import time

    from pytest_skilltransfer.cassettes import journal as journal_module
    from pytest_skilltransfer.cassettes.journal import Journal, read_journal

    real_fsync, synced, lock = os.fsync, [], threading.Lock()

    def slow_fsync(fd: int) -> None:
        size = os.fstat(fd).st_size
        time.sleep(0.01)  # a disk that takes its time: lines written meanwhile wait for the next fsync
        real_fsync(fd)
        with lock:
            synced.append(size)

    monkeypatch.setattr(journal_module.os, "fsync", slow_fsync)
    journal = Journal(tmp_path / "seed")
    returned: list[tuple[str, int]] = []

    def writer(name: str) -> None:
        for i in range(10):
            entry = {"request": {"method": "POST", "uri": "http://x/v1/messages", "body": {"json": {"n": f"{name}{i}"}}},
                     "response": {"status": {"code": 200}, "body": {"json": {}}}}
            journal.append(entry)
            with lock:  # the file is durable at least up to this line
                returned.append((f"{name}{i}", max(synced, default=0)))

    threads = [threading.Thread(target=writer, args=(f"t{n}-",)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    text = journal.path.read_text()
    for name, durable in returned:
        end = text.index("\n", text.index(f'"{name}"')) + 1
        assert durable >= len(text[:end].encode()), f"{name} returned before its line was fsync'd"
    assert len(read_journal(journal.path)) == 80
    assert len(synced) < 80 / 2, f"{len(synced)} fsyncs for 80 answers"
    journal.discard()
