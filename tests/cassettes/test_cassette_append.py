"""Saving new interactions into a model file in place gives the bytes a whole rewrite gives."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_skilltransfer.cassettes import append, seedstore, store
from pytest_skilltransfer.cassettes import index as cassette_index
from pytest_skilltransfer.cassettes.stored import open_model_file

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def recorded() -> list[dict[str, Any]]:
    """Real interactions: the committed recordings of one model file (Messages wire, SDK-built bodies)."""
    path = ROOT / "cassettes" / "release-advisor" / "smollm2-135m-anthropic.yaml"
    return yaml.safe_load(path.read_text())["interactions"]


def _variant(entries: list[dict[str, Any]], i: int, mark: str) -> dict[str, Any]:
    entry = json.loads(json.dumps(entries[i % len(entries)]))
    first = entry["request"]["body"]["json"]["messages"][0]
    if isinstance(first["content"], str):
        first["content"] = f"{first['content']} ({mark})"
    else:
        first["content"][0]["text"] = f"{first['content'][0]['text']} ({mark})"
    return entry


def _whole(path: Path, entries: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch) -> None:
    with monkeypatch.context() as patched:
        patched.setattr(seedstore, "append_entries", lambda *_: None)
        seedstore.write_model_file(path, entries)


def _in_place_only(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_: object) -> None:
        raise AssertionError("the file was read whole")

    monkeypatch.setattr(store, "_raw_entries", refuse)


def test_added_interactions_give_the_bytes_of_a_whole_rewrite(tmp_path: Path, recorded: list[dict[str, Any]],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """New interactions land before, between and after the old ones (a rejected one too); the file and its
    index are byte-identical to a rewrite, and the file reads back with every interaction."""
    old = recorded[:20]
    added = [_variant(recorded, i, f"new {i}") for i in (0, 7, 7, 19, 30)]
    added[2]["response"]["status"] = {"code": 529, "message": "Overloaded"}  # kept and indexed as rejected
    added.append(json.loads(json.dumps(recorded[40])))  # a request the file does not hold yet
    incremental, whole = tmp_path / "a" / "m.yaml", tmp_path / "b" / "m.yaml"
    for path in (incremental, whole):
        _whole(path, old, monkeypatch)
    assert incremental.read_bytes() == whole.read_bytes()
    assert json.loads(cassette_index.index_path(incremental).read_text())["sorted"] is True

    _whole(whole, added, monkeypatch)
    with monkeypatch.context() as patched:
        _in_place_only(patched)
        assert seedstore.write_model_file(incremental, added)
    assert incremental.read_bytes() == whole.read_bytes()
    assert cassette_index.index_path(incremental).read_bytes() == cassette_index.index_path(whole).read_bytes()
    contents = store.read_file(incremental)
    assert len(contents.entries) == 25 and len(contents.rejected) == 1


def test_the_appended_file_opens_through_its_index_with_every_answer(tmp_path: Path, recorded: list[dict[str, Any]],
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "seed" / "m.yaml"
    _whole(path, recorded[:10], monkeypatch)
    added = [_variant(recorded, i, "added") for i in range(3)]
    with monkeypatch.context() as patched:
        _in_place_only(patched)
        seedstore.write_model_file(path, added)
    opened = open_model_file(path, lambda entry: entry)
    try:
        assert opened.index_text is None and opened.sdk is not None  # the index is current and verified
        answers = {stored.slot.key: stored.answer() for stored in opened.stored}
        pairs = [stored.file.entry(stored.slot) for stored in opened.stored]
    finally:
        opened.file.close()
    expected = recorded[:10] + added
    assert len(pairs) == 13 and sorted(map(store.plain_key, pairs)) == sorted(map(store.plain_key, expected))
    for entry in expected:
        assert answers[store.plain_key(entry)] == (200, entry["response"]["body"]["json"])


def test_a_re_recorded_request_or_a_file_of_unknown_order_is_rewritten_whole(
        tmp_path: Path, recorded: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "m.yaml"
    _whole(path, recorded[:10], monkeypatch)
    again = json.loads(json.dumps(recorded[3]))
    again["response"]["body"]["json"]["content"][0]["text"] = "answered again"
    assert append.append_entries(path, [again]) is None  # the old interaction must go: a rewrite
    assert seedstore.write_model_file(path, [again])
    assert "answered again" in path.read_text() and len(store.read_file(path).entries) == 10

    index_file = cassette_index.index_path(path)
    unordered = json.loads(index_file.read_text())
    del unordered["sorted"]  # an index written by `index` or a replay open, which do not know the order
    index_file.write_text(cassette_index.render(path, unordered["sha256"], cassette_index.read(
        path, unordered["sha256"], path.stat().st_size).slots, unordered.get("sdk")))
    assert append.append_entries(path, [_variant(recorded, 1, "x")]) is None
    store.write_index(path, path.read_text())  # the scanning way finds the file in order
    assert json.loads(index_file.read_text())["sorted"] is True
    assert append.append_entries(path, [_variant(recorded, 1, "x")]) is True


@pytest.mark.parametrize("sample", ["", "zz-last"])
def test_an_answer_ending_in_blank_lines_gives_the_bytes_of_a_whole_rewrite(
        tmp_path: Path, recorded: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch, sample: str) -> None:
    """A literal block that keeps its final breaks (`|+`) as the file's last one ends the YAML document with
    `...`: a save adding one, first or last in the file, gives the whole rewrite's bytes."""
    old = recorded[:20]
    added = _variant(recorded, 0, "blank lines")
    added["request"]["body"]["json"]["metadata"]["user_id"] = sample
    added["response"]["body"]["json"]["content"][0]["text"] = "An answer.\n\n"
    incremental, whole = tmp_path / "a" / "m.yaml", tmp_path / "b" / "m.yaml"
    _whole(incremental, old, monkeypatch)
    _whole(whole, old + [added], monkeypatch)
    assert whole.read_text().endswith("\n...\n") == bool(sample)
    seedstore.write_model_file(incremental, [added])
    assert incremental.read_bytes() == whole.read_bytes()
    assert cassette_index.index_path(incremental).read_bytes() == cassette_index.index_path(whole).read_bytes()
    assert len(store.read_file(incremental).entries) == 21
