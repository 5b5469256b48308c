"""Nothing paid is lost on a full disk: the room of an answer is reserved before its request is sent, so a
full disk stops sending instead of losing answers; every disk error at save is a named message."""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from batch_provider import BatchProvider
from plugin_support import project

ROOT = Path(__file__).resolve().parents[2]
CALLS = 24

# A recorder of CALLS concurrent calls on a disk of `capacity` bytes (journal lines and reserved room share
# it, as on a real disk), where model files can never be written (the fold at close fails).
RECORDER = """
import errno, json, sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from pytest_skilltransfer.cassettes import journal, recording, seedstore
from pytest_skilltransfer.models.base import Message, ModelCallError, Request
from pytest_skilltransfer.models.providers import build_model

root, url, calls, capacity = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
if capacity >= 0:
    disk = {"used": 0}
    def full():
        raise OSError(errno.ENOSPC, "No space left on device")
    real_append = journal.Journal.append
    def append(self, entry):
        size = len(json.dumps(entry, ensure_ascii=False)) + 1
        if disk["used"] + size > capacity:
            full()
        disk["used"] += size
        real_append(self, entry)
    journal.Journal.append = append
    if hasattr(journal.Journal, "reserve"):
        real_reserve, real_unreserve = journal.Journal.reserve, journal.Journal.unreserve
        def reserve(self, size):
            if disk["used"] + size > capacity:
                full()
            disk["used"] += size
            real_reserve(self, size)
        def unreserve(self, size):
            disk["used"] -= size
            real_unreserve(self, size)
        journal.Journal.reserve, journal.Journal.unreserve = reserve, unreserve
    def no_model_file(*args, **kwargs):
        full()
    seedstore.write_model_file = no_model_file
model = build_model(f"anthropic:full@{url}")
def one(i):
    try:
        model.complete(Request(system="s", messages=(Message("user", f"call {i}"),), max_tokens=16))
        return f"answered {i}"
    except ModelCallError as err:
        return f"refused {i}: {err}"
try:
    with recording(root, "seed", "new_episodes"):
        with ThreadPoolExecutor(8) as pool:
            for line in pool.map(one, range(calls)):
                print(line, flush=True)
except Exception as err:
    print(f"closing failed: {type(err).__name__}: {err}", flush=True)
"""


def _record(root: Path, url: str, capacity: int) -> str:
    done = subprocess.run([sys.executable, "-c", RECORDER, str(root), url, str(CALLS), str(capacity)], cwd=ROOT,
                          capture_output=True, text=True, timeout=180)
    assert "Traceback" not in done.stdout + done.stderr, done.stdout + done.stderr
    return done.stdout


def _record_here(root: Path, url: str, capacity: int) -> str:
    """RECORDER run in this process (what it replaces in the journal and the store put back after it, and the
    SDK clients closed, as its process's exit would)."""
    from pytest_skilltransfer.cassettes import journal, seedstore
    from pytest_skilltransfer.models import sdk_common

    saved = [(journal.Journal, name, vars(journal.Journal)[name]) for name in ("append", "reserve", "unreserve")
             if name in vars(journal.Journal)] + [(seedstore, "write_model_file", seedstore.write_model_file)]
    out, argv = io.StringIO(), sys.argv
    try:
        sys.argv = ["-c", str(root), url, str(CALLS), str(capacity)]
        with contextlib.redirect_stdout(out):
            exec(compile(RECORDER, "<recorder>", "exec"), {"__name__": "__main__"})
    finally:
        sys.argv = argv
        for owner, name, value in saved:
            setattr(owner, name, value)
        sdk_common.close_clients()
    return out.getvalue()


def test_a_full_disk_never_makes_the_next_run_pay_again(tmp_path: Path) -> None:
    """The recorder on the full disk runs in this process; the next run after space is freed is a process of its
    own, which knows only what the first left on disk."""
    with BatchProvider() as fake:
        out = _record_here(tmp_path, fake.anthropic_url, capacity=60_000)  # room for a few answers only
        first = len(fake.received)
        answered = out.count("answered")
        assert 0 < answered < CALLS and answered == first, out  # every request sent was answered and kept
        assert "received but not written" not in out, out
        assert "closing failed: CassetteSaveError" in out and "Nothing is lost" in out, out
        refused = [line for line in out.splitlines() if line.startswith("refused")]
        assert refused and all("recording stopped" in line and "was not)" in line for line in refused), refused

        _record(tmp_path, fake.anthropic_url, capacity=-1)  # space freed: the same calls again
        sent = [r["body"]["messages"][0]["content"] for r in fake.received]
    print(f"full disk: {first} sent and kept, {CALLS - first} refused unsent; after freeing space "
          f"{len(sent) - first} sent, {len(sent) - len(set(map(str, sent)))} twice")
    assert len(sent) == CALLS and len(set(map(str, sent))) == CALLS, "an answer paid for was paid again"
    stored = yaml.safe_load((tmp_path / "seed" / "full.yaml").read_text())["interactions"]
    assert len(stored) == CALLS
    assert sorted(p.name for p in (tmp_path / "seed").iterdir()) == [".lock", "full.yaml", "full.yaml.index"]


def test_a_disk_error_at_save_is_a_named_message_not_a_traceback(pytester: pytest.Pytester) -> None:
    with BatchProvider() as fake:
        project(pytester, ini="skilltransfer_pair = small:large\nskilltransfer_nights = 1\n", seeds=("alpha",))
        pytester.makepyprojecttoml(f'''
            [tool.skilltransfer.models]
            small = "anthropic:fake-small@{fake.anthropic_url}"
            large = "anthropic:fake-large@{fake.anthropic_url}"
        ''')
        pytester.makeconftest(pytester.path.joinpath("conftest.py").read_text() + '''
import errno
from pytest_skilltransfer.cassettes import seedstore

def _full(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")

seedstore.write_model_file = _full
''')
        result = pytester.runpytest_subprocess("--record-mode=new_episodes", "--snapshot-update",
                                               "--limit-replay=2", "--limit-holdout=2")
        sent = len(fake.received)
    out = result.stdout.str() + result.stderr.str()
    result.assert_outcomes(passed=1, errors=1)
    assert "Traceback" not in out and "OSError: [Errno 28]" not in out and "seedstore.py:" not in out, out
    assert "its model files could not be written (No space left on device)" in out and "Nothing is lost" in out
    pytester.makeconftest(pytester.path.joinpath("conftest.py").read_text().split("import errno")[0])
    with BatchProvider() as fake:  # the journal is folded in: a replay needs nothing sent
        pytester.runpytest_subprocess("--record-mode=none", "--limit-replay=2",
                                      "--limit-holdout=2").assert_outcomes(passed=1)
    assert sent > 0


def test_a_full_disk_in_the_batch_lane_is_named_and_sends_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    from pytest_skilltransfer.cassettes import journal, recording
    from pytest_skilltransfer.models.base import Message, ModelCallError, Request
    from pytest_skilltransfer.models.batch import BatchSettings, configure_batch
    from pytest_skilltransfer.models.providers import build_model

    def full(self: journal.Journal, size: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(journal.Journal, "reserve", full)
    configure_batch(BatchSettings(gather_s=0.05, poll_s=0.02), tmp_path)
    try:
        with BatchProvider() as fake:
            model = build_model(f"anthropic:full@{fake.anthropic_url}")
            with recording(tmp_path, "seed", "new_episodes"):
                with pytest.raises(ModelCallError) as refused:
                    model.complete(Request(system="s", messages=(Message("user", "call 0"),), max_tokens=16))
            assert not fake.created and not fake.received
    finally:
        configure_batch(None)
    message = str(refused.value)
    assert "recording stopped" in message and "No space left on device" in message, message
    assert "could not connect" not in message
