"""The figures behind "Portable skills" in docs/protocol.md: every project seed on the simulator, in both
directions, optimized on the source alone and against the target listed with `--validate-on`.

    .venv/bin/python benchmarks/portable_figures.py                # every seed, both directions
    .venv/bin/python benchmarks/portable_figures.py status-report  # some seeds
    .venv/bin/python benchmarks/portable_figures.py --json out.json
    .venv/bin/python benchmarks/portable_figures.py --nights 4 status-report  # more nights

Per seed and pair (the default protocol: 2 nights unless --nights, 3 val tasks, every held-out task): the
target's baseline, the single-model and multi-model skill on the target, the family's three comparisons (the
item's exact paired test, Holm over the three), the outcome word, the extra calls, how each skill does on the
SOURCE's held-out tasks and on the source's whole training pool (train + val, in-sample: the objective the
source optimizes) as seed skill / single / multi (whether the source still gains), and the nights the listed
model blocked with the kinds of check that dropped. The source's held-out and pool scores are measurements for
this page only; the protocol never scores the source on held-out tasks.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_skilltransfer.engine.protocol import SeedSession
from pytest_skilltransfer.engine.results import ProtocolConfig  # noqa: E402
from pytest_skilltransfer.engine.seeds import discover_seeds, load_seed  # noqa: E402
from pytest_skilltransfer.evidence.stats import clustered_gain  # noqa: E402
from pytest_skilltransfer.models.registry import resolve_model  # noqa: E402
from pytest_skilltransfer.reports.result_json import result_to_json  # noqa: E402

PAIRS = (("sim-small", "sim-large"), ("sim-large", "sim-small"))
SEEDS = Path(__file__).resolve().parents[1] / "seeds"


def _interval(gain: dict) -> str:
    return f"{gain['mean']:+.2f} [{gain['ci_low']:+.2f}, {gain['ci_high']:+.2f}]"


def figures(seed_name: str, source: str, target: str, nights: int) -> dict:
    seed = load_seed(SEEDS / seed_name)
    session = SeedSession(seed, ProtocolConfig(nights=nights))
    src, tgt = resolve_model(source), resolve_model(target)
    optimizer = resolve_model(seed.optimizer) if seed.optimizer else None  # a seed's optimizer, as the items use it
    result = session.transfer(src, tgt, optimizer, (tgt,))
    data = result_to_json(result, 0)
    hard = lambda skill: [t.hard for t in session.evaluate(src, skill, "test").tasks]  # noqa: E731
    skills = {"seed": seed.skill, "single": result.learned.learned_skill,
              "multi": result.portable[0].learned.learned_skill}
    on_source = {arm: hard(skill) for arm, skill in skills.items()}
    session.splits["pool"] = seed.train + seed.val
    source_pool = {arm: round(session.evaluate(src, skill, "pool").gate_score, 3) for arm, skill in skills.items()}
    clusters = [t.cluster for t in result.baseline.tasks]
    source_gain = {arm: clustered_gain(on_source["seed"], [on_source[arm]], clusters).as_dict()
                   for arm in ("single", "multi")}
    return {"seed": seed_name, "source": source, "target": target, "baseline": data["baseline_target"],
            "single": data["transferred"], "multi": data["portable"]["transferred"]["hard"]["mean"],
            "family": data["portable"]["family"], "outcome": data["portable"]["outcome"],
            "extra_calls": data["portable"]["extra_cost"]["calls"],
            "blocked": [f"{n['night']} ({','.join(c for v in n['validation'] for c in v['dropped_checks']) or 'gate'})"
                        for n in data["portable"]["optimization"]["nights"] if n.get("blocked_by")],
            "source_pool": source_pool,
            "source_heldout": {arm: round(sum(v) / len(v), 3) for arm, v in on_source.items()},
            "source_gain": source_gain}


def main(argv: list[str]) -> None:
    out = None
    nights = ProtocolConfig().nights
    if "--json" in argv:
        at = argv.index("--json")
        out, argv = argv[at + 1], argv[:at] + argv[at + 2:]
    if "--nights" in argv:
        at = argv.index("--nights")
        nights, argv = int(argv[at + 1]), argv[:at] + argv[at + 2:]
    names = argv or [p.name for p in discover_seeds(SEEDS)]
    rows = [figures(name, s, t, nights) for s, t in PAIRS for name in names]
    width = max(len(r["seed"]) for r in rows) + 1
    print(f"{'seed':<{width}} {'pair':<23} {'base':>4} {'single':>6} {'multi':>5}  {'single - base':<21} "
          f"{'multi - base':<21} {'multi - single':<21} {'p Holm':>6}  {'outcome':<19} {'extra':>5}  "
          f"{'on source':<15} {'source pool':<15} blocked nights (kind of check)")
    for r in rows:
        c = {x["name"]: x for x in r["family"]["comparisons"]}
        s, pool = r["source_heldout"], r["source_pool"]
        print(f"{r['seed']:<{width}} {r['source'] + ' -> ' + r['target']:<23} {r['baseline']:>4.2f} {r['single']:>6.2f} "
              f"{r['multi']:>5.2f}  {_interval(c['single']):<21} {_interval(c['multi']):<21} "
              f"{_interval(c['multi_vs_single']):<21} {c['multi_vs_single']['p_holm']:>6.3f}  {r['outcome']:<19} "
              f"{r['extra_calls']:>5}  {s['seed']:.2f}/{s['single']:.2f}/{s['multi']:.2f} "
              f"{pool['seed']:.2f}/{pool['single']:.2f}/{pool['multi']:.2f}  {', '.join(r['blocked']) or '-'}")
    if out:
        Path(out).write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1:])
