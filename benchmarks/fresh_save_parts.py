"""Where a fresh cassette save's CPU goes: each part of `seedstore.write_model_file` on a missing file,
timed alone (a benchmark, not a test), and PyYAML's rendering of the same text beside them (what the
save used before `yaml_items`; the text is checked to be the same).

    .venv/bin/python benchmarks/fresh_save_parts.py          # 300 interactions
    .venv/bin/python benchmarks/fresh_save_parts.py 3000

The interactions are `benchmarks/cassette_save.py`'s (the committed Messages recordings, made
distinct), noted as sent by this process's SDK as recording notes them. Each part is the code the
save runs, called on its own with the same inputs; CPU time (`time.process_time`), best of 5, per
interaction. The parts do not add up exactly to the whole: the whole also writes, fsyncs and renames.
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cassette_save import ROOT, _as_recorded  # noqa: E402

from pytest_skilltransfer.cassettes import match, store  # noqa: E402
from pytest_skilltransfer.cassettes.index import render as render_index  # noqa: E402
from pytest_skilltransfer.guards.redaction import find_secrets  # noqa: E402


def _entries(count: int) -> list[dict[str, Any]]:
    realistic = []
    for path in sorted((ROOT / "cassettes").rglob("*.yaml")):
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader)
        realistic += [e for e in data["interactions"] if e["request"]["uri"].split("?")[0].endswith("/messages")]
    entries = []
    for i in range(count):
        grown = json.loads(json.dumps(realistic[i % len(realistic)]))
        body = grown["request"]["body"]["json"]
        body["model"] = "bench-save"
        first = body["messages"][0]
        if isinstance(first["content"], str):
            first["content"] = f"{first['content']} (#{i})"
        else:
            first["content"][0]["text"] = f"{first['content'][0]['text']} (#{i})"
        entries.append(grown)
    return entries


def _best(function: Callable[[], Any], count: int, rounds: int = 5) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(rounds):
        start = time.process_time()
        result = function()
        best = min(best, time.process_time() - start)
    return best * 1000 / count, result


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    entries = _entries(count)
    store.sdk_stamp(entries[:1])  # the SDK imported and a client made, as in a recording process
    _as_recorded(entries)
    work = Path(tempfile.mkdtemp(prefix="fresh-save-"))
    rows = []
    whole, _ = _best(lambda: store.write_model_file(work / f"{time.monotonic_ns()}.yaml", entries), count)
    rows.append(("the whole save (store.write_model_file)", whole))
    took, ordered = _best(lambda: sorted(entries, key=store._sort_key), count)
    took_render, (text, spans) = _best(lambda: store._file_text(ordered), count)
    rows.append(("  writing the YAML (yaml_items)", took_render))
    rows.append(("  secret scan of the file's text", _best(lambda: find_secrets(text), count)[0]))
    took_slots, slots = _best(lambda: store._slots_of_rendered(text, ordered, spans), count)
    rows.append(("  the index's rows (digests, answers, seals)", took_slots))
    digests = [slot.key[2] for slot in slots]
    took_stamp, stamp = _best(lambda: store.sdk_stamp(ordered, digests), count)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    index_text = render_index(work / "x.yaml", digest, slots, stamp, True)
    rows.append(("  secret scan of the index", _best(lambda: find_secrets(index_text), count)[0]))
    rows.append(("  SDK stamp", took_stamp))
    rows.append(("  the sort", took))
    data = {"version": store.FORMAT_VERSION, "interactions": ordered, "count": len(ordered)}
    took_pyyaml, pyyaml_text = _best(lambda: match.readable_yaml(data), count)
    assert pyyaml_text == text
    rows.append(("(PyYAML's rendering of the same text, not run)", took_pyyaml))
    print(f"fresh save of {count} interactions, CPU per interaction (best of 5)")
    for label, ms in rows:
        print(f"{label:48s} {ms:.3f} ms")


if __name__ == "__main__":
    main()
