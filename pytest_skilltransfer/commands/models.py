"""`python -m pytest_skilltransfer models`: model aliases, the ids they resolve to, prices and recordings."""

from __future__ import annotations

import argparse
import sys
import tomllib
from pathlib import Path
from typing import Any

from ..cassettes.model_lock import LOCK_FILE, apply_lock, read_lock
from ..reports.inventory import rows


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m pytest_skilltransfer models",
                                     description="Model aliases, the ids they resolve to, prices and recordings.")
    parser.add_argument("--cassette-dir", default="cassettes", help="recordings and models.lock (default: cassettes)")
    args = parser.parse_args(argv)
    from ..models.registry import known_models
    from ..pricing.prices import configure_prices

    cassette_dir = Path(args.cassette_dir)
    try:
        project = _project_tables(Path("pyproject.toml"))
        if project.get("prices"):
            configure_prices(project["prices"])
        apply_lock(cassette_dir, project.get("models") or {})
        if project.get("models") and not read_lock(cassette_dir):
            from ..models.providers import configure_aliases

            configure_aliases(project["models"])
        table = rows(cassette_dir)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    header = ("alias", "resolves to", "price per Mtok", "recordings", "")
    widths = [max(len(r[i]) for r in [header, *table]) for i in range(5)]
    for row in [header, *table]:
        print("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip())
    print("\nother names:")
    for line in known_models():
        print(f"  {line}")
    print(f"\nunpriced ids: add them to [tool.skilltransfer.prices] in pyproject.toml; pins: {cassette_dir / LOCK_FILE}")
    return 0


def _project_tables(pyproject: Path) -> dict[str, Any]:
    if not pyproject.is_file():
        return {}
    try:
        return tomllib.loads(pyproject.read_text(encoding="utf-8")).get("tool", {}).get("skilltransfer", {})
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{pyproject}: invalid TOML: {exc}") from None
