"""The figures behind "The north-star matrix, planned" in docs/spend.md: the overnight run planned, and what
each cost lever saves.

    .venv/bin/python benchmarks/north_star_plan.py

The matrix: ten project seeds (alert-intake ... status-report), three copies each (30 seeds), x haiku->sonnet,
haiku->opus, luna->sol, at the default protocol, in the batch lane (`--transfer-batch --plan`: nothing is
called). Printed: the plan's total and breakdown as the run would print it, with the expected figure beside the
verdict floor; the same with the direct reference on demand; the totals under the fixed design (every held-out
task scored: the group-sequential design's share); and the totals were every seed to lower the agent's reply
limit (`max_tokens` in seed.toml).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SEEDS = ("alert-intake", "change-review", "changelog-writer", "docs-style", "howto-answers", "incident-summary",
         "postmortem-cause", "release-advisor", "review-tagger", "status-report")
PAIRS = ("haiku:sonnet", "haiku:opus", "luna:sol")
COPIES = 3
REPLY_LIMITS = (256, 128)  # a seed's own `max_tokens`, for seeds whose answers are short by design


def plan(folder: Path, *options: str) -> str:
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", "seeds", "--plan",
               "--transfer-batch", "-q",
               *(f"--pair={pair}" for pair in PAIRS), *options]
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True, check=False)
    items = sum(line.startswith("seeds/") for line in done.stdout.splitlines())
    if items != len(SEEDS) * COPIES * len(PAIRS):  # a seed that failed to load would silently shrink the matrix
        raise SystemExit(f"the plan covered {items} item(s), not {len(SEEDS) * COPIES * len(PAIRS)}:\n"
                         f"{done.stdout[-3000:]}{done.stderr[-2000:]}")
    return done.stdout


def summary(output: str) -> list[str]:
    keep = re.compile(r"^(total|direct references on demand|where the money goes|  by |expected \$)")
    return [re.sub(r"\s{2,}", "  ", line) for line in output.splitlines() if keep.match(line)]


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "pytest.ini").write_text("[pytest]\n")
        for name in SEEDS:
            for copy in range(1, COPIES + 1):
                shutil.copytree(ROOT / "seeds" / name, folder / "seeds" / f"{name}-{copy}",
                                ignore=shutil.ignore_patterns("__snapshots__"))
        print(f"north-star matrix: {len(SEEDS) * COPIES} seeds x {', '.join(PAIRS)}, batch lane, default protocol")
        print("\n".join(summary(plan(folder))))
        print("\nwith the direct reference on demand (--transfer-direct-on-demand):")
        print("\n".join(summary(plan(folder, "--transfer-direct-on-demand"))))
        for options in ((), ("--transfer-direct-on-demand",)):
            print(f"\nthe fixed design (--transfer-design=fixed{', ' if options else ''}{', '.join(options)}): every "
                  "held-out task scored")
            print("\n".join(line for line in summary(plan(folder, "--transfer-design=fixed", *options))
                            if line.startswith(("total", "expected"))))
        for limit in REPLY_LIMITS:
            for seed in (folder / "seeds").iterdir():
                config = ROOT / "seeds" / seed.name.rpartition("-")[0] / "seed.toml"
                original = config.read_text().splitlines(keepends=True) if config.is_file() else []
                kept = "".join(line for line in original if not line.startswith("max_tokens"))
                (seed / "seed.toml").write_text(f"max_tokens = {limit}\n{kept}")  # top-level keys come first
            print(f"\nwith every seed's max_tokens = {limit} (the agent's reply limit; default 512):")
            print("\n".join(line for line in summary(plan(folder)) if line.startswith("total")))


if __name__ == "__main__":
    main()
