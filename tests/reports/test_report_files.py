"""JSON reports written to a `.gz` path are gzip-compressed, deterministic, and read back by `merge` and
`html` like plain ones; a damaged file is a clear error."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from pytest_skilltransfer.commands.html import main as html
from pytest_skilltransfer.guards.report_files import read_text
from pytest_skilltransfer.plugin.reporting import write

REPORT = {"experiment": "skilltransfer/transfer", "results": [], "errors": [], "answer": "caf\u00e9 " * 400}


def test_a_gz_path_is_written_compressed_and_read_back(tmp_path: Path) -> None:
    text = json.dumps(REPORT, indent=2) + "\n"
    packed, plain = tmp_path / "r.json.gz", tmp_path / "r.json"
    write(packed, text)
    write(plain, text)
    assert packed.read_bytes()[:2] == b"\x1f\x8b" and gzip.decompress(packed.read_bytes()).decode() == text
    assert packed.stat().st_size < plain.stat().st_size / 10
    assert read_text(packed) == read_text(plain) == text
    first = packed.read_bytes()
    write(packed, text)
    assert packed.read_bytes() == first  # no time or name in the header: equal reports, equal files


def test_the_html_command_reads_a_compressed_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path / "r.json.gz", json.dumps(REPORT))
    assert html([str(tmp_path / "r.json.gz"), "-o", str(tmp_path / "p.html")]) == 0
    assert "No transfer item produced a result." in (tmp_path / "p.html").read_text()


def test_a_damaged_compressed_report_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    damaged = tmp_path / "r.json.gz"
    damaged.write_bytes(gzip.compress(json.dumps(REPORT).encode(), mtime=0)[:-20])
    assert html([str(damaged), "-o", str(tmp_path / "p.html")]) == 2
    err = capsys.readouterr().err
    assert f"error: {damaged}: not a JSON report (damaged gzip data:" in err


def test_merge_reads_and_writes_compressed_reports(tmp_path: Path) -> None:
    from pytest_skilltransfer.commands.merge import main as merge

    write(tmp_path / "shard.json.gz", json.dumps(REPORT))
    assert merge([str(tmp_path / "shard.json.gz"), "--json", str(tmp_path / "merged.json.gz")]) == 0
    assert json.loads(read_text(tmp_path / "merged.json.gz"))["results"] == []
