"""Saving a cassette: one call added to a file of 300 and 3,000 interactions, and a fresh save per
interaction, for the saving code at earlier commits and now, side by side in one run.

    .venv/bin/python benchmarks/cassette_save.py                # columns: BEFORE, RENDERED (git), this tree
    .venv/bin/python benchmarks/cassette_save.py --sizes 300    # a smaller run
    .venv/bin/python benchmarks/cassette_save.py --before HEAD  # this tree against its last commit

Each "before" column is the package as it was at that commit (extracted with `git archive` into a
temporary folder): by default BEFORE, the last whose saves rewrite the whole file, and RENDERED, the
last whose saves render the file through PyYAML; "after" is this working tree. Each runs in a
process of its own with the same interactions: the committed recordings of the local model (real
bodies and answers, the Messages wire), each made distinct by its first user turn; the processes run
one after another, ROUNDS times, and each figure is the best of its rounds. Figures are CPU time of the
saving process (`time.process_time`): the fresh save writes N interactions to a missing file (best of
FRESH_SAVES), as sent by this process's SDK (recording's case), not sent by it (its SDK builds each
request again to verify it), and with a provider key set (a recording process: the secret scan then
also looks for the key); the append adds one interaction to a file of N under `new_episodes` (the file
and its index as recording leaves them). All end with the same files: the benchmark compares the bytes
each wrote.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BEFORE = "cd8a720"  # the last commit whose saves rewrite the whole file
RENDERED = "10db66f"  # the last commit whose saves render the file through PyYAML
APPENDS = 3  # one-call appends timed per size (best is reported)
FRESH_SAVES = 3  # fresh saves timed per size and case (best is reported)
ROUNDS = 2  # each package's process runs this many times, in turn (best is reported)
FAKE_KEY = "sk-ant-api03-" + "Ab3dEf9hIjKlMnOpQrStUvWxYz0123456789abcdefghij"  # not a key: what the scan looks for


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

    def fresh(target: Path, entries: list[dict]) -> float:
        best = float("inf")
        for n in range(FRESH_SAVES):
            start = time.process_time()
            seedstore.write_model_file(target.with_name(f"{target.stem}-{n}.yaml"), entries)
            best = min(best, time.process_time() - start)
        return best * 1000 / len(entries)

    for size in sizes:
        folder = work / f"n{size}"
        folder.mkdir(parents=True)
        path = folder / "bench-save.yaml"
        entries = [entry(i) for i in range(size + APPENDS)]
        figures[f"fresh elsewhere {size}"] = fresh(folder / "elsewhere.yaml", entries[:size])
        _as_recorded(entries)
        entries, later = entries[:size], entries[size:]
        figures[f"fresh {size}"] = fresh(folder / "fresh.yaml", entries)
        os.environ["ANTHROPIC_API_KEY"] = FAKE_KEY
        figures[f"fresh keyed {size}"] = fresh(folder / "keyed.yaml", entries)
        del os.environ["ANTHROPIC_API_KEY"]
        start = time.process_time()
        seedstore.write_model_file(path, entries)
        best = float("inf")
        for n in range(APPENDS):
            added = [later[n]]
            start = time.process_time()
            seedstore.write_model_file(path, added)
            best = min(best, time.process_time() - start)
        figures[f"append {size}"] = best * 1000
        figures[f"digest {size}"] = hashlib.sha256(path.read_bytes()).hexdigest()
        figures[f"fresh digest {size}"] = hashlib.sha256((folder / "fresh-0.yaml").read_bytes()).hexdigest()
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
    parser.add_argument("--before", nargs="+", default=[BEFORE, RENDERED],
                        help="the commits to compare with (default: %(default)s)")
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    args = parser.parse_args()
    os.environ.pop("ANTHROPIC_API_KEY", None)
    columns = [*args.before, "this tree"]
    best: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        roots = {}
        for commit in args.before:
            roots[commit] = Path(tmp) / f"before-{commit}"
            roots[commit].mkdir()
            archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "pytest_skilltransfer"],
                                     check=True, capture_output=True).stdout
            subprocess.run(["tar", "-x", "-C", str(roots[commit])], input=archive, check=True)
        roots["this tree"] = ROOT
        for round_ in range(args.rounds):
            for column in columns:
                work = Path(tmp) / f"w-{round_}-{columns.index(column)}"
                work.mkdir()
                figures = _run(roots[column], args.sizes, work)
                kept = best.setdefault(column, figures)
                for name, value in figures.items():
                    if isinstance(value, float):
                        kept[name] = min(kept[name], value)
    header = "".join(f"{c:>14}" for c in columns)
    print(f"{'cassette save (CPU)':<46}{header} {'ratio':>8}")
    rows = (("append", "one call added to {size:,} interactions", "ms"),
            ("fresh", "fresh save of {size:,}, per interaction", "ms"),
            ("fresh keyed", "  the same, a provider key set", "ms"),
            ("fresh elsewhere", "  the same, not sent by this process's SDK", "ms"))
    for size in args.sizes:
        for what, label, unit in rows:
            values = [best[c][f"{what} {size}"] for c in columns]
            cells = "".join(f"{v:>11.3f} {unit}" for v in values)
            print(f"{label.format(size=size):<46}{cells} {values[-2] / values[-1]:>7.2f}x")
        for what, label in (("digest", "  files byte-identical after the appends"),
                            ("fresh digest", "  fresh files byte-identical")):
            same = len({best[c][f"{what} {size}"] for c in columns}) == 1
            print(f"{label:<46}{'yes' if same else 'NO':>14}")
    print(f"(ratio: {columns[-2]} / this tree; best of {args.rounds} rounds)")


if __name__ == "__main__":
    main()
