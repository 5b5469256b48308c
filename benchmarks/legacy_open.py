"""The cassette open as it was before the streaming loader, kept as the benchmark's reference.

It reads a seed folder the old way: each model file parsed as one YAML tree, the line of every
interaction counted from the start of the file, then every interaction handed to vcrpy's
`Cassette.append` (its request and response filters, a deep copy of each response) and indexed by
its request's canonical digest. Only the benchmark uses it.
"""

from __future__ import annotations

import gc
import re
import time
import tracemalloc
from pathlib import Path

import yaml

from pytest_skilltransfer.cassettes import store
from pytest_skilltransfer.cassettes.match import model_of, request_key
from pytest_skilltransfer.cassettes.scrub import SECRET_HEADERS, filter_request, filter_response
from pytest_skilltransfer.models.validity import response_problem

_ITEM_LINE = re.compile(r"^- ", re.M)


def _read(path: Path) -> list[dict]:
    text = path.read_text(encoding="utf-8")
    data = yaml.load(text, Loader=yaml.CSafeLoader)
    _lines = [text.count("\n", 0, m.start()) + 1 for m in _ITEM_LINE.finditer(text)]
    entries = []
    for entry in data["interactions"]:
        assert store.structure_problem(entry) is None
        resp = entry["response"]
        if response_problem(store.request_path(entry["request"]["uri"]), resp["status"]["code"],
                            store.decode_body(resp["body"])) is None:
            entries.append(entry)
    return entries


def _open(folder: Path) -> object:
    import vcr
    from vcr.cassette import Cassette

    config = vcr.VCR(record_mode="none", decode_compressed_response=True, filter_headers=sorted(SECRET_HEADERS),
                     before_record_request=filter_request, before_record_response=filter_response)
    merged = config.get_merged_config(path=str(folder / "missing"), allow_playback_repeats=False)
    for option in ("path_transformer", "func_path_generator", "record_on_exception", "persister", "serializer"):
        merged.pop(option, None)
    cassette = Cassette(**merged)
    index: dict = {}
    for path in store.model_files(folder):
        for entry in _read(path):
            cassette.append(*store.from_plain(entry))
            index.setdefault(request_key(cassette.data[-1][0]), []).append(len(cassette.data) - 1)
    cassette.loaded_models = frozenset(model_of(r) for r, _ in cassette.data)
    cassette.index = index
    return cassette


def open_before(seed_folder: Path) -> tuple[float, int, int]:
    """(seconds, bytes held, peak bytes) per open of a seed folder the old way: best of 3 for time."""
    best = float("inf")
    for _ in range(3):
        gc.collect()
        start = time.perf_counter()
        _open(seed_folder)
        best = min(best, time.perf_counter() - start)
    gc.collect()
    tracemalloc.start()
    cassette = _open(seed_folder)
    held, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    size = len(cassette.data)  # type: ignore[attr-defined]
    return best, held // size, peak // size
