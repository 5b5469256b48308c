"""The collected transfer items with their specs and seeds, for the whole-run views (`--plan`'s decidability, the
progress line's critical path): one walk, one rule for a seed that does not load."""

from __future__ import annotations

from typing import Any, Callable, Iterator

import pytest


def seeded_items(runner: Any, items: list[pytest.Item],
                 spec_of: Callable[[pytest.Item], Any]) -> Iterator[tuple[pytest.Item, Any, Any]]:
    """(item, spec, seed) of every transfer item, in collection order. An item whose seed is invalid (`SeedError`)
    is left out: its seed's own collection error reports it. Any other error surfaces."""
    from ..engine.seed_data import SeedError

    for item in items:
        spec = spec_of(item)
        if spec is None:
            continue
        try:
            seed = runner.seed(spec.seed_path)
        except SeedError:
            continue
        yield item, spec, seed
