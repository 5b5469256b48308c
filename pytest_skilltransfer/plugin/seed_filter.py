"""`--only-seed NAME`: keep only one seed's items, so one command re-records a seed completely.

A seed's items are its matrix items (the ini matrix with the seed's own `pairs`) and every
hand-written test whose marker names it. Everything else is deselected, which never counts against
the kept seed's pruning (only a deselected item *of* a seed keeps its cassette from being pruned).
"""

from __future__ import annotations

from typing import Any, Callable

import pytest


def keep_only_seeds(config: pytest.Config, items: list[pytest.Item], names: tuple[str, ...],
                    spec_of: Callable[[pytest.Item], Any]) -> None:
    """Deselect every item that is not a transfer item of one of the seeds `names` (folder names)."""
    def seed_name(item: pytest.Item) -> str | None:
        spec = spec_of(item)
        return spec.seed_path.name if spec is not None else None

    found = {name for name in map(seed_name, items) if name is not None}
    unknown = [name for name in names if name not in found]
    if unknown:
        from .spellings import flag

        known = ", ".join(sorted(found)) or "none"
        raise pytest.UsageError(f"{flag(config, 'only-seed')}: no item of seed(s) {', '.join(unknown)} was collected "
                                f"(seeds with items in this run: {known}); run from the repository root, or name the "
                                "seed's folder and the test files that name it")
    kept = [item for item in items if seed_name(item) in names]
    dropped = [item for item in items if seed_name(item) not in names]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
