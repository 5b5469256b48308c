"""`python -m pytest_skilltransfer`: the transfer matrix without writing a pytest command, and `init`.

    python -m pytest_skilltransfer [run] [--data-root seeds] [--seeds a,b] [--json] [-v] [OPTIONS]
    python -m pytest_skilltransfer init DIR [--skill PATH]
    python -m pytest_skilltransfer init [DIR] --from PATH/SKILL.md   (a seed started from an existing skill)
    python -m pytest_skilltransfer merge SHARD.json...   (merges sharded pytest runs' reports, see `merge`)
    python -m pytest_skilltransfer index [DIR] [--check] (cassette indexes, see `cassettes.reindex`)
    python -m pytest_skilltransfer html REPORT.json -o PAGE.html   (the HTML page of a JSON report)
    python -m pytest_skilltransfer models                (names, resolved ids, prices, recordings, pins)
    python -m pytest_skilltransfer doctor                (keys, models, prices, cassettes, snapshots, plugins)
    python -m pytest_skilltransfer batches [adopt|abandon ...]  (the batch manifest, see `commands.batches`)
    python -m pytest_skilltransfer check SEED TASK_ID ANSWER_FILE [--judge MODEL]  (which checks an answer passes)
    python -m pytest_skilltransfer rerecord SEED... | --skill PATH [PYTEST ARGS]  (re-records what the seeds miss)
    python -m pytest_skilltransfer history [--seeds a,b] [--html PAGE]  (each seed x pair's gain over the commits)

`run` is a front end to pytest with this plugin: its OPTIONS are the options of pytest's
*skill transfer* group (built from the same table), read with the same ini keys, the same
`pyproject.toml` tables, the same comma lists and the same gates. It collects only seed folders and
does not compare snapshots (`--no-snapshots`); pytest's output goes to stdout, or to stderr with
`--json`, which prints the JSON report alone on stdout.

Exit codes: 0 every item passed its gates; 1 a gate or a model call failed; 2 bad options or
seeds (every seed problem is listed); 3 an internal error.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from ..engine.seeds import discover_seeds, load_seed
from ..engine.seed_data import Seed, SeedError
from ..guards.redaction import redact_text
from ..guards.report_files import read_text
from ..guards.terminal import safe

PYTEST_EXIT = {0: 0, 1: 1, 2: 2, 3: 3, 4: 2, 5: 2}  # pytest's ExitCode -> ours
OPTION_PREFIX = "skilltransfer_"


class UsageError(Exception):
    """Bad command-line options."""


class _Group:
    """pytest's option group API on an argparse group, so the plugin's table builds the CLI too."""

    def __init__(self, group: Any):
        self.group = group

    def addoption(self, *names: str, **kwargs: Any) -> None:
        self.group.add_argument(*names, **kwargs)


class _Parser:
    """pytest's `Parser` API (getgroup / addini) on an argparse parser; ini keys need no CLI flag."""

    adds_short_spellings_now = True  # the CLI has no other plugins: both spellings at once

    def __init__(self, parser: argparse.ArgumentParser):
        self.parser = parser

    def getgroup(self, name: str, description: str = "") -> _Group:
        return _Group(self.parser.add_argument_group(name, description))

    def addini(self, *_: Any, **__: Any) -> None:
        return None


def build_parser() -> argparse.ArgumentParser:
    """The `run` parser: the CLI's own options, then every option of the plugin's group."""
    from ..plugin.options import add_options

    parser = argparse.ArgumentParser(
        prog="python -m pytest_skilltransfer",
        description="Optimize each seed's skill on SOURCE, freeze it, and measure it on TARGET (the pytest "
                    "plugin's matrix, gates and reports; `init DIR` scaffolds a new seed).",
        epilog="Every option below the first group is also an ini key in [tool.pytest.ini_options]; "
               "[tool.skilltransfer.models] and [tool.skilltransfer.prices] in pyproject.toml apply as in pytest. "
               "Exit: 0 all gates pass, 1 a gate or model call failed, 2 bad options or seeds. "
               "merge SHARD.json... merges the JSON reports of sharded runs (see merge --help); "
               "index [DIR] [--check] writes or checks the cassette indexes (see index --help); "
               "html REPORT.json -o PAGE.html builds the HTML page of a JSON report; "
               "rerecord SEED... or --skill PATH re-records what those seeds miss (see rerecord --help).",
    )
    own = parser.add_argument_group("run")
    own.add_argument("--data-root", default="seeds", help="folder of seeds (default: seeds)")
    own.add_argument("--seeds", default="", help="comma-separated seed names (default: every seed found)")
    own.add_argument("--json", action="store_true", help="print the JSON report on stdout (pytest's output goes to stderr)")
    own.add_argument("-v", "--verbose", action="store_true", help="per-night progress lines")
    add_options(_Parser(parser))
    return parser


def load_seeds(root: Path, names: list[str]) -> list[Seed]:
    """Load the chosen seeds (all by default); one UsageError lists every problem of every bad seed."""
    paths = discover_seeds(root)
    if not paths:
        raise UsageError(f"no seeds found under {root}: a seed is a folder with SKILL.md, benchmark.jsonl and "
                         "held-out.jsonl (python -m pytest_skilltransfer init DIR writes one)")
    by_name = {p.name: p for p in paths}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise UsageError(f"unknown seed(s) {', '.join(unknown)} under {root}; found: {', '.join(by_name)}")
    seeds, errors = [], []
    for path in ([by_name[n] for n in names] if names else paths):
        try:
            seeds.append(load_seed(path))
        except SeedError as exc:
            errors.append(str(exc))
    if errors:
        raise UsageError("\n".join(errors))
    return seeds


def plugin_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> list[str]:
    """The plugin options given on this command line, spelled back as pytest arguments."""
    forwarded: list[str] = []
    for action in parser._actions:  # argparse keeps no public list of actions
        value = getattr(args, action.dest, None)
        if not action.dest.startswith(OPTION_PREFIX) or value is None:
            continue
        flag = action.option_strings[0]
        if isinstance(value, bool):
            forwarded += [flag] if value else []
        elif isinstance(value, list):
            for item in value:
                forwarded += [flag, str(item)]
        else:
            forwarded += [flag, str(value)]
    return forwarded


def run(argv: list[str]) -> int:
    import pytest

    from ..plugin.spellings import dest

    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        seeds = load_seeds(Path(args.data_root), [n.strip() for n in args.seeds.split(",") if n.strip()])
    except UsageError as exc:
        print(safe(redact_text(f"error: {exc}")), file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="skilltransfer-cli-") as scratch:
        report = Path(scratch) / "report.json"
        pytest_args = [str(seed.path) for seed in seeds] + ["-p", "no:cacheprovider", "--no-snapshots"]
        # this process imported the plugin before pytest could rewrite its asserts; it relies on none
        pytest_args += ["-W", "ignore::pytest.PytestAssertRewriteWarning"]
        pytest_args += ["-v"] if args.verbose else []
        pytest_args += plugin_arguments(parser, args)
        json_option = getattr(args, dest("skilltransfer-json"))
        if args.json and json_option is None:
            pytest_args += ["--skilltransfer-json", str(report)]
        output = contextlib.redirect_stdout(sys.stderr) if args.json else contextlib.nullcontext()
        with output:
            code = int(pytest.main(pytest_args))
        if args.json and code in (0, 1):
            path = Path(json_option) if json_option else report
            print(json.dumps(json.loads(read_text(path)), indent=2))
    return PYTEST_EXIT.get(code, 3)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["merge"]:
        from .merge import main as merge

        return merge(argv[1:])
    if argv[:1] == ["html"]:
        from .html import main as html_main

        return html_main(argv[1:])
    if argv[:1] == ["index"]:
        from ..cassettes.reindex import main as index_main

        return index_main(argv[1:])
    if argv[:1] == ["check"]:
        from .answer_check import main as check_main

        return check_main(argv[1:])
    if argv[:1] == ["models"]:
        from .models import main as models_main

        return models_main(argv[1:])
    if argv[:1] == ["batches"]:
        from .batches import main as batches_main

        return batches_main(argv[1:])
    if argv[:1] == ["doctor"]:
        from .doctor import main as doctor_main

        return doctor_main(argv[1:])
    if argv[:1] == ["history"]:
        from .history import main as history_main

        return history_main(argv[1:])
    if argv[:1] == ["rerecord"]:
        from .rerecord import main as rerecord_main

        return rerecord_main(argv[1:])
    if argv[:1] == ["init"]:
        from .scaffold import main as init_main

        return init_main(argv[1:])
    return run(argv[1:] if argv[:1] == ["run"] else argv)
