"""Recording as a user runs it: `pytest --pair ...` in a process of its own, timed against its floors.

    .venv/bin/python benchmarks/user_recording.py                 # both answer kinds, caps 8 and 64
    .venv/bin/python benchmarks/user_recording.py --answers realistic --caps 8 --repeats 1
    .venv/bin/python benchmarks/user_recording.py --answers realistic --before 2e9e2e2   # that commit's beside this

A project (copies of the recording seeds, the two bench models as aliases of a loopback server in a
process of its own, `benchmarks/realistic_provider.py`) is recorded by `pytest -n 0 --pair
bench-small:bench-large --pair bench-large:bench-small --max-concurrency=CAP --snapshot-update` into a
fresh cassette folder, with the probe plugin `benchmarks/recording_probe.py` noting the marks. Two
answer kinds: `easy` (the easy fake's replies: no usable edit, so no night tries one) and
`realistic` (the simulated models behind the wire: edit arrays that apply, answers of working
length). Each cap runs `cold` (as a user runs it: the SDKs are imported by the first item's first
call) and `warm` (the probe makes one unrecorded call per model right after collection, so the
imports are start-up). Definitions, per item, with L the server's fixed latency:

- critical path: the calls on the item's longest chain of dependent calls (the engine's path clock)
  x L: no schedule answers faster;
- busiest model: the item's calls to its most-called model x L / cap (a model takes `cap` at a time);
- floor: the longer of the two; whole rounds: the longest of the critical path, the same path
  counted in rounds of the cap (the engine's round clock) x L, and the busiest model's calls in
  whole rounds of the cap x L (no schedule beats it either);
- item wall: `pytest_runtest_protocol` of the item (setup, call, teardown: the transfer, its
  gates, a seed's cassette saved after its last item).

The whole job: launch to exit of the process; start-up: launch to the end of collection
(interpreter, pytest, plugins and this package imported, seeds collected), split at pytest's
session start; after the items: the last item's end to exit (reports, interpreter exit). Ratios:
per item = sum of item walls / sum of item floors (the items of one process run one after
another); whole job = wall / the same floor; without start-up = (wall - start-up) / floor.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BENCH = Path(__file__).resolve().parent
SEEDS = ("changelog-writer", "ticket-router")
PAIRS = ("bench-small:bench-large", "bench-large:bench-small")
MODELS = ("bench-small", "bench-large")
LATENCY_S = 0.3
ENV_DROPPED = ("PYTEST_ADDOPTS", "PYTHONDONTWRITEBYTECODE", "CI", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN",
               "OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL")

Row = tuple[str, str, str]


class ProviderProcess:
    """`benchmarks/realistic_provider.py` in a process of its own; `seen()`: the requests since the last call."""

    def __init__(self, delay: float, answers: str) -> None:
        self._process = subprocess.Popen([sys.executable, str(BENCH / "realistic_provider.py"), str(delay), answers],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT)
        self.port = int(self._process.stdout.readline())  # type: ignore[union-attr]
        self.anthropic_url, self.openai_url = f"http://127.0.0.1:{self.port}", f"http://127.0.0.1:{self.port}/v1"

    def seen(self) -> list[tuple[float, str, str, int]]:
        self._process.stdin.write("\n")  # type: ignore[union-attr]
        self._process.stdin.flush()  # type: ignore[union-attr]
        return [tuple(r) for r in json.loads(self._process.stdout.readline())]  # type: ignore[union-attr, misc]

    def requests_per_model(self) -> Counter:
        """Requests received per model since the last call (as `run.FakeProcess` counts them)."""
        return Counter(request[1] for request in self.seen())

    def __enter__(self) -> "ProviderProcess":
        return self

    def __exit__(self, *exc: Any) -> None:
        self._process.stdin.close()  # type: ignore[union-attr]
        self._process.wait(timeout=30)


@dataclass
class Item:
    """One item of a timed job, with its floors (seconds)."""

    wall: float
    calls: int
    path: float
    throughput: float
    rounds: float
    setup: float  # the transfer (the plugin runs it in the item's fixture)
    call: float  # gates, snapshot
    teardown: float  # a seed's cassette saved after its last item
    cpu: float = 0.0  # the process's CPU time over the item (every thread)

    @property
    def floor(self) -> float:
        return max(self.path, self.throughput)


@dataclass
class Job:
    """One timed `pytest` recording."""

    wall: float  # launch to exit
    interpreter: float  # launch to session start
    collection: float  # session start to the end of collection
    warm: float  # the probe's warm-up calls (0 when cold)
    after: float  # the last item's end to exit
    items: list[Item]
    agent_chars: list[int]
    optimizer_calls: int
    nights: Counter  # tried / accepted / no edit, over the report's optimizations
    recorded: str = ""  # a digest of the cassette files and the report's verdicts (equal runs recorded alike)

    @property
    def start_up(self) -> float:
        return self.interpreter + self.collection + self.warm

    def total(self, name: str) -> float:
        return sum(getattr(item, name) for item in self.items)

    @property
    def item_wall(self) -> float:
        return self.total("wall")

    @property
    def floor(self) -> float:
        return sum(item.floor for item in self.items)

    @property
    def calls(self) -> int:
        return sum(item.calls for item in self.items)


def all_seeds() -> tuple[str, ...]:
    """Every seed of the project whose calls all go to the server: not those whose seed.toml names a judge or
    an optimizer (in-process simulated models answer at once, but the path clock counts their calls too)."""
    chosen = []
    for path in sorted((ROOT / "seeds").glob("*/seed.toml")):
        table = tomllib.loads(path.read_text())
        if not table.get("optimizer") and not (table.get("judge") or {}).get("model"):
            chosen.append(path.parent.name)
    return tuple(chosen)


def _project(work: Path, port: int, seeds: tuple[str, ...]) -> Path:
    project = work
    for seed in seeds:
        shutil.copytree(ROOT / "seeds" / seed, project / "seeds" / seed, ignore=shutil.ignore_patterns("__snapshots__"))
    (project / "pytest.ini").write_text("[pytest]\ntestpaths = seeds\n")
    (project / "pyproject.toml").write_text(
        "[tool.skilltransfer.models]\n"
        f'bench-small = "anthropic:bench-small@http://127.0.0.1:{port}"\n'
        f'bench-large = "openai:bench-large@http://127.0.0.1:{port}/v1"\n')
    return project


def _nights(report: Path) -> Counter:
    """Nights over every optimization the report holds: candidates tried, accepted, and nights without one."""
    counts: Counter = Counter()
    seen: set[str] = set()
    for result in json.loads(report.read_text())["results"]:
        for optimization in (result.get("optimization") or {}).values():
            optimization = optimization or {}
            key = json.dumps([result["seed"], optimization.get("agent"), optimization.get("optimizer")])
            if not optimization or key in seen:
                continue
            seen.add(key)
            for night in optimization.get("nights") or []:
                tried = night.get("val_after") is not None
                counts["tried"] += tried
                counts["accepted"] += bool(night.get("accepted"))
                counts["no edit"] += not tried
    return counts


def run_job(work: Path, provider: ProviderProcess, cap: int, warm: bool, latency: float,
            seeds: tuple[str, ...] = SEEDS, package: Path | None = None, timeline: Path | None = None) -> Job:
    """One recording of `seeds` by `pytest`, timed by the probe; the server's log gives each item's calls.

    `package`: a folder holding another `pytest_skilltransfer` (an earlier commit's, from `git archive`), put
    first on the path; `timeline`: where `timeline_probe` writes the run's timeline (not noted without it)."""
    project = _project(work, provider.port, seeds)
    probe_file = work / "probe.json"
    env = {k: v for k, v in os.environ.items() if k not in ENV_DROPPED}
    first = [str(package)] if package is not None else []
    env.update({"PYTHONPATH": os.pathsep.join(filter(None, [*first, str(BENCH), env.get("PYTHONPATH", "")])),
                "SKILLTRANSFER_BENCH_PROBE": str(probe_file), "SKILLTRANSFER_BENCH_WARM": "1" if warm else "0",
                "SKILLTRANSFER_BENCH_MODELS": ",".join(MODELS)})
    probes = ["-p", "recording_probe"]
    if timeline is not None:
        env["SKILLTRANSFER_BENCH_TIMELINE"] = str(timeline)
        probes += ["-p", "timeline_probe"]
    args = [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", "-p", "no:randomly",
            *probes, *(f"--pair={pair}" for pair in PAIRS), f"--max-concurrency={cap}",
            f"--transfer-cassette-dir={work / 'cassettes'}", "--snapshot-update",
            f"--skilltransfer-json={work / 'report.json'}"]
    provider.seen()
    launch = time.monotonic()
    done = subprocess.run(args, cwd=project, capture_output=True, text=True, env=env)
    exit_ = time.monotonic()
    requests = [r for r in provider.seen() if r[0] >= launch]
    if not probe_file.is_file() or not (work / "report.json").is_file():
        raise RuntimeError(f"the recording did not run (exit {done.returncode}):\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    marks = json.loads(probe_file.read_text())
    items = []
    for mark in marks["items"]:
        mine = [r for r in requests if mark["start"] <= r[0] <= mark["end"]]
        per_model = Counter(r[1] for r in mine)
        path = mark["calls_on_path"] * latency
        whole = max([path, mark["rounds_on_path"] * latency] + [math.ceil(n / cap) * latency for n in per_model.values()])
        items.append(Item(mark["end"] - mark["start"], len(mine), path,
                          max(per_model.values(), default=0) * latency / cap, whole,
                          mark.get("setup", 0.0), mark.get("call", 0.0), mark.get("teardown", 0.0),
                          mark.get("cpu", 0.0)))
    warm_s = marks["warmed"] - marks["collected"] if warm else 0.0
    agents = [r for r in requests if r[2] == "agent" and r[0] >= marks.get("warmed", marks["collected"])]
    return Job(exit_ - launch, marks["sessionstart"] - launch, marks["collected"] - marks["sessionstart"], warm_s,
               exit_ - marks["items"][-1]["end"], items, [r[3] for r in agents],
               sum(r[2] == "optimizer" for r in requests), _nights(work / "report.json"), _recorded(work))


def _recorded(work: Path) -> str:
    """A digest of what a run recorded: every cassette file (path and bytes) and every result of the JSON report
    (verdicts, figures, bills)."""
    digest = hashlib.sha256()
    for path in sorted((work / "cassettes").rglob("*")):
        if path.is_file():
            digest.update(str(path.relative_to(work)).encode() + b"\0" + path.read_bytes() + b"\0")
    results = json.loads((work / "report.json").read_text())["results"]
    digest.update(json.dumps(results, sort_keys=True).encode())
    return digest.hexdigest()[:12]


def _median(jobs: list[Job], key: Any) -> Job:
    return sorted(jobs, key=key)[len(jobs) // 2]


def _range(values: list[float]) -> str:
    return f"{min(values):.2f}-{max(values):.2f}x" if len(values) > 1 else f"{values[0]:.2f}x"


def user_recording(work: Path, answers: tuple[str, ...] = ("easy", "realistic"), caps: tuple[int, ...] = (8, 64),
                   repeats: int = 3, latency: float = LATENCY_S, seeds: tuple[str, ...] = SEEDS,
                   packages: dict[str, Path | None] | None = None) -> list[Row]:
    """Two rows (per item, whole job) per answer kind, cap and package; cold and warm runs alternate, `repeats`
    each, and so do the packages (`packages`: a label -> a folder holding that `pytest_skilltransfer`, None for
    this tree's; default this tree's alone). A last row per answer kind says whether every run recorded the
    same cassettes and results."""
    packages = packages or {"": None}
    rows: list[Row] = []
    for kind in answers:
        recorded: set[str] = set()
        with ProviderProcess(latency, kind) as provider:
            for cap in caps:
                runs = {label: {False: [], True: []} for label in packages}  # type: dict[str, dict[bool, list[Job]]]
                for n in range(repeats):
                    for warm in (False, True):
                        for label, package in packages.items():
                            folder = work / f"user-{kind}-{cap}-{'warm' if warm else 'cold'}-{n}-{label or 'this'}"
                            job = run_job(folder, provider, cap, warm, latency, seeds, package)
                            runs[label][warm].append(job)
                            recorded.add(f"cap {cap}: {job.recorded}")
                for label in packages:
                    rows += _rows(kind, cap, latency, runs[label][False], runs[label][True], seeds, label)
        same = len({r.split(": ")[1] for r in recorded}) == 1
        rows.append((f"recording as a user runs it, {kind} answers: the same cassettes and results",
                     f"{len(recorded)} digest(s) over caps and packages: {', '.join(sorted(recorded))}",
                     "identical" if same else "DIFFERENT"))
    return rows


def _rows(kind: str, cap: int, latency: float, cold_runs: list[Job], warm_runs: list[Job],
          seeds: tuple[str, ...], package: str = "") -> list[Row]:
    per_item = lambda job: job.item_wall / job.floor  # noqa: E731
    cold, warm = _median(cold_runs, per_item), _median(warm_runs, per_item)
    of = f"median of {len(cold_runs)}, " if len(cold_runs) > 1 else ""
    chars = sorted(cold.agent_chars)
    chars_text = f"agent answers {chars[len(chars) // 2]} characters (median; {chars[0]}-{chars[-1]})" if chars else ""
    nights = cold.nights
    label = (f"recording as a user runs it{f' ({package})' if package else ''}, {kind} answers: {len(seeds)} seeds "
             f"x {len(PAIRS)} pairs, {cold.calls} calls at {latency * 1000:.0f} ms, cap {cap}/model")
    item_row = (f"{label}, per item",
                f"items {cold.item_wall:.2f} s vs floor {cold.floor:.2f} s (critical path {cold.total('path'):.1f} s = "
                f"{cold.total('path') / latency:.0f} calls, busiest model {cold.total('throughput'):.2f} s; whole rounds "
                f"{cold.total('rounds'):.2f} s); items: transfers {cold.total('setup'):.2f} s (the first "
                f"{cold.items[0].setup:.2f} s vs its floor {cold.items[0].floor:.2f} s), call (gates, snapshot) "
                f"{cold.total('call'):.2f} s, teardowns {cold.total('teardown'):.2f} s (cassettes saved); process CPU "
                f"in the items {cold.total('cpu'):.2f} s ({cold.total('cpu') * 1000 / max(cold.calls, 1):.1f} ms per "
                f"call); SDKs imported at start-up: items {warm.item_wall:.2f} s (the first transfer "
                f"{warm.items[0].setup:.2f} s), CPU {warm.total('cpu'):.2f} s; {of}ranges "
                f"{_range([per_item(j) for j in cold_runs])} and {_range([per_item(j) for j in warm_runs])}; "
                f"{cold.optimizer_calls} optimizer calls, nights: {nights['tried']} tried a candidate, "
                f"{nights['accepted']} accepted, {nights['no edit']} without one; {chars_text}",
                f"{per_item(cold):.2f}x the floor ({per_item(warm):.2f}x with the SDKs imported at start-up); "
                f"{cold.item_wall / cold.total('rounds'):.2f}x whole rounds")
    whole = lambda job: job.wall / job.floor  # noqa: E731
    job = _median(cold_runs, whole)
    job_row = (f"{label}, whole job",
               f"launch to exit {job.wall:.2f} s vs floor {job.floor:.2f} s: start-up {job.start_up:.2f} s "
               f"(interpreter and imports {job.interpreter:.2f} s, collection {job.collection:.2f} s), items "
               f"{job.item_wall:.2f} s, between items {job.wall - job.start_up - job.item_wall - job.after:.2f} s, "
               f"after the items {job.after:.2f} s (reports, exit); {of}range {_range([whole(j) for j in cold_runs])}",
               f"{whole(job):.2f}x the floor; {(job.wall - job.start_up) / job.floor:.2f}x without start-up")
    return [item_row, job_row]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", action="append", choices=("easy", "realistic"), help="answer kinds (default both)")
    parser.add_argument("--caps", default="8,64", help="calls per model, comma-separated (default 8,64)")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each variant (default 3)")
    parser.add_argument("--latency", type=float, default=LATENCY_S, help="seconds each answer takes (default 0.3)")
    parser.add_argument("--seeds", default=",".join(SEEDS),
                        help=f"project seeds, comma-separated, or 'all' (every seed whose calls all go to the server; "
                             f"default {','.join(SEEDS)})")
    parser.add_argument("--before", metavar="COMMIT",
                        help="also time the package at COMMIT (git archive), its runs taking turns with this tree's")
    args = parser.parse_args()
    seeds = all_seeds() if args.seeds == "all" else tuple(args.seeds.split(","))
    with tempfile.TemporaryDirectory(prefix="skilltransfer-user-rec-") as tmp:
        packages: dict[str, Path | None] | None = None
        if args.before:
            before = Path(tmp) / "before"
            before.mkdir()
            archive = subprocess.run(["git", "archive", args.before, "pytest_skilltransfer"], cwd=ROOT,
                                     capture_output=True, check=True).stdout
            subprocess.run(["tar", "-x", "-C", str(before)], input=archive, check=True)
            subprocess.run([sys.executable, "-m", "compileall", "-q", str(before)], check=True)  # bytecode cached
            packages = {f"before: {args.before}": before, "after: this tree": None}
        rows = user_recording(Path(tmp), tuple(args.answers or ("easy", "realistic")),
                              tuple(int(c) for c in args.caps.split(",")), args.repeats, args.latency, seeds, packages)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    for row in rows:
        print("  ".join(row))


if __name__ == "__main__":
    main()
