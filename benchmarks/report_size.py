"""Report sizes at scale: the JSON report and the HTML page of COPIES copies of a project seed.

    .venv/bin/python benchmarks/report_size.py              # 200 copies, 2 pairs: 400 items, about a minute

The copies of `seeds/support-triage` (50 tasks; 2 simulator pairs, so every answer is made in-process)
are run with `CI=true pytest -n 0 --no-snapshots --skilltransfer-json=r.json.gz --skilltransfer-html=r.html`.
The page's size is set against the same page with every item's answers written inline again (each
compressed store replaced by the HTML it unfolds to: the page as it was before the stores), and the
`.json.gz` against the plain JSON it holds (what `--skilltransfer-json=r.json` writes).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SEED = "support-triage"
PAIRS = "sim-small:sim-large sim-large:sim-small"
STORE = re.compile(r'<div class="answer-store" data-z="[A-Za-z0-9+/=]*">.*?</div>', re.S)

Row = tuple[str, str, str]


def _mb(size: int) -> str:
    return f"{size / 1e6:.1f} MB"


def report_size(work: Path, copies: int = 200) -> list[Row]:
    """Rows for benchmarks/run.py: page and JSON sizes of `copies` seeds x 2 pairs, before and after."""
    from pytest_skilltransfer.guards.report_files import read_text
    from pytest_skilltransfer.reports.html_item import unfold

    project = work / f"report-size-{copies}"
    for n in range(copies):
        shutil.copytree(ROOT / "seeds" / SEED, project / "seeds" / f"{SEED}-{n:03d}",
                        ignore=shutil.ignore_patterns("__snapshots__"))
    (project / "pytest.ini").write_text(f"[pytest]\ntestpaths = seeds\nskilltransfer_pair = {PAIRS}\n")
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-n", "0", "--no-snapshots",
                           "--skilltransfer-json=r.json.gz", "--skilltransfer-html=r.html"],
                          cwd=project, capture_output=True, text=True, env={**os.environ, "CI": "true"})
    wall = time.perf_counter() - start
    page, packed = project / "r.html", project / "r.json.gz"
    if not page.is_file() or not packed.is_file():
        raise RuntimeError(done.stdout[-2000:] + done.stderr[-2000:])
    text = page.read_text(encoding="utf-8")
    items = text.count('<details class="item"')
    inline = STORE.sub(lambda m: unfold(m.group(0)), text)
    size, before = len(text.encode()), len(inline.encode())
    plain = len(read_text(packed).encode())
    return [(f"HTML page, {copies} copies of seeds/{SEED} x 2 pairs ({items} items; run {wall:.0f} s)",
             f"{_mb(size)} ({size / items / 1000:.0f} KB per item, {text.count('<details')} <details> in the file) "
             f"vs {_mb(before)} with the answers inline ({before / items / 1000:.0f} KB per item, "
             f"{inline.count('<details')} <details>)", f"{size / before:.2f}x (goal <= 10 MB)"),
            (f"JSON report, same run", f"--skilltransfer-json=r.json.gz {_mb(packed.stat().st_size)} vs r.json "
             f"{_mb(plain)}", f"{packed.stat().st_size / plain:.2f}x (goal <= 10 MB)")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=200, help="copies of the seed (default 200)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="skilltransfer-bench-") as tmp:
        for row in report_size(Path(tmp), args.copies):
            print("  ".join(row))


if __name__ == "__main__":
    main()
