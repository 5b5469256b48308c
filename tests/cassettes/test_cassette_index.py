"""The index beside each model file: replay opens through it, and it never changes what replay finds."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from fake_provider import FakeProvider

from pytest_skilltransfer.cassettes import CassetteMiss, recording
from pytest_skilltransfer.cassettes import index as cassette_index
from pytest_skilltransfer.cassettes import store
from pytest_skilltransfer.cassettes.reindex import run as reindex
from pytest_skilltransfer.commands import cli
from pytest_skilltransfer.models.base import Message, ModelCallError, Request
from pytest_skilltransfer.models.providers import build_model

ROOT = Path(__file__).resolve().parents[2]
CALLS = 5


def ask(i: int) -> Request:
    return Request(system="You are terse.", messages=(Message("user", f"Question {i}?"),), max_tokens=32)


@pytest.fixture
def recorded(tmp_path: Path) -> tuple[Path, list, object]:
    """A seed folder recorded against the loopback fake: (model file, replies, model)."""
    with FakeProvider() as fake:
        fake.require_key = False
        model = build_model(f"anthropic:indexed@{fake.anthropic_url}")
        with recording(tmp_path, "seed", "once"):
            replies = [model.complete(ask(i)) for i in range(CALLS)]
    return tmp_path / "seed" / "indexed.yaml", replies, model


def _count_parses(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls = [0]
    real = store._load_yaml

    def counting(path: Path, text: str, *where: object) -> object:
        calls[0] += 1
        return real(path, text, *where)

    monkeypatch.setattr(store, "_load_yaml", counting)
    return calls


def test_recording_writes_a_current_index_and_replay_opens_without_parsing(
        recorded: tuple[Path, list, object], monkeypatch: pytest.MonkeyPatch) -> None:
    path, replies, model = recorded
    index = json.loads(cassette_index.index_path(path).read_text())
    assert index["file"] == path.name and index["count"] == CALLS == len(index["rows"])
    parses = _count_parses(monkeypatch)
    with recording(path.parents[1], "seed", "none") as rec:
        assert parses[0] == 0 and rec.interactions == CALLS  # opened through the index: nothing parsed
        assert rec.replay_only("indexed")
        assert [model.complete(ask(i)) for i in reversed(range(CALLS))] == replies[::-1]  # type: ignore[attr-defined]
        assert parses[0] == 0  # each answer is read from the index (sealed with its item), nothing parsed
        with pytest.raises(CassetteMiss, match="already_played|already replayed|played"):
            model.complete(ask(0))  # type: ignore[attr-defined]


def test_a_hand_edited_file_is_read_in_full_and_the_edit_is_what_replays(recorded: tuple[Path, list, object]) -> None:
    path, replies, model = recorded
    path.write_text(path.read_text().replace(replies[2].text, "an edited answer"))
    with recording(path.parents[1], "seed", "none"):
        assert model.complete(ask(2)).text == "an edited answer"  # type: ignore[attr-defined]
    assert reindex([path.parents[1]], check=True) == 1  # the stale index is reported
    with recording(path.parents[1], "seed", "once"):  # a recording open refreshes it
        pass
    assert reindex([path.parents[1]], check=True) == 0


def test_replay_only_opening_writes_no_index(recorded: tuple[Path, list, object]) -> None:
    path, replies, model = recorded
    cassette_index.index_path(path).unlink()
    with recording(path.parents[1], "seed", "none"):
        assert [model.complete(ask(i)) for i in range(CALLS)] == replies  # type: ignore[attr-defined]
    assert not cassette_index.index_path(path).exists()


@pytest.mark.parametrize("garbage", ["not json", "{}", '{"format": 1}', "offsets"])
def test_a_broken_index_is_ignored(recorded: tuple[Path, list, object], garbage: str) -> None:
    path, replies, model = recorded
    target = cassette_index.index_path(path)
    if garbage == "offsets":  # the right digest, rows pointing past the end of the file
        data = json.loads(target.read_text())
        data["rows"][0][0] = path.stat().st_size
        garbage = json.dumps(data)
    target.write_text(garbage)
    with recording(path.parents[1], "seed", "none"):
        assert [model.complete(ask(i)) for i in range(CALLS)] == replies  # type: ignore[attr-defined]


def test_a_damaged_file_with_an_old_index_is_still_a_clear_error(recorded: tuple[Path, list, object]) -> None:
    path, _, _ = recorded
    text = path.read_text()
    path.write_text(text[: len(text) // 2])
    with pytest.raises(store.CassetteFileError, match=rf"{path.name}.*truncated|{path.name}.*cannot be read"):
        with recording(path.parents[1], "seed", "none"):
            pass


def test_a_rejected_interaction_in_the_index_is_a_bad_recording_miss(recorded: tuple[Path, list, object]) -> None:
    path, _, model = recorded
    entries = yaml.safe_load(path.read_text())["interactions"]
    entries[1]["response"]["status"] = {"code": 529, "message": "Overloaded"}
    entries[1]["response"]["body"] = {"json": {"type": "error", "error": {"type": "overloaded_error", "message": "x"}}}
    store.write_atomically(path, store.render(entries))
    store.write_index(path, path.read_text())
    rows = json.loads(cassette_index.index_path(path).read_text())["rows"]
    assert [row[7] is not None for row in rows].count(True) == 1
    with recording(path.parents[1], "seed", "none"):
        with pytest.raises(CassetteMiss, match=r"indexed.yaml, interaction \d, holds HTTP 529"):
            model.complete(ask(1))  # type: ignore[attr-defined]


def test_a_file_changed_in_place_during_replay_is_an_error_naming_it(recorded: tuple[Path, list, object]) -> None:
    path, _, model = recorded
    with recording(path.parents[1], "seed", "none"):
        with open(path, "r+b") as handle:  # same inode, other bytes: the offsets no longer hold
            handle.write(b"#" * path.stat().st_size)
        with pytest.raises(ModelCallError, match=rf"{path.name}, interaction \d+ \(line \d+\), changed while"):
            model.complete(ask(0))  # type: ignore[attr-defined]


def test_an_index_whose_file_is_gone_is_removed_by_a_recording_open(recorded: tuple[Path, list, object]) -> None:
    path, _, _ = recorded
    orphan = path.with_name("gone.yaml" + cassette_index.SUFFIX)
    orphan.write_text(cassette_index.index_path(path).read_text())
    assert reindex([path.parents[1]], check=True) == 1
    with recording(path.parents[1], "seed", "new_episodes"):
        pass
    assert not orphan.exists() and cassette_index.index_path(path).exists()


def test_the_index_command_writes_checks_and_names_damaged_files(recorded: tuple[Path, list, object],
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """`python -m pytest_skilltransfer index` once as a process (its exit status and output); the later calls
    through the same entry (`cli.main`) in this process."""
    path, _, _ = recorded
    cassette_index.index_path(path).unlink()
    check = subprocess.run([sys.executable, "-m", "pytest_skilltransfer", "index", "--check", str(path.parents[1])],
                           capture_output=True, text=True)
    assert check.returncode == 1 and f"stale: {path}" in check.stdout
    assert cli.main(["index", str(path.parents[1])]) == 0 and "1 stale (1 written)" in capsys.readouterr().out
    assert cli.main(["index", "--check", str(path.parents[1])]) == 0
    path.write_text(path.read_text().replace("count: ", "count: 9"))
    capsys.readouterr()
    assert cli.main(["index", str(path.parents[1])]) == 1
    damaged = capsys.readouterr()
    assert str(path) in damaged.err and "1 damaged" in damaged.out


def test_the_committed_cassettes_have_current_indexes() -> None:
    assert reindex([ROOT / "cassettes"], check=True) == 0, "run: python -m pytest_skilltransfer index cassettes"


def test_an_index_with_swapped_rows_is_named_caught_by_check_and_repaired(
        recorded: tuple[Path, list, object], capsys: pytest.CaptureFixture[str]) -> None:
    path, replies, model = recorded
    index_file = cassette_index.index_path(path)
    data = json.loads(index_file.read_text())
    first, second = data["rows"][0], data["rows"][1]
    first[:3], second[:3] = second[:3], first[:3]  # the right digest; each key points at the other's bytes
    index_file.write_text(json.dumps(data))
    with recording(path.parents[1], "seed", "none"):
        with pytest.raises(ModelCallError, match=r"index indexed.yaml.index does not match the file.*"
                                                 r"python -m pytest_skilltransfer index"):
            model.complete(ask(0))  # type: ignore[attr-defined]
    capsys.readouterr()
    assert reindex([path.parents[1]], check=True) == 1
    assert f"wrong: {path}" in capsys.readouterr().out
    assert reindex([path.parents[1]], check=False) == 0
    assert "1 with wrong rows (1 written)" in capsys.readouterr().out
    assert reindex([path.parents[1]], check=True) == 0
    with recording(path.parents[1], "seed", "none"):
        assert [model.complete(ask(i)) for i in range(CALLS)] == replies  # type: ignore[attr-defined]


def test_check_reports_an_unfolded_journal_and_index_folds_it(
        recorded: tuple[Path, list, object], capsys: pytest.CaptureFixture[str]) -> None:
    path, _, model = recorded
    from pytest_skilltransfer.cassettes.journal import journals

    entries = yaml.safe_load(path.read_text())["interactions"]
    journal = path.parent / ".journal-99999-deadbeef.jsonl"  # what a recorder killed with -9 leaves
    extra = json.loads(json.dumps(entries[0]).replace("Question 0?", "Question 99?"))
    journal.write_text(json.dumps(extra) + "\n")
    capsys.readouterr()
    assert reindex([path.parents[1]], check=True) == 1
    out = capsys.readouterr().out
    assert f"unfolded: {journal} (1 interaction(s), left by a killed recorder" in out and "1 unfolded journal(s)" in out
    assert reindex([path.parents[1]], check=False) == 0
    assert "1 journal(s) folded" in capsys.readouterr().out
    assert journals(path.parent) == [] and "Question 99?" in path.read_text()
    assert reindex([path.parents[1]], check=True) == 0


def test_the_index_written_from_the_rendered_entries_is_the_one_a_scan_finds(recorded: tuple[Path, list, object],
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Saving indexes a file from the entries it rendered (no parse); a scan of the file agrees, rejected rows too."""
    path, _, _ = recorded
    entries = yaml.safe_load(path.read_text())["interactions"]
    entries[2]["response"]["status"] = {"code": 529, "message": "Overloaded"}
    entries[3]["request"]["body"]["json"]["messages"][0]["content"] = "ünïcode\nlines: 'quoted' \"x\" # not a comment"
    assert store.write_model_file(path, entries, tolerate_damage=True)
    written = cassette_index.index_path(path).read_text()
    ordered, text = store._render_sorted(yaml.safe_load(path.read_text())["interactions"])
    assert text == path.read_text()
    parses = _count_parses(monkeypatch)
    store.write_index(path, text, ordered)
    assert parses[0] == 0 and cassette_index.index_path(path).read_text() == written
    store.write_index(path, path.read_text())  # the scanning way
    assert cassette_index.index_path(path).read_text() == written
