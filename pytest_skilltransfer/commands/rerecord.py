"""`python -m pytest_skilltransfer rerecord SEED... | --skill PATH [PYTEST ARGS...]`: re-record what a seed's
runs miss, in one command.

`--skill PATH` names every seed whose skill is that file (its own SKILL.md, or `skill = "<path>"` in its
seed.toml), so an edit to a shared skill is re-recorded for all of them at once. First the plan
(`--plan`, the cassettes replayed with the network blocked) says whether any call is missing; when none
is, nothing runs and the command says so. Otherwise it runs, from the project root, `pytest
--transfer-only-seed SEED... --transfer-record-mode=new_episodes --transfer-local-server=auto -p no:xdist
--snapshot-update`: the seeds' matrix items and every hand-written test naming them, in one process, so
they are covered completely and their cassettes keep only what this run used; a local model's server
starts once, at the first call that has to be recorded; snapshots are written, as the results change
with the recordings.
"""

from __future__ import annotations

import argparse
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

from ..engine.seeds import CONFIG_FILE, SKILL_FILE, discover_seeds

FIXED = ["--transfer-record-mode=new_episodes", "--transfer-local-server=auto", "-p", "no:xdist", "--snapshot-update"]
SEED_FOLDERS = ("seeds", ".")  # where `--skill` looks for seeds, under the project root


def only_seeds(seeds: list[str]) -> list[str]:
    return [arg for seed in seeds for arg in ("--transfer-only-seed", seed)]


def pytest_args(seeds: list[str], extra: list[str]) -> list[str]:
    """The pytest arguments that re-record `seeds` completely."""
    return only_seeds(seeds) + FIXED + extra


def plan_args(seeds: list[str], extra: list[str]) -> list[str]:
    """The pytest arguments of the plan that says what `seeds` miss (nothing is sent)."""
    return only_seeds(seeds) + ["--plan", "-p", "no:xdist", "-p", "no:randomly", *extra]


def skill_of(folder: Path) -> Path | None:
    """The skill file a seed folder uses: `skill =` in its seed.toml, else its SKILL.md."""
    config = folder / CONFIG_FILE
    try:
        named = tomllib.loads(config.read_text(encoding="utf-8")).get("skill") if config.is_file() else None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        named = None
    path = folder / named if isinstance(named, str) else folder / SKILL_FILE
    return path.resolve() if path.is_file() else None


def seeds_using(skill: Path, root: Path) -> list[str]:
    """The names of the seeds under `root` (its `seeds/` folder or itself) whose skill is `skill`."""
    wanted = skill.resolve()
    found = {folder.name for base in SEED_FOLDERS for folder in discover_seeds(root / base) if skill_of(folder) == wanted}
    return sorted(found)


def missing_calls(plan_output: str) -> int | None:
    """Items of the plan with calls to record (None when the plan printed no item rows)."""
    rows = [line for line in plan_output.splitlines()
            if "::" in line and re.search(r"nothing to record|all recorded:|then a miss in", line)]
    return sum("then a miss in" in line for line in rows) if rows else None


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m pytest_skilltransfer rerecord", description=__doc__.splitlines()[0],
                                     epilog="Arguments after the seed names go to pytest as they are (e.g. -v).")
    parser.add_argument("seed", nargs="*", help="a seed's folder name (e.g. review-tagger)")
    parser.add_argument("--skill", type=Path, help="re-record every seed whose skill is this file (SKILL.md or a "
                                                   "seed.toml `skill =` path)")
    parser.add_argument("--dry-run", action="store_true", help="print the pytest command, run nothing")
    args, extra = parser.parse_known_args(argv)
    seeds = list(args.seed)
    if args.skill is not None:
        if not args.skill.is_file():
            print(f"error: --skill {args.skill}: no such file", file=sys.stderr)
            return 2
        using = seeds_using(args.skill, Path.cwd())
        if not using:
            print(f"error: --skill {args.skill}: no seed under {Path.cwd()} uses it (as its SKILL.md or a seed.toml "
                  "`skill =` path)", file=sys.stderr)
            return 2
        print(f"seeds using {args.skill}: {', '.join(using)}", flush=True)
        seeds += [s for s in using if s not in seeds]
    if not seeds:
        parser.error("name the seeds to re-record, or --skill PATH")
    command = pytest_args(seeds, extra)
    if args.dry_run:
        print(shlex.join(["pytest", *command]), flush=True)
        return 0
    plan = subprocess.run([sys.executable, "-m", "pytest", *plan_args(seeds, extra)], capture_output=True, text=True)
    missing = missing_calls(plan.stdout) if plan.returncode == 0 else None
    if missing == 0:
        print(f"nothing to re-record: every call of {', '.join(seeds)} replays from its cassettes (the plan replayed "
              "them with the network blocked); nothing was run or sent", flush=True)
        return 0
    print(shlex.join(["pytest", *command]), flush=True)
    return subprocess.run([sys.executable, "-m", "pytest", *command]).returncode
