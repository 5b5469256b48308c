"""Saving a cassette: one call added to a file of 300 and 3,000 interactions, and a fresh save per
interaction, for the saving code before incremental saves and now, side by side in one run.

    .venv/bin/python benchmarks/cassette_save.py                # before = BEFORE (git), after = this tree
    .venv/bin/python benchmarks/cassette_save.py --sizes 300    # a smaller run

"Before" is the package as it was at commit BEFORE (extracted with `git archive` into a temporary
folder); "after" is this working tree. Each runs in a process of its own with the same interactions:
the committed recordings of the local model (real bodies and answers, the Messages wire), each made
distinct by its first user turn. Figures are CPU time of the saving process (`time.process_time`):
the fresh save writes N interactions to a missing file, the append adds one interaction to a file
of N under `new_episodes` (the file and its index as recording leaves them). Both end with the same
files: the benchmark compares the bytes each wrote.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BEFORE = "cd8a720"  # the last commit whose saves rewrite the whole file
APPENDS = 3  # one-call appends timed per size (best is reported)


def _child(sizes: list[int], work: Path) -> None:
    """Run in a process importing the package under test: print the figures as JSON."""
    import yaml

    from pytest_skilltransfer.cassettes import seedstore, store

    realistic = []
    for path in sorted((ROOT / "cassettes").rglob("*.yaml")):
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader)
        realistic += [e for e in data["interactions"] if e["request"]["uri"].split("?")[0].endswith("/messages")]

    def entry(i: int) -> dict:
        grown = json.loads(json.dumps(realistic[i % len(realistic)]))
        body = grown["request"]["body"]["json"]
        body["model"] = "bench-save"
        first = body["messages"][0]
        text = first["content"] if isinstance(first["content"], str) else first["content"][0]["text"]
        marked = f"{text} (#{i})"
        if isinstance(first["content"], str):
            first["content"] = marked
        else:
            first["content"][0]["text"] = marked
        return grown

    store.sdk_stamp([entry(-1)])  # the SDK imported and a client made, as in a recording process
    figures: dict[str, object] = {}
    for size in sizes:
        folder = work / f"n{size}"
        folder.mkdir(parents=True)
        path = folder / "bench-save.yaml"
        entries = [entry(i) for i in range(size + APPENDS)]
        start = time.process_time()
        seedstore.write_model_file(folder / "elsewhere.yaml", entries[:size])
        figures[f"fresh elsewhere {size}"] = (time.process_time() - start) * 1000 / size
        _as_recorded(entries)
        entries, later = entries[:size], entries[size:]
        start = time.process_time()
        seedstore.write_model_file(path, entries)
        figures[f"fresh {size}"] = (time.process_time() - start) * 1000 / size
        best = float("inf")
        for n in range(APPENDS):
            added = [later[n]]
            start = time.process_time()
            seedstore.write_model_file(path, added)
            best = min(best, time.process_time() - start)
        figures[f"append {size}"] = best * 1000
        figures[f"digest {size}"] = hashlib.sha256(path.read_bytes()).hexdigest()
    print(json.dumps(figures))


def _as_recorded(entries: list[dict]) -> None:
    """Tell the package (where it listens) that its SDK just sent these bodies, as recording them does."""
    try:
        from pytest_skilltransfer.models import fidelity, sent_bodies
        note = sent_bodies.note_sent
    except (ImportError, AttributeError):  # the code before: nothing to tell
        return
    from types import SimpleNamespace

    from pytest_skilltransfer.models.sdk_common import REPLAY_KEY
    from pytest_skilltransfer.models.wire import wire_named

    wire = wire_named("anthropic")
    clients: dict[str, object] = {}
    for entry in entries:
        uri, body = entry["request"]["uri"], entry["request"]["body"]["json"]
        base = uri[: -len(wire.call_path("", ""))]
        if base not in clients:
            clients[base] = fidelity._capturing_client("anthropic", base, REPLAY_KEY)
        client = clients[base]
        note("anthropic", body, SimpleNamespace(request=fidelity._build(client, "anthropic", body["model"], body)))


def _run(package_root: Path, sizes: list[int], work: Path) -> dict:
    code = (f"import sys; sys.path.insert(0, {str(package_root)!r}); sys.path.insert(1, {str(ROOT / 'benchmarks')!r}); "
            f"import cassette_save; cassette_save._child({sizes!r}, __import__('pathlib').Path({str(work)!r}))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, cwd=work).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[300, 3000])
    parser.add_argument("--before", default=BEFORE, help="the commit to compare with (default: %(default)s)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        old = Path(tmp) / "before"
        old.mkdir()
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.before, "pytest_skilltransfer"],
                                 check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(old)], input=archive, check=True)
        (Path(tmp) / "w-before").mkdir()
        (Path(tmp) / "w-after").mkdir()
        before = _run(old, args.sizes, Path(tmp) / "w-before")
        after = _run(ROOT, args.sizes, Path(tmp) / "w-after")
    print(f"{'cassette save (CPU)':<44} {'before':>12} {'after':>12} {'ratio':>8}")
    for size in args.sizes:
        for what, label, unit in (("append", f"one call added to {size:,} interactions", "ms"),
                                  ("fresh", f"fresh save of {size:,}, per interaction", "ms"),
                                  ("fresh elsewhere", "  the same, not recorded by this process", "ms")):
            b, a = before[f"{what} {size}"], after[f"{what} {size}"]
            print(f"{label:<44} {b:>9.2f} {unit} {a:>9.2f} {unit} {b / a:>7.1f}x")
        same = before[f"digest {size}"] == after[f"digest {size}"]
        print(f"{'  files byte-identical after the appends':<44} {'yes' if same else 'NO':>12}")


if __name__ == "__main__":
    main()
