"""A damaged cassette is reported where it is damaged: the file's own line, the interaction number, and what to do."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from faulty_provider import FaultyProvider

from pytest_skilltransfer.cassettes import recording
from pytest_skilltransfer.cassettes.store import CassetteFileError
from pytest_skilltransfer.models.base import Message, Request
from pytest_skilltransfer.models.providers import build_model

CALLS = 40


@pytest.fixture(scope="module")
def recorded_text(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("recorded")
    with FaultyProvider() as fake:
        with recording(root, "seed", "once"):
            model = build_model(f"anthropic:errors@{fake.anthropic_url}")
            for i in range(CALLS):
                model.complete(Request(system="s", messages=(Message("user", f"call {i}"),), max_tokens=16))
    return (root / "seed" / "errors.yaml").read_text()


def _interaction_lines(text: str) -> list[int]:
    return [n for n, line in enumerate(text.splitlines(), 1) if line.startswith("- ")]


def _open(path: Path, *, index: bool) -> str:
    if not index:
        Path(f"{path}.index").unlink(missing_ok=True)
    with pytest.raises(CassetteFileError) as caught:
        with recording(path.parents[1], "seed", "none"):
            build_model("anthropic:errors@http://127.0.0.1:9/").complete(
                Request(system="s", messages=(Message("user", "call 33"),), max_tokens=16))
    return str(caught.value)


@pytest.mark.parametrize("index", [False, True], ids=["read-whole", "indexed"])
def test_a_yaml_syntax_error_deep_in_a_file_names_its_file_line_and_interaction(
        tmp_path: Path, recorded_text: str, index: bool) -> None:
    path = tmp_path / "seed" / "errors.yaml"
    path.parent.mkdir()
    lines = recorded_text.splitlines(keepends=True)
    starts = _interaction_lines(recorded_text)
    broken = starts[33] + 3  # a line inside interaction 34
    lines[broken - 1] = '    method: "POST\n'  # an unterminated quoted string
    path.write_text("".join(lines))
    if index:
        Path(f"{path}.index").write_text("{}")
    message = _open(path, index=index)
    assert str(path) in message and "interaction 34" in message
    found = re.search(r"YAML error at line (\d+)", message)
    assert found, message
    assert broken <= int(found.group(1)) <= starts[34], (broken, message)
    assert "--record-mode=all" in message


def test_merge_conflict_markers_are_named_as_such(tmp_path: Path, recorded_text: str) -> None:
    path = tmp_path / "seed" / "errors.yaml"
    path.parent.mkdir()
    lines = recorded_text.splitlines(keepends=True)
    at = _interaction_lines(recorded_text)[20] - 1
    conflicted = lines[:at] + ["<<<<<<< HEAD\n"] + lines[at:at + 3] + ["=======\n"] + lines[at:at + 3] + \
        [">>>>>>> rerecord\n"] + lines[at + 3:]
    path.write_text("".join(conflicted))
    message = _open(path, index=False)
    assert f"{path} holds merge-conflict markers" in message
    assert f"line {at + 1} (<<<<<<< HEAD)" in message
    assert "resolve the conflict" in message
