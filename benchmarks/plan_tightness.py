"""The plan rehearsed: `--plan`, then the same seeds recorded against answers of a working model's length (a
benchmark, not a test).

    .venv/bin/python benchmarks/plan_tightness.py [--design group-sequential|fixed] [SEED ...]

`tests/planning/test_plan_bounds.py` holds the plan to be a bound against the easy fake, whose answers are a few
tokens long, so there the dollars sent are 0.2%-1.8% of the dollars bound whatever the plan does. This
script asks the same question of the realistic provider (`benchmarks/realistic_provider.py`: answers of
300-2,500 characters, optimizer edits that apply, so nights try and accept candidates), per seed at the
default protocol (the group-sequential held-out design unless `--design fixed`) with the pairs
`bench-small -> bench-large` and back, both priced at $1 / $5 a million input / output tokens: `pytest --plan`
first (nothing is sent), then the recording itself under `--max-cost` (its ledger must equal the bill). The bill
is the provider's: every answer's usage, as the server billed it, x the price. Printed per seed and in total:
calls sent / bound, dollars paid / bound, the plan's expected figure, paid / expected (the rehearsal's goal:
within +-30%), and where each item's held-out looks stopped (tasks scored of the held-out tasks).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from user_recording import PAIRS, ProviderProcess, all_seeds

ROOT = Path(__file__).resolve().parent.parent
INPUT_USD, OUTPUT_USD = 1.0, 5.0  # a million tokens
PRICES = f'"bench-*" = {{ input = {INPUT_USD}, output = {OUTPUT_USD} }}'
GOAL = 0.30  # paid within +-30% of the expected figure


def _project(folder: Path, port: int, seed: str) -> None:
    shutil.copytree(ROOT / "seeds" / seed, folder / "seeds" / seed, ignore=shutil.ignore_patterns("__snapshots__"))
    (folder / "pytest.ini").write_text("[pytest]\ntestpaths = seeds\n")
    (folder / "pyproject.toml").write_text(
        "[tool.skilltransfer.models]\n"
        f'bench-small = "anthropic:bench-small@http://127.0.0.1:{port}"\n'
        f'bench-large = "openai:bench-large@http://127.0.0.1:{port}/v1"\n'
        f"[tool.skilltransfer.prices]\n{PRICES}\n")


def _pytest(folder: Path, *args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", "-p", "no:randomly",
               *(f"--pair={pair}" for pair in PAIRS), *args]
    return subprocess.run(command, cwd=folder, capture_output=True, text=True, check=False)


def billed_usd(seen: list[tuple]) -> float:
    """The provider's bill: each answer's usage (input, output tokens as it billed them) x the price."""
    return sum(request[4] * INPUT_USD + request[5] * OUTPUT_USD for request in seen) / 1e6


@dataclass
class Rehearsal:
    """One seed planned, then recorded."""

    seed: str
    sent: int
    calls_bound: int
    paid: float
    ledger: float
    bound: float
    expected: float
    stops: list[str]  # per item: "tasks/of reason"

    @property
    def ratio(self) -> float:
        return self.paid / self.expected


def measure(provider: ProviderProcess, seed: str, design: str) -> Rehearsal:
    """Plan `seed`, record it, and read the bill from the provider's log."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        _project(folder, provider.port, seed)
        planned = _pytest(folder, "--plan", f"--transfer-design={design}")
        total = next((re.split(r"\s{2,}", line.strip()) for line in planned.stdout.splitlines()
                      if line.startswith("total (shared phases once)")), None)
        if planned.returncode != 0 or total is None:
            raise RuntimeError(planned.stdout[-3000:] + planned.stderr[-3000:])
        provider.seen()
        run = _pytest(folder, "--record-mode=once", "--snapshot-update", "--max-cost=1000",
                      f"--transfer-design={design}", f"--skilltransfer-json={folder / 'r.json'}")
        seen = provider.seen()
        if not (folder / "r.json").is_file():
            raise RuntimeError(run.stdout[-3000:] + run.stderr[-3000:])
        report = json.loads((folder / "r.json").read_text())
    stops = [f"{(r.get('sequential') or {}).get('tasks')}/{(r.get('sequential') or {}).get('of')} "
             f"{(r.get('sequential') or {}).get('reason')}" for r in report["results"]]
    return Rehearsal(seed, len(seen), int(total[1]), billed_usd(seen), report["budget"]["charged_usd"],
                     float(total[4]), float(total[5]), stops)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--design", default="group-sequential", choices=("group-sequential", "fixed"))
    parser.add_argument("seeds", nargs="*", help="project seeds (default: every seed whose calls all go to the server)")
    args = parser.parse_args()
    rows = []
    with ProviderProcess(0.0, "realistic") as provider:
        for seed in tuple(args.seeds) or all_seeds():
            rows.append(measure(provider, seed, args.design))
    print(f"design: {args.design}; prices ${INPUT_USD:g} / ${OUTPUT_USD:g} a million input / output tokens; "
          "paid = the provider's usage x price")
    print(f"{'seed':<18} {'calls sent/bound':>17} {'$ paid/bound':>22} {'$ expected':>10} {'paid/expected':>13}  "
          "held-out tasks scored (per item)")
    for row in rows:
        print(f"{row.seed:<18} {row.sent:>5}/{row.calls_bound:<5} {row.sent / row.calls_bound:4.2f} "
              f"{row.paid:7.4f}/{row.bound:<8.4f} {row.paid / row.bound:4.2f} {row.expected:10.4f} {row.ratio:13.2f}  "
              f"{', '.join(row.stops)}")
    sent, bound, paid, usd_bound, expected = (sum(getattr(r, k) for r in rows)
                                              for k in ("sent", "calls_bound", "paid", "bound", "expected"))
    within = sum(abs(r.ratio - 1) <= GOAL for r in rows)
    print(f"{'all':<18} {sent:>5}/{bound:<5} {sent / bound:4.2f} {paid:7.4f}/{usd_bound:<8.4f} {paid / usd_bound:4.2f} "
          f"{expected:10.4f} {paid / expected:13.2f}  {within} of {len(rows)} seed(s) within +-{GOAL:.0%}")
    off = [r.seed for r in rows if abs(r.ledger - r.paid) > 0.01 * r.paid]
    print("the run's ledger equals the provider's bill (within 1%) on every seed" if not off else
          f"the run's ledger differs from the provider's bill on: {', '.join(off)}")


if __name__ == "__main__":
    main()
