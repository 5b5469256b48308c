"""How tight the plan is against answers of a working model's length (a benchmark, not a test).

    .venv/bin/python benchmarks/plan_tightness.py [SEED ...]

`tests/planning/test_plan_bounds.py` holds the plan to be a bound against the easy fake, whose answers are a few
tokens long, so there the dollars sent are 0.2%-1.8% of the dollars bound whatever the plan does. This
script asks the same question of the realistic provider (`benchmarks/realistic_provider.py`: answers of
300-2,500 characters, optimizer edits that apply, so nights try and accept candidates), per seed at the
default protocol with the pairs `bench-small -> bench-large` and back, both priced at $1 / $5 a million
input / output tokens: `pytest --plan` first (nothing is sent), then the recording itself under
`--max-cost` (its ledger is the bill). Printed per seed and in total: calls sent / bound, dollars sent /
bound, and dollars sent / the plan's expected figure.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from user_recording import PAIRS, ProviderProcess, all_seeds

ROOT = Path(__file__).resolve().parent.parent
PRICES = '"bench-*" = { input = 1.0, output = 5.0 }'


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


def measure(provider: ProviderProcess, seed: str) -> tuple[int, int, float, float, float]:
    """(calls sent, calls bound, dollars sent, dollars bound, dollars expected) for one seed."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        _project(folder, provider.port, seed)
        planned = _pytest(folder, "--plan")
        total = next((re.split(r"\s{2,}", line.strip()) for line in planned.stdout.splitlines()
                      if line.startswith("total (shared phases once)")), None)
        if planned.returncode != 0 or total is None:
            raise RuntimeError(planned.stdout[-3000:] + planned.stderr[-3000:])
        provider.seen()
        run = _pytest(folder, "--record-mode=once", "--snapshot-update", "--max-cost=1000",
                      f"--skilltransfer-json={folder / 'r.json'}")
        sent = len(provider.seen())
        if not (folder / "r.json").is_file():
            raise RuntimeError(run.stdout[-3000:] + run.stderr[-3000:])
        spent = json.loads((folder / "r.json").read_text())["budget"]["charged_usd"]
    return sent, int(total[1]), spent, float(total[4]), float(total[5])


def main() -> None:
    seeds = tuple(sys.argv[1:]) or all_seeds()
    rows = []
    with ProviderProcess(0.0, "realistic") as provider:
        for seed in seeds:
            rows.append((seed, *measure(provider, seed)))
    print(f"{'seed':<22} {'calls sent/bound':>18} {'dollars sent/bound':>24} {'sent/expected':>14}")
    for seed, sent, bound, spent, usd_bound, expected in rows:
        print(f"{seed:<22} {sent:>6}/{bound:<6} {sent / bound:5.2f} {spent:8.4f}/{usd_bound:<8.4f} {spent / usd_bound:5.2f} "
              f"{spent / expected:13.2f}")
    sent, bound, spent, usd_bound, expected = (sum(row[i] for row in rows) for i in range(1, 6))
    print(f"{'all':<22} {sent:>6}/{bound:<6} {sent / bound:5.2f} {spent:8.4f}/{usd_bound:<8.4f} {spent / usd_bound:5.2f} "
          f"{spent / expected:13.2f}")


if __name__ == "__main__":
    main()
