"""The command-output samples in README.md and docs/*.md, written from real runs.

    python docs/samples.py            # rerun every sample's commands and rewrite the samples
    python docs/samples.py --check    # exit 1 naming each sample that differs from what its command prints

A sample is the fenced block right after a marker line `<!-- sample: NAME -->` in a Markdown file;
NAME is a key of `SAMPLES`, which says which commands produce it and which lines of their output it
shows. Timings (`in 5.51s`) are compared as `in N.NNs`. `tests/reports/test_reviewer_view.py` checks every
sample but the slow ones (`SLOW`), the main job's against its one run of the main job's shards, so a
sample cannot go stale; `python docs/samples.py --check` checks them all.

A block that shows output no cheap offline run prints is marked `<!-- figures: ... -->` instead, saying
where its figures come from, and `UNCHECKED` says why it is left out.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
MARKER = re.compile(r"^(?P<indent> *)<!-- sample: (?P<name>[\w-]+) -->\n(?P=indent)(?P<fence>`{3,})(?P<lang>\w*)\n"
                    r"(?P<body>.*?)\n(?P=indent)(?P=fence)$", re.M | re.S)
TIMING = re.compile(r"=* ?(\d+ \w+(?:, \d+ \w+)*) in [\d.]+s(?: \([\d:]+\))? ?=*")
WARNINGS = re.compile(r", \d+ warnings?")
REPORT_FILES = re.compile(r"^(JSON|Markdown|HTML) report: ")
SHARDS = 3


def run(*args: str, env: dict[str, str] | None = None) -> str:
    """A command's stdout, from the project root, replaying offline as CI does."""
    done = subprocess.run(list(args), cwd=ROOT, capture_output=True, text=True, timeout=900,
                          env={**os.environ, "CI": "true", **(env or {})})
    return done.stdout


def between(text: str, start: str, stop: str | None = None, keep_stop: bool = False) -> str:
    """The lines from the first matching `start` (a regex) to the end, or to the first later `stop`."""
    lines = [line for line in text.splitlines() if not REPORT_FILES.match(line)]
    first = next(i for i, line in enumerate(lines) if re.match(start, line))
    last = len(lines)
    if stop is not None:
        last = next(i for i in range(first + 1, len(lines)) if re.match(stop, lines[i])) + keep_stop
    return "\n".join(lines[first:last]).rstrip("\n")


def main_job(tmp: Path) -> str:
    """The README's main job: `CI=true pytest -n auto`, its transfer table to the end."""
    return between(run(sys.executable, "-m", "pytest", "-n", "auto", "-p", "no:randomly"), r"=+ skill transfer =+$")


def shards(tmp: Path) -> list[Path]:
    """The main job run as `SHARDS` shards, each writing its JSON report (and its terminal output beside it)."""
    paths = []
    for shard in range(SHARDS):
        path = tmp / f"shard-{shard}.json"
        out = run(sys.executable, "-m", "pytest", "-n", "0", "-p", "no:randomly", f"--transfer-shard-id={shard}",
                  f"--transfer-num-shards={SHARDS}", f"--skilltransfer-json={path}")
        path.with_suffix(".out").write_text(out, encoding="utf-8")
        paths.append(path)
    return paths


def shard_line(tmp: Path) -> str:
    """docs/ci.md: what the first of the main job's shards says it ran (reuses the shards' run when there is one)."""
    out = tmp / "shard-0.out"
    if not out.exists():
        shards(tmp)
    return next(line for line in out.read_text(encoding="utf-8").splitlines()
                if line.startswith("skilltransfer shard 0 of "))


def merged(tmp: Path) -> str:
    """docs/ci.md: `merge` of the main job's shards (the same table an unsharded run prints)."""
    return between(run(sys.executable, "-m", "pytest_skilltransfer", "merge", *map(str, shards(tmp))),
                   r"=+ skill transfer \(merged")


def plan(tmp: Path) -> str:
    """docs/spend.md: `--plan` of one seed on a priced pair, the table and the lanes."""
    return between(run(sys.executable, "-m", "pytest", "seeds/alert-intake", "--source", "haiku", "--target", "luna",
                       "--plan", "-p", "no:randomly"), r"item +calls", r"How: ")


def judge_calibration(tmp: Path) -> str:
    """docs/seeds.md: a seed whose judge fails its calibration file (the miscalibrated simulated judge)."""
    command = ["pytest", "seeds/change-review", "--judge=sim-judge-lenient", "--pair", "sim-small:sim-large"]
    out = run(sys.executable, "-m", *command, "-n", "0", "-p", "no:randomly").replace(f"{ROOT}/", "")
    return f"$ {' '.join(command)}\n" + between(out, r"change-review \(", r"Fix the judge", keep_stop=True)


def restarts(tmp: Path) -> str:
    """docs/protocol.md: the skill transfer section of `--restarts 5`, optimized on each simulated model."""
    parts = []
    for source, target in (("sim-small", "sim-large"), ("sim-large", "sim-small")):
        command = ["python", "-m", "pytest_skilltransfer", "--source", source, "--target", target, "--restarts", "5"]
        out = run(sys.executable, *command[1:])
        parts.append(f"$ {' '.join(command)}\n" + between(out, r"=+ skill transfer =+$", r"=+ \d+ \w+.* in [\d.]+s"))
    return "\n".join(parts)


def script(*args: str) -> Callable[[Path], str]:
    """A benchmark script's whole output (`python benchmarks/SCRIPT ARGS`): docs/protocol.md's portable-skill
    (--validate-on) tables and the harm it vetoes."""
    return lambda tmp: run(sys.executable, *args).rstrip("\n")


def north_star(tmp: Path) -> str:
    """docs/spend.md: `benchmarks/north_star_plan.py`, the planned totals and each lever's."""
    return run(sys.executable, "benchmarks/north_star_plan.py").rstrip("\n")


@dataclass(frozen=True)
class Sample:
    file: str
    produce: Callable[[Path], str]


SAMPLES = {
    "main-job": Sample("README.md", main_job),
    "merged": Sample("docs/ci.md", merged),
    "plan": Sample("docs/spend.md", plan),
    "judge-calibration": Sample("docs/seeds.md", judge_calibration),
    "restarts": Sample("docs/protocol.md", restarts),
    "portable": Sample("docs/protocol.md", script("benchmarks/portable_figures.py", "howto-answers", "status-report",
                                                  "docs-style", "ticket-router")),
    "portable-4-nights": Sample("docs/protocol.md", script("benchmarks/portable_figures.py", "--nights", "4",
                                                           "status-report", "howto-answers")),
    "north-star": Sample("docs/spend.md", north_star),
    "shard-line": Sample("docs/ci.md", shard_line),
    "portable-harm": Sample("docs/protocol.md", script("benchmarks/portable_harm_figures.py")),
}

# Left out of tests/reports/test_reviewer_view.py for time (the suite is near CI's limit); `--check` still checks them.
SLOW = {"north-star": "plans 90 items four times over (about 35 s)"}

# Blocks of command output no cheap offline run prints: each is marked `<!-- figures: ... -->` in its file.
UNCHECKED = {
    "docs/spend.md cost lines": "a paid bill: the simulator is free, so only a recording against priced loopback "
                                "providers prints them (tests/plugin/test_bill.py checks their form and sums)",
    "docs/spend.md progress line": "wall-clock times of one live run (tests/plugin/test_live_progress.py checks its form)",
    "docs/spend.md rehearsal": "recordings of every project seed against the realistic loopback provider "
                               "(benchmarks/plan_tightness.py, minutes; tests/planning/test_plan_rehearsal.py runs one seed)",
    "docs/spend.md what to pay": "a plan after a recording against a priced loopback provider and a one-line edit "
                                 "(tests/plugin/test_plugin_plan_budget.py makes it and checks these lines)",
    "docs/ci.md regression": "a pull request's commit and its base in git (tests/plugin/test_plugin_compare.py makes one "
                              "in a temp repository and checks these lines)",
    "docs/protocol.md run-family power": "the worst design per row of `benchmarks/run_error_figures.py 1000`, "
                                         "a simulation of minutes",
    "docs/protocol.md sequential design": "exact figures of `benchmarks/sequential_design.py` (20 s, and a run of the "
                                          "main job for its items); tests/evidence/test_sequential.py checks the "
                                          "power, coverage and saving they rest on",
    "docs/spend.md frontier": "needs a priced loopback provider beside the simulator (tests/evidence/test_frontier.py runs "
                              "that case and checks the table's rows)",
}


# `text` blocks that show no command's output.
NOT_OUTPUT = {"docs/architecture.md": "the layers' diagram"}


def unmarked(root: Path = ROOT) -> list[str]:
    """Every `text` block (a command's output, by the docs' convention) with neither a sample nor a figures
    marker on the line before it, as `file:line`, but those in `NOT_OUTPUT`."""
    found_blocks = []
    for path in [root / "README.md", *sorted((root / "docs").glob("*.md"))]:
        name = path.relative_to(root).as_posix()
        if name in NOT_OUTPUT:
            continue
        source = path.read_text(encoding="utf-8")
        lines = source.splitlines()
        opening = True
        for number, line in enumerate(lines):
            if line.lstrip().startswith("```"):
                if opening and line.lstrip() == "```text":
                    before = lines[number - 1].lstrip() if number else ""
                    if not before.startswith(("<!-- sample: ", "<!-- figures: ")):
                        found_blocks.append(f"{name}:{number + 1}")
                opening = not opening
    return found_blocks


def normalized(text: str) -> str:
    """A sample as compared: timings as `N.NNs`, pytest's warnings count off (each xdist worker repeats the
    collection's warnings, so it follows the core count), trailing blanks off."""
    def count(match: re.Match[str]) -> str:
        return f"{WARNINGS.sub('', match.group(1))} in N.NNs"
    return "\n".join(TIMING.sub(count, line).rstrip() for line in text.splitlines())


def found(root: Path = ROOT) -> dict[str, tuple[Path, str]]:
    """Every marked sample: name -> (file, its block's text); a marker NAME missing from `SAMPLES` fails."""
    samples: dict[str, tuple[Path, str]] = {}
    for path in [root / "README.md", *sorted((root / "docs").glob("*.md"))]:
        for match in MARKER.finditer(path.read_text(encoding="utf-8")):
            if match["name"] not in SAMPLES:
                raise SystemExit(f"{path}: sample {match['name']!r} is not in docs/samples.py SAMPLES")
            body = "\n".join(line.removeprefix(match["indent"]) for line in match["body"].splitlines())
            samples[match["name"]] = (path, body)
    return samples


def write(name: str, text: str) -> None:
    path = ROOT / SAMPLES[name].file
    source = path.read_text(encoding="utf-8")

    def replace(match: re.Match[str]) -> str:
        if match["name"] != name:
            return match.group(0)
        pad = match["indent"]
        body = "\n".join(pad + line if line else line for line in text.splitlines())
        return f"{pad}<!-- sample: {name} -->\n{pad}{match['fence']}{match['lang']}\n{body}\n{pad}{match['fence']}"

    path.write_text(MARKER.sub(replace, source), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a sample is stale")
    parser.add_argument("names", nargs="*", help="only these samples (default: all)")
    args = parser.parse_args(argv)
    marked = found()
    stale = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.names or list(SAMPLES):
            if name not in marked:
                print(f"{SAMPLES[name].file}: no marker <!-- sample: {name} --> before a fenced block")
                stale.append(name)
                continue
            text = SAMPLES[name].produce(Path(tmp))
            if normalized(text) == normalized(marked[name][1]):
                print(f"{name}: up to date ({SAMPLES[name].file})")
            elif args.check:
                print(f"{name}: STALE ({SAMPLES[name].file}): rerun python docs/samples.py {name}")
                stale.append(name)
            else:
                write(name, text)
                print(f"{name}: rewritten ({SAMPLES[name].file})")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
