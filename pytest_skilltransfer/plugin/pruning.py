"""When a seed's cassette may drop the interactions its run did not use.

A re-record (`--record-mode=new_episodes` or `all`) keeps in the seed's cassette only what the run
replayed or recorded, but only when the run covered the seed completely: every item of the seed
that the configured matrix defines (the ini matrix with the seed's own pairs, and hand-written
tests naming it) ran in this process to a result. A run that names the matrix on its command line
(`--pair`, as the re-record hint of one item does), deselects any of the seed's items (`-k`,
`--lf`), errors before a result, or runs the seed's items on several xdist workers prunes nothing:
interactions of items it did not run are never touched.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pytest

DESELECTED_SEEDS = pytest.StashKey[set[Path]]()


def note_deselected(config: pytest.Config, items: list[pytest.Item], seed_of: Callable[[pytest.Item], Path | None]) -> None:
    """Remember the seeds of deselected transfer items."""
    seeds = config.stash.setdefault(DESELECTED_SEEDS, set())
    seeds.update(seed for seed in map(seed_of, items) if seed is not None)


def may_prune(item: pytest.Item, seed: Path, matrix_from_cli: bool, seed_of: Callable[[pytest.Item], Path | None],
              finished: Callable[[pytest.Item], bool]) -> bool:
    """Whether the run covered `seed` completely (call when its last item has run)."""
    if matrix_from_cli or seed in item.config.stash.get(DESELECTED_SEEDS, set()):
        return False
    items = [other for other in item.session.items if seed_of(other) == seed]
    return bool(items) and all(finished(other) for other in items)


def seed_key(spec: Any) -> Path | None:
    return spec.seed_path.resolve() if spec is not None else None
