"""`python -m pytest_skilltransfer`: the protocol over a folder of seeds, for one (source, target) pair.

`python -m pytest_skilltransfer merge SHARD.json...` merges sharded pytest runs' reports (see `merge`).

Exit codes: 0 success; 1 a model call failed; 2 bad options or seeds (every seed problem is listed).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .judge_report import judge_lines
from .models.base import ModelCallError, ModelError, resolve_model
from .protocol import CalibrationFailed, NoJudgeConfigured, ProtocolConfig, SeedSession, seed_judge
from .rubric import DEFAULT_MIN_ACCURACY, JudgeSetup
from .report import pair_lines, price_difference, seed_line, summary_line
from .result_json import run_to_json
from .scoring import PROFILES
from .seeds import Seed, SeedError, discover_seeds, load_seed


def _model_name(name: str | None, backend: str | None, model: str | None, role: str) -> str:
    if name:
        return name
    if backend and model:
        return f"sim-{model}" if backend == "sim" else f"{backend}:{model}"
    raise UsageError(f"give --{role} NAME (or --{role}-backend with --{role}-model)")


class UsageError(Exception):
    """Bad command-line options."""


def build_parser() -> argparse.ArgumentParser:
    defaults = ProtocolConfig()
    parser = argparse.ArgumentParser(
        prog="python -m pytest_skilltransfer",
        description="Optimize each seed's skill on SOURCE, freeze it, and measure it on TARGET.",
        epilog="python -m pytest_skilltransfer merge SHARD.json... merges the JSON reports of sharded pytest "
               "runs (--shard-id/--num-shards) into one report; see merge --help.",
    )
    parser.add_argument("--source", help="model that the skill is optimized with, e.g. sim-small or haiku")
    parser.add_argument("--target", help="model the frozen skill is deployed on, e.g. sim-large or sonnet")
    parser.add_argument("--optimizer", help="model that proposes edits (default: the agent model itself)")
    parser.add_argument("--judge", help="judge model for rubric checks (default: each seed's [judge] model)")
    parser.add_argument("--judge-samples", type=int, help="judge calls per rubric check, majority vote")
    parser.add_argument("--judge-min-accuracy", type=float, help="least judge accuracy on judge-calibration.jsonl")
    for role in ("source", "target"):
        parser.add_argument(f"--{role}-backend", help=argparse.SUPPRESS)
        parser.add_argument(f"--{role}-model", help=argparse.SUPPRESS)
    parser.add_argument("--data-root", default="seeds", help="folder of seeds (default: seeds)")
    parser.add_argument("--seeds", default="", help="comma-separated seed names (default: all found)")
    parser.add_argument("--nights", type=int, default=defaults.nights,
                        help=f"optimization nights at most (default {defaults.nights})")
    parser.add_argument("--edit-budget", type=int, default=defaults.edit_budget,
                        help=f"edits applied per night at most (default {defaults.edit_budget})")
    parser.add_argument("--limit-replay", type=int, default=defaults.limit_replay,
                        help=f"caps the training tasks replayed per night (0 = all; default {defaults.limit_replay})")
    parser.add_argument("--limit-holdout", type=int, default=defaults.limit_holdout,
                        help="caps the validation tasks the edit gate scores (0 = all; default "
                             f"{defaults.limit_holdout}); never the test split")
    parser.add_argument("--limit-test", type=int, default=defaults.limit_test,
                        help="caps the held-out test tasks that every reported score and gain uses "
                             f"(0 = all; default {defaults.limit_test}); fewer tasks, wider intervals")
    parser.add_argument("--samples", type=int, default=None,
                        help=f"rollouts per task (default {defaults.samples}, or the scoring profile's: gbrain 3)")
    parser.add_argument("--scoring", choices=tuple(PROFILES), default="default",
                        help="scoring profile: default (hard and soft, mean over samples) or gbrain (fraction of "
                             "checks per rollout, median of 3 samples, gate above best + 0.05)")
    parser.add_argument("--restarts", type=int, default=defaults.restarts,
                        help=f"independent optimizations per seed, each with its own train/val split and optimizer "
                             f"sample ids (default {defaults.restarts}); the gain's interval includes their spread")
    parser.add_argument("--min-delta", type=float, default=None,
                        help="the validation gate keeps edits only when val beats the current score by more than "
                             "this (default: the scoring profile's, 0 = any strict improvement)")
    parser.add_argument("--workers", type=int, default=defaults.workers, help="concurrent model calls")
    parser.add_argument("--no-direct", action="store_true", help="skip the direct optimization on the target")
    parser.add_argument("--json", action="store_true", help="print the JSON report instead of text")
    parser.add_argument("-v", "--verbose", action="store_true", help="print per-night progress to stderr")
    return parser


def _judge(seed: Seed, args: argparse.Namespace) -> JudgeSetup | None:
    """The command line's judge settings over the seed's [judge] table."""
    chosen = seed_judge(seed)
    if args.judge is None and chosen is None:
        return None
    model = resolve_model(args.judge) if args.judge else chosen.model  # type: ignore[union-attr]
    samples = args.judge_samples or (chosen.samples if chosen else 1)
    if samples < 1:
        raise UsageError(f"--judge-samples must be at least 1, got {samples}")
    accuracy = args.judge_min_accuracy if args.judge_min_accuracy is not None else (
        chosen.min_accuracy if chosen else DEFAULT_MIN_ACCURACY)
    return JudgeSetup(model, samples, accuracy)


def load_seeds(root: Path, names: list[str]) -> list[Seed]:
    """Load the chosen seeds (all by default), raising one SeedError-like message for every bad one."""
    paths = discover_seeds(root)
    if not paths:
        raise UsageError(f"no seeds found under {root}: a seed is a folder with SKILL.md, benchmark.jsonl and held-out.jsonl")
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


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["merge"]:
        from .merge import main as merge

        return merge(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        source = resolve_model(_model_name(args.source, args.source_backend, args.source_model, "source"))
        target = resolve_model(_model_name(args.target, args.target_backend, args.target_model, "target"))
        optimizer = resolve_model(args.optimizer) if args.optimizer else None
        config = ProtocolConfig(
            nights=args.nights, edit_budget=args.edit_budget, limit_replay=args.limit_replay,
            limit_holdout=args.limit_holdout, limit_test=args.limit_test,
            samples=args.samples if args.samples is not None else PROFILES[args.scoring].samples, scoring=args.scoring,
            restarts=args.restarts, min_delta=args.min_delta, direct=not args.no_direct, workers=args.workers,
        )
        config.validate()
        seeds = load_seeds(Path(args.data_root), [n.strip() for n in args.seeds.split(",") if n.strip()])
        judges = {seed.name: _judge(seed, args) for seed in seeds}
    except (UsageError, ModelError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    progress = (lambda line: print(line, file=sys.stderr)) if args.verbose else None
    results = []
    try:
        for seed in seeds:
            result = SeedSession(seed, config, progress, judge=judges[seed.name]).transfer(source, target, optimizer)
            results.append(result)
            if not args.json:
                print(seed_line(run_to_json([result])["results"][0]), flush=True)
    except (ModelCallError, NoJudgeConfigured, CalibrationFailed) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    report = run_to_json(results)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(summary_line(report["results"]))
        for line in pair_lines(report["results"]):
            print(line)
        difference = price_difference(report["results"])
        if difference:
            print(difference)
        for line in judge_lines(report["results"]):
            print(line)
    return 0
