"""The lock that pins the model ids a folder's recordings used (`<cassette dir>/models.lock`).

Built-in aliases follow the installed SDK (`sonnet` is the newest Claude Sonnet id it lists), so an
SDK upgrade would move them, and every recording would miss. A run that records therefore pins each
built-in alias it used in `models.lock` (TOML, `alias = "provider:id"`, committed with the cassettes);
the plugin and the CLI resolve through the lock before the SDK, the project table
`[tool.skilltransfer.models]` still overriding both. To move an alias on purpose: delete its line and
re-record.
"""

from __future__ import annotations

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
