"""Model names as a project sees them, and the lock that pins the ids its recordings used.

`python -m pytest_skilltransfer models` lists every alias (built-in, pinned or from
`[tool.skilltransfer.models]`), the provider and id it resolves to, the price per million tokens and
the seeds whose cassettes hold calls to that id, then the other model families (simulator, ...).

Built-in aliases follow the installed SDK (`sonnet` is the newest Claude Sonnet id it lists), so an
SDK upgrade would move them, and every recording would miss. A run that records therefore pins each
built-in alias it used in `<cassette dir>/models.lock` (TOML, `alias = "provider:id"`, committed with
the cassettes); the plugin and the CLI resolve through the lock before the SDK, the project table
`[tool.skilltransfer.models]` still overriding both. To move an alias on purpose: delete its line
and re-record.
"""

from __future__ import annotations

import argparse
import sys
import tomllib
from pathlib import Path
from typing import Any

LOCK_FILE = "models.lock"
LOCK_HEADER = ("# The model ids the recordings in this folder were made with, written by pytest-skilltransfer when it\n"
               "# records. A pinned alias keeps resolving to its id after an SDK upgrade; to move it, delete its line\n"
               "# and re-record.\n")


def read_lock(cassette_dir: Path) -> dict[str, str]:
    """The pinned aliases (empty when there is no lock); a damaged lock is an error naming the file."""
    path = cassette_dir / LOCK_FILE
    if not path.is_file():
        return {}
    try:
        table = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: not valid TOML ({exc}); delete it and re-record to write it again") from None
    return {str(k): str(v) for k, v in table.items() if isinstance(v, str)}


def apply_lock(cassette_dir: Path, project_models: dict[str, Any]) -> dict[str, str]:
    """Resolve the pinned aliases through the lock (the project's table still wins); returns the pins."""
    pins = read_lock(cassette_dir)
    if pins:
        from ..models.providers import configure_aliases

        configure_aliases({**{k: v for k, v in pins.items() if k not in project_models}, **project_models})
    return pins


def pin(cassette_dir: Path, names: list[str]) -> list[str]:
    """Pin the built-in SDK aliases among `names` (under a file lock; other entries kept). Returns
    the aliases newly pinned."""
    from filelock import FileLock

    from ..models.aliases import lookup, sdk_aliases

    builtin = sdk_aliases()
    wanted = {}
    for name in names:
        target = lookup(name)
        if name in builtin and not isinstance(target, (str, type(None))):
            wanted[name] = f"{target.provider}:{target.model_id}"
    if not wanted:
        return []
    cassette_dir.mkdir(parents=True, exist_ok=True)
    with FileLock(str(cassette_dir / f".{LOCK_FILE}.lock")):
        pins = read_lock(cassette_dir)
        new = [name for name in sorted(wanted) if name not in pins]
        if new:
            pins.update({name: wanted[name] for name in new})
            body = "".join(f'{name} = "{spec}"\n' for name, spec in sorted(pins.items()))
            (cassette_dir / LOCK_FILE).write_text(LOCK_HEADER + body, encoding="utf-8")
    return new


def rows(cassette_dir: Path) -> list[tuple[str, str, str, str, str]]:
    """(alias, provider:id, price, recordings, note) for every alias."""
    from ..cassettes.store import file_name
    from ..models.aliases import all_aliases, lookup, sdk_aliases
    from ..pricing.prices import price_of

    pins = read_lock(cassette_dir)
    seeds = sorted(p for p in cassette_dir.iterdir() if p.is_dir()) if cassette_dir.is_dir() else []
    table = []
    for alias in all_aliases():
        target = lookup(alias)
        while isinstance(target, str):
            target = lookup(target)
        if target is None:
            continue
        price = price_of(target.model_id)
        cost = "-" if price is None else f"${price[0]:g} in / ${price[1]:g} out"
        recorded = [s.name for s in seeds if (s / file_name(target.model_id)).is_file()]
        note = ""
        if alias in pins:
            newest = sdk_aliases().get(alias, "").split(":", 1)[-1]
            note = "pinned" + (f" (the SDK's newest is {newest})" if newest and newest != target.model_id else "")
        table.append((alias, f"{target.provider}:{target.model_id}", cost,
                      f"{len(recorded)} seed(s)" if recorded else "-", note))
    return table


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
