"""Where `-n 2` spends the main job's wall against `-n 0`: phases per process, alternating runs.

    .venv/bin/python benchmarks/parallel.py [--rounds 5] [--before SRC] [--bytecode env|cached|off]

Runs the README's main job (`CI=true pytest -q -p no:cacheprovider`, replay only, at the repo root)
under `-n 0` and `-n 2`, alternating, `--rounds` times each (with `--before SRC`, also the package
found in SRC, alternating with this one; both then load from `PYTHONPATH`, the working folder kept
off `sys.path`). A probe plugin notes the wall
clock (since the command started) and the process's CPU at each phase: the controller's session
start (for `-n 2`: when xdist starts the workers), each process's collection finished, its first
item's start, its last item's end, the end of the run. Prints the medians of each variant and of the
ratio `-n 2 / -n 0` (wall), with the load average before and after. `--bytecode cached` drops
`PYTHONDONTWRITEBYTECODE` (bytecode written and reused, as in most environments; one unmeasured run
writes it), `off` sets it (every process compiles what it imports), `env` leaves the environment as
it is. The outputs of every run must be identical but for the timing line: the script checks it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PROBE = '''
import json, os, time
import pytest

_T0 = float(os.environ["PARALLEL_PROBE_T0"])
_OUT = os.environ["PARALLEL_PROBE_OUT"]
_WHO = os.environ.get("PYTEST_XDIST_WORKER", "controller")
_marks = {}


def _mark(name, again=True):
    if again or name not in _marks:
        _marks[name] = (round(time.time() - _T0, 3), round(time.process_time(), 3))


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session):
    _mark("session start")


def pytest_collection_finish(session):
    _mark("collected")


def pytest_runtest_logstart(nodeid, location):
    if _WHO != "controller" or not os.environ.get("PARALLEL_PROBE_DIST"):
        _mark("first item", again=False)


def pytest_runtest_logfinish(nodeid, location):
    if _WHO != "controller" or not os.environ.get("PARALLEL_PROBE_DIST"):
        _mark("last item")


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    _mark("end")
    with open(os.path.join(_OUT, _WHO + ".json"), "w") as out:
        json.dump(_marks, out)
'''


def run(workers: int, before: str | None, bytecode: str, probe_dir: Path) -> dict:
    """One run of the main job; its wall, CPU (the process and its children) and phase marks."""
    out = Path(tempfile.mkdtemp(prefix="parallel-probe-"))
    env = dict(os.environ, CI="true", PARALLEL_PROBE_OUT=str(out), PARALLEL_PROBE_DIST="1" if workers else "")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (before, str(probe_dir), env.get("PYTHONPATH")) if p)
    env["PYTHONSAFEPATH"] = "1"  # the working folder (the repo root) would shadow `before` in every process
    if bytecode == "cached":
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    elif bytecode == "off":
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "parallel_probe",
               "-n", str(workers)]
    usage = os.times()
    env["PARALLEL_PROBE_T0"] = repr(time.time())
    start = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = os.times()
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    marks = {path.stem: json.loads(path.read_text()) for path in out.glob("*.json")}
    for path in out.iterdir():
        path.unlink()
    out.rmdir()
    lines = [line for line in done.stdout.splitlines()
             if " passed in " not in line and "bringing up nodes" not in line and line.strip()]
    return {"wall": wall, "cpu": (after.children_user - usage.children_user) + (after.children_system - usage.children_system),
            "marks": marks, "output": "\n".join(lines)}


def phases(result: dict) -> dict[str, float]:
    """The wall of each phase of one run (seconds)."""
    marks = result["marks"]
    runners = [m for who, m in marks.items() if who != "controller"] or [marks["controller"]]
    ready = max(m["collected"][0] for m in runners)  # the last process ready to run items
    first = min(m["collected"][0] for m in runners)
    return {
        "wall": result["wall"],
        "cpu": result["cpu"],
        "controller start": marks["controller"]["session start"][0],
        "controller CPU at its start": marks["controller"]["session start"][1],
        "first process ready": first,
        "last process ready": ready,
        "items (from the first ready)": max(m["last item"][0] for m in runners) - first,
        "after the last item": result["wall"] - max(m["last item"][0] for m in runners),
        "workers' last items apart": (max(m["last item"][0] for m in runners)
                                      - min(m["last item"][0] for m in runners)),
        "start-up CPU per process": statistics.mean(m["collected"][1] for m in runners),
        "controller CPU": marks["controller"]["end"][1],
    }


def _bytecode_caches(versions: dict[str, str | None]) -> set[Path]:
    """The `__pycache__` folders of the measured packages and the repo's seeds."""
    roots = [Path(source or ROOT) / "pytest_skilltransfer" for source in versions.values()] + [ROOT / "seeds"]
    return {folder for root in roots for folder in root.rglob("__pycache__")} | (
        {ROOT / "__pycache__"} if (ROOT / "__pycache__").is_dir() else set())  # the root conftest's


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--before", help="a source folder holding the earlier pytest_skilltransfer package")
    parser.add_argument("--bytecode", choices=("env", "cached", "off"), default="env")
    args = parser.parse_args()
    probe_dir = Path(tempfile.mkdtemp(prefix="parallel-probe-plugin-"))
    (probe_dir / "parallel_probe.py").write_text(PROBE)
    # With --before, both packages load from PYTHONPATH: pytest then rewrites the asserts of each (as for a
    # regular install), which an editable install escapes; the comparison stays like for like.
    versions = {"after": None} if not args.before else {"before": str(Path(args.before).resolve()), "after": str(ROOT)}
    variants = [(version, workers) for version in versions for workers in (0, 2)]
    caches_before = _bytecode_caches(versions)
    load_start = os.getloadavg()
    results: dict[tuple[str, int], list[dict]] = {variant: [] for variant in variants}
    outputs: set[str] = set()
    try:
        if args.bytecode == "cached":
            for source in versions.values():
                run(0, source, "cached", probe_dir)  # writes the bytecode caches
        for _ in range(args.rounds):
            for version, workers in variants:
                result = run(workers, versions[version], args.bytecode, probe_dir)
                outputs.add(result["output"])
                results[(version, workers)].append(phases(result))
    finally:  # the caches this run wrote would speed up later runs that measure compiling
        for folder in _bytecode_caches(versions) - caches_before:
            shutil.rmtree(folder, ignore_errors=True)
    load_end = os.getloadavg()
    print(f"main job, {args.rounds} alternating rounds, bytecode {args.bytecode}; load average (1, 5, 15 min) "
          f"{', '.join(f'{x:.2f}' for x in load_start)} at the start, {', '.join(f'{x:.2f}' for x in load_end)} at the end")
    print(f"identical output in every run (but the timing line): {'yes' if len(outputs) == 1 else 'NO'}")
    names = list(next(iter(results.values()))[0])
    header = f"{'median (s)':34s}" + "".join(f"{f'{v} -n {w}':>14s}" for v, w in variants)
    print(header)
    for name in names:
        print(f"{name:34s}" + "".join(f"{statistics.median(r[name] for r in results[v]):14.2f}" for v in variants))
    for version in versions:
        ratios = [two["wall"] / zero["wall"] for zero, two in zip(results[(version, 0)], results[(version, 2)])]
        print(f"{version}: -n 2 / -n 0 wall, per round: {', '.join(f'{r:.2f}' for r in ratios)}; median "
              f"{statistics.median(ratios):.2f}; ratio of the medians "
              f"{statistics.median(r['wall'] for r in results[(version, 2)]) / statistics.median(r['wall'] for r in results[(version, 0)]):.2f}")


if __name__ == "__main__":
    main()
