"""xdist scheduling that sends all items of a seed to one worker, in collection order.

A seed's items share one `SeedSession` (its baselines and optimizations), so they must run in the
same process, in the same order as without xdist: then `-n N` computes exactly what `-n 0` does.
This is xdist's own `LoadGroupScheduling` pattern (a `LoadScopeScheduling` with another scope
function): an auto-collected item `<seed folder>::transfer[...]` is scoped by its seed folder, and
every other test is its own scope, distributed as with `--dist load`. (`--dist loadgroup` with
`xdist_group` marks does not group on pytest 9.2, pytest-dev/pytest-xdist#1386.)
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import pytest
from xdist.scheduler.loadscope import LoadScopeScheduling

from .collect import ITEM_PREFIX, is_collectable_seed


class SeedScheduling(LoadScopeScheduling):
    """Load balancing by seed for transfer items, by test for everything else."""

    def __init__(self, config: pytest.Config, log: Any = None) -> None:
        super().__init__(config, log)
        root = config.rootpath

        @lru_cache(maxsize=None)
        def is_seed(prefix: str) -> bool:
            return is_collectable_seed(root / prefix)

        self._is_seed = is_seed

    def _split_scope(self, nodeid: str) -> str:
        prefix, sep, name = nodeid.rpartition("::")
        if sep and name.startswith(ITEM_PREFIX) and "::" not in prefix and self._is_seed(prefix):
            return prefix
        return nodeid
