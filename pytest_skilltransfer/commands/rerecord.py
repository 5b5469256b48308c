"""`python -m pytest_skilltransfer rerecord SEED [PYTEST ARGS...]`: re-record every item of one seed.

Runs, from the project root, `pytest --transfer-only-seed SEED --transfer-record-mode=new_episodes
--transfer-local-server=auto -p no:xdist --snapshot-update`: the seed's matrix items and every
hand-written test naming it, in one process, so the seed is covered completely and its cassettes keep
only what this run used; a local model's server is started and stopped as needed (and a missing one
is named with its build command); snapshots are written, as the results change with the recordings.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys

FIXED = ["--transfer-record-mode=new_episodes", "--transfer-local-server=auto", "-p", "no:xdist", "--snapshot-update"]


def pytest_args(seeds: list[str], extra: list[str]) -> list[str]:
    """The pytest arguments that re-record `seeds` completely."""
    return [arg for seed in seeds for arg in ("--transfer-only-seed", seed)] + FIXED + extra


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m pytest_skilltransfer rerecord", description=__doc__.splitlines()[0],
                                     epilog="Arguments after the seed names go to pytest as they are (e.g. -v).")
    parser.add_argument("seed", nargs="+", help="a seed's folder name (e.g. review-tagger)")
    parser.add_argument("--dry-run", action="store_true", help="print the pytest command, run nothing")
    args, extra = parser.parse_known_args(argv)
    command = pytest_args(args.seed, extra)
    print(shlex.join(["pytest", *command]), flush=True)
    if args.dry_run:
        return 0
    return subprocess.run([sys.executable, "-m", "pytest", *command]).returncode
