"""The direct YAML writer (`cassettes.yaml_items`) gives PyYAML's text byte for byte.

`store.file_text` writes a model file's interactions directly; `match.readable_yaml` is PyYAML's
(libyaml's) text for the same data, what every save wrote before. They are compared on every
committed cassette and on generated strings (YAML's special words, indicators, quotes, breaks, tabs,
control and astral characters, a BOM, long lines) in generated nesting.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_skilltransfer.cassettes import store, yaml_items
from pytest_skilltransfer.cassettes.match import readable_yaml

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = sorted((ROOT / "cassettes").rglob("*.yaml"))


def _pyyaml(entries: list[Any]) -> str:
    return readable_yaml({"version": store.FORMAT_VERSION, "interactions": entries, "count": len(entries)})


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: str(p.relative_to(ROOT)))
def test_committed_cassettes_are_written_directly_byte_for_byte(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    entries = yaml.load(text, Loader=store._Loader)["interactions"]
    assert yaml_items.render_items(entries) is not None  # written directly, not left to PyYAML
    assert store.file_text(entries) == _pyyaml(entries) == text


_WORDS = ["yes", "no", "Yes", "NO", "on", "off", "true", "False", "null", "Null", "~", "1e3", "0x1f", "0o17", "1_000",
          "1.5", "-1", "+2", ".inf", "-.Inf", ".NaN", "2026-10-21", "2026-10-21 10:00:00", "12:30", "<<", "=", "---",
          "...", "-", "?", ":", "#", "!", "&a", "*a", "|", ">", "%", "@", "`", "[]", "{}", ""]
_PIECES = [": ", " #", "#", ":", "'", '"', "''", "\n", "\n\n", "\t", " ", "  ", "\ufeff", "\r", "\r\n", "\x85",
           "\u2028", "\u2029", "\x00", "\x07", "\x7f", "\x9f", "\xa0", "é", "中文", "\U0001f389", "\ue000", "\ufffd",
           "-", "- ", "? ", "x" * 40, "word " * 25, "a", "Z9", ",", "[", "{"]
_CHARACTERS = st.characters(exclude_categories=("Cs",))  # PyYAML cannot encode lone surrogates either

strings = st.one_of(
    st.text(_CHARACTERS, max_size=40),
    st.sampled_from(_WORDS),
    st.lists(st.sampled_from(_PIECES + _WORDS), max_size=14).map("".join),
    st.lists(st.sampled_from(["word", " ", "  ", "'", "x" * 30, "y" * 97, ": ", "\n", "é"]), max_size=50).map("".join),
)
keys = st.one_of(st.sampled_from(["role", "content", "max_tokens", "content-type", "a.b", "yes", "null", "1", ""]),
                 strings)
scalars = st.one_of(strings, st.integers(), st.booleans(), st.none(), st.floats(allow_nan=False))
shapes = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                        st.dictionaries(keys, inner, max_size=4)), max_leaves=24)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(shapes, max_size=4))
def test_generated_documents_match_pyyaml_byte_for_byte(entries: list[Any]) -> None:
    assert store.file_text(entries) == _pyyaml(entries)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.fixed_dictionaries({"text": strings, "more": st.lists(strings, max_size=3)}), min_size=1, max_size=4))
def test_generated_strings_in_the_interaction_shape_match_pyyaml(entries: list[Any]) -> None:
    nested = [{"request": {"body": {"json": {"messages": [{"role": "user", "content": entry["text"]}]}}},
               "response": {"body": {"json": {"content": [{"type": "text", "text": t} for t in entry["more"]]}}}}
              for entry in entries]
    assert store.file_text(nested) == _pyyaml(nested)


@pytest.mark.parametrize("value", ["y\n\n", "\n", "a\n", "a", "  a\nb", "\na", "a \nb", "a\tb\n\n", "é\n\n"])
@pytest.mark.parametrize("later", [None, "z\n", "z", 1.5, "a\tb\n"])
def test_the_document_ends_open_after_a_literal_block_keeping_its_breaks(value: str, later: Any) -> None:
    """libyaml ends the document with `...` when its last literal block keeps its final breaks (`|+`)."""
    entries: list[Any] = [{"a": value}] + ([{"b": later}] if later is not None else [])
    assert store.file_text(entries) == _pyyaml(entries)


def test_an_object_met_twice_goes_through_pyyaml_whole() -> None:
    shared = {"accept": ["application/json"]}
    entries = [{"headers": shared}, {"headers": shared}]
    assert yaml_items.render_items(entries) is None
    assert "&id001" in store.file_text(entries)
    assert store.file_text(entries) == _pyyaml(entries)
