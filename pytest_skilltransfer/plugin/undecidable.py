"""Decidability up front: the items of a run that can never be a finding of its family, said once at collection
and in `--plan` (`evidence.decidability`)."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Callable

import pytest


@dataclass(frozen=True)
class Undecidable:
    """One item of the run's family that cannot be a finding in it, and what would let it."""

    nodeid: str
    seed: str
    pair: str
    units: int
    unit: str  # "held-out task(s)" or "cluster(s)"
    smallest_p: float
    family: int
    needed: int | None

    def text(self) -> str:
        need = (f"{self.needed} {self.unit} would let it" if self.needed is not None
                else "no number of them up to 400 would")
        return (f"its smallest possible p-value, {self.smallest_p:.3g} with {self.units} "
                f"{self.unit}, cannot pass the bar 0.05 / {self.family} of this run's family (Bonferroni over {self.family} item(s), FWER 5%), so it can never be "
                f"counted as a transfer or a harm here; {need}")


def units_of(seed: Any, limit_test: int) -> tuple[int, str]:
    """The test's units of a seed as a run uses them: its held-out tasks (capped by --limit-test), or their
    clusters when it names any."""
    from ..engine.protocol import capped
    from ..evidence.stats import cluster_count, is_clustered

    tasks = capped(seed.test, limit_test, seed.split.seed)
    clusters = [t.cluster for t in tasks]
    if is_clustered(clusters):
        return cluster_count(clusters), "cluster(s)"
    return len(tasks), "held-out task(s)"


def undecidable_items(runner: Any, items: list[pytest.Item], spec_of: Callable[[pytest.Item], Any],
                      within: float = 1.0) -> list[Undecidable]:
    """The run's family (one hypothesis per seed, pair and optimizer, as the summary counts them) and, of its
    items, those that no outcome lets be a finding in it, each with its first node id; only those whose
    smallest p-value is at most `within` (the units each needs are searched for those alone)."""
    from ..evidence.decidability import smallest_p, unreachable
    from .seed_walk import seeded_items

    family: dict[tuple[str, str, str, str], tuple[str, int, str]] = {}
    for item, spec, seed in seeded_items(runner, items, spec_of):
        key = (seed.name, spec.source, spec.target, spec.optimizer or "")
        if key not in family:
            family[key] = (item.nodeid, *units_of(seed, runner.settings.protocol.limit_test))
    keys = list(family)
    restarts = runner.settings.protocol.restarts
    units = [family[k][1] for k in keys]
    found = unreachable(units, [restarts] * len(keys), among=[smallest_p(n, restarts) <= within for n in units])
    return [Undecidable(family[keys[i]][0], keys[i][0], f"{keys[i][1]} -> {keys[i][2]}", units[i], family[keys[i]][2],
                        smallest_p(units[i], restarts), len(keys), needed) for i, needed in sorted(found.items())]


def warn_undecidable(runner: Any, items: list[pytest.Item], spec_of: Callable[[pytest.Item], Any]) -> None:
    """One warning per item that can never be a finding of this run's family (an item whose units cannot
    reach significance even alone was already named by its seed's own collection warning)."""
    from ..evidence.decidability import ALPHA

    for found in undecidable_items(runner, items, spec_of, within=ALPHA):
        warnings.warn(pytest.PytestWarning(f"{found.nodeid}: {found.text()}"), stacklevel=1)


def plan_lines(found: list[Undecidable]) -> list[str]:
    """For `--plan`: the items that can never be a finding of this run's family (nothing when every item can)."""
    if not found:
        return []
    return ["", f"decidability: {len(found)} of this run's {found[0].family} item(s) can never be a finding of its family (Bonferroni):",
            *(f"  {f.nodeid}: {f.text()}" for f in found)]
