"""Which model files of a seed's cassette a re-record may prune of the interactions its run did not use.

A re-record (`--record-mode=new_episodes` or `all`) keeps in a model file only what the run replayed
or recorded, whenever every item that could use that file ran to a result in this process: decided
per model file, not per command line. The items that could use a seed's files are the items of this
session for the seed, the ones deselected (`-k`, `--lf`), and, when the command line names the
matrix (`--source/--target`, `--pair`), the items the configured matrix defines (the ini matrix with
the seed's own pairs). An item uses the files of its source, target and optimizer; the judge's, the
configured optimizers' and the validation models' (`--validate-on`) files are shared by every item. A file used by an item that did not run
(deselected, errored before a result, on another xdist worker, or outside a command-line matrix) is
spared; a run in which every such item ran prunes every file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterable

import pytest

DESELECTED = pytest.StashKey[list[Any]]()  # the specs of deselected transfer items
Names = Callable[[Iterable[str]], frozenset[str] | None]  # model names -> their model files (None: unknown)


def note_deselected(config: pytest.Config, specs: list[Any]) -> None:
    """Remember the specs of deselected transfer items."""
    config.stash.setdefault(DESELECTED, []).extend(specs)


def spared_files(item: pytest.Item, seed: Path, spec_of: Callable[[pytest.Item], Any],
                 finished: Callable[[pytest.Item], bool], configured: list[tuple[str, str]],
                 shared: list[str], files_of: Names) -> frozenset[str] | None:
    """The model files of `seed` pruning must not touch (call when its last item has run); None when it
    may touch none (a model name that cannot be resolved)."""
    mine = [other for other in item.session.items if _seed(spec_of(other)) == seed]
    ran = [spec_of(other) for other in mine if finished(other)]
    pending = [spec_of(other) for other in mine if not finished(other)]
    pending += [spec for spec in item.config.stash.get(DESELECTED, []) if _seed(spec) == seed]
    if not ran:
        return None  # nothing ran to a result: nothing is known to be stale
    ran_pairs = {(spec.source, spec.target) for spec in ran}
    names = [[spec.source, spec.target] + ([spec.optimizer] if spec.optimizer else []) for spec in pending]
    names += [list(pair) for pair in configured if pair not in ran_pairs]
    if not names:
        return frozenset()
    spared: set[str] = set()
    for group in names + [shared]:
        files = files_of(group)
        if files is None:
            return None
        spared |= files
    return frozenset(spared)


def _seed(spec: Any) -> Path | None:
    return seed_key(spec)


def seed_key(spec: Any) -> Path | None:
    return spec.seed_path.resolve() if spec is not None else None
