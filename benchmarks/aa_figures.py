"""The A/A check's false-positive rate where it can fail: the simulator, whose answers vary with the sample id.

    .venv/bin/python benchmarks/aa_figures.py           # every project seed, sim-small and sim-large, 4 repeats
    .venv/bin/python benchmarks/aa_figures.py 10 --model smollm2-135m --temperature 0.8 --seed review-tagger-other-example
        # the sampled A/A on the local SmolLM2 server, live (SKILLTRANSFER_LOCAL_URL, else one is started): 10 checks

On SmolLM2 the recorded A/A checks cannot fail: decoding is greedy, so the two scorings give the same answers by
construction. On the simulator every sample id draws its own answer (its noise is keyed by the request, sample id
included), so the same skill scored twice differs task by task and the check can report an effect that is not
there. For each project seed and simulated model, the seed's skill is scored with sample ids 0 and k (k = 1 ... R)
through `engine.aa.aa_check` (the A/A fixture's code) and the share of checks whose exact 95% interval excludes 0
is printed (goal: at most 0.05).

With `--model` and `--temperature` the same runs on a real model, sampled: each check scores the seed's learned-skill
stand-in (its own skill) twice at that temperature, sample ids from 0 and from k (the sample id seeds the sampler), live
against the server, nothing recorded. The share of checks reporting an effect is that model's false-positive rate at
this temperature, printed with its exact 95% upper bound.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_skilltransfer.engine.aa import aa_check  # noqa: E402
from pytest_skilltransfer.engine.protocol import SeedSession  # noqa: E402
from pytest_skilltransfer.engine.results import ProtocolConfig  # noqa: E402
from pytest_skilltransfer.engine.seeds import load_seed  # noqa: E402
from pytest_skilltransfer.models.registry import resolve_model  # noqa: E402

SEEDS = Path(__file__).resolve().parents[1] / "seeds"
MODELS = ("sim-small", "sim-large")


def upper_bound(false: int, checks: int, level: float = 0.95) -> float:
    """The exact (Clopper-Pearson) one-sided upper bound of a rate seen `false` times in `checks`."""
    from scipy.stats import beta

    return 1.0 if false >= checks else float(beta.ppf(level, false + 1, checks - false))


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repeats", nargs="?", type=int, default=4, help="sample-id offsets per seed and model")
    parser.add_argument("--model", action="append", help="a model name (default: sim-small and sim-large)")
    parser.add_argument("--temperature", type=float, help="sample both scorings at this temperature")
    parser.add_argument("--seed", action="append", help="a project seed folder name (default: every seed)")
    args = parser.parse_args(argv)
    names = tuple(args.model or MODELS)
    wanted = set(args.seed or ())
    checks = false = differ = 0
    with _served(names):
        for folder in sorted(p for p in SEEDS.iterdir() if (p / "SKILL.md").is_file() or (p / "seed.toml").is_file()):
            if wanted and folder.name not in wanted or not wanted and not (folder / "SKILL.md").is_file():
                continue
            seed = load_seed(folder)
            if any(c.op == "rubric" for t in seed.test for c in t.judge.checks):
                continue  # rubric checks need a judge model: left out
            for name in names:
                model = resolve_model(name)
                for k in range(1, args.repeats + 1):
                    session = SeedSession(seed, ProtocolConfig(samples=k))
                    check = aa_check(session, model, seed.skill, temperature=args.temperature)
                    checks += 1
                    false += not check.no_effect
                    differ += check.identical < len(check.first.tasks)
                    if args.model:
                        print(f"  {folder.name} k={k}: {check.summary()}", flush=True)
    sampled = f" at temperature {args.temperature:g}" if args.temperature is not None else ""
    print(f"A/A checks on {', '.join(names)}{sampled}: {checks} ({'seeds ' + ', '.join(sorted(wanted)) if wanted else 'seeds without rubric checks'} x "
          f"{', '.join(names)} x {args.repeats} sample-id offsets)")
    print(f"  checks whose answers differ between the two scorings: {differ}/{checks}")
    print(f"  false positives (the 95% interval excludes 0): {false}/{checks} = {false / max(checks, 1):.3f} "
          f"(exact 95% upper bound {upper_bound(false, max(checks, 1)):.3f})")


@contextlib.contextmanager
def _served(names: tuple[str, ...]):
    """The local model's server for the run, when a name is a local model and none is named by URL."""
    from pytest_skilltransfer.models import local

    if not any(n.startswith(local.LOCAL_MODEL_ALIAS) for n in names) or local.env_base_url():
        yield
        return
    import os

    with local.local_server() as server:
        os.environ[local.URL_ENV] = server.base_url
        try:
            yield
        finally:
            os.environ.pop(local.URL_ENV, None)


if __name__ == "__main__":
    main(sys.argv[1:])
