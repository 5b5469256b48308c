"""xdist scheduling that sends every item of a seed to one worker, in collection order.

A seed's items share one `SeedSession` (its baselines and optimizations) and one open cassette,
so they must run in the same process, in the same order as without xdist: then `-n N` computes
exactly what `-n 0` does and sends no request twice. That holds for the auto-collected items and
for hand-written tests whose `skilltransfer` marker names the seed, wherever the seed lives
(under the rootdir or not, given as a path, by `--seeds-dir` or through `testpaths`).

A node id alone cannot say which seed a hand-written test uses, so each worker writes, when its
collection is done and before xdist reports it, a `{node id: seed folder}` map into the run folder the
controller made and named in `workerinput` (`write_scopes`, `state.run_folder`); the scheduler reads the map of the
worker whose collection it receives. This is xdist's own `LoadGroupScheduling` pattern (a
`LoadScopeScheduling` with another scope function); items outside any seed are their own scope,
distributed as with `--dist load`. A worker that cannot share the folder (a remote `--tx`) leaves
no map, and the scheduler then groups auto-collected items by their file node (the seed).

A worker starts on seeds as soon as its own collection is in: xdist's scope scheduling waits for
every worker's collection before it hands out the first scope, and the workers come up one after
another (xdist starts them in turn, each paying pytest's start-up and a collection), so the first
one used to sit idle until the last had collected. A worker whose collection arrives later gets
the seeds still waiting, once its collection is checked against the first one (a different
collection fails the run with xdist's own report of the difference, and that worker gets no items).
Which worker runs which seed never changes a result.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from xdist.report import report_collection_diff
from xdist.scheduler.loadscope import LoadScopeScheduling

from .collect import ITEM_PREFIX
from .state import run_folder


def scopes_folder(run: Path) -> Path:
    """Where the workers' scope maps go in the run folder (`state.run_folder`)."""
    return run / "scopes"


def write_scopes(config: pytest.Config, scopes: dict[str, str]) -> None:
    """On a worker: publish `{node id: seed folder}` for the controller (atomically)."""
    run = run_folder(config)
    if run is None or not hasattr(config, "workerinput"):
        return
    folder = scopes_folder(run)
    folder.mkdir(exist_ok=True)
    target = folder / f"{config.workerinput['workerid']}.json"  # type: ignore[attr-defined]
    partial = target.with_suffix(".partial")
    partial.write_text(json.dumps(scopes), encoding="utf-8")
    os.replace(partial, target)


def read_scopes(run: Path, worker_id: str) -> dict[str, str]:
    """On the controller: one worker's map, or {} when it wrote none."""
    path = scopes_folder(run) / f"{worker_id}.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


class SeedScheduling(LoadScopeScheduling):
    """Load balancing by seed for transfer items, by test for everything else."""

    def __init__(self, config: pytest.Config, log: Any = None) -> None:
        super().__init__(config, log)
        self._run = run_folder(config)
        self._scopes: dict[str, str] = {}

    @property
    def collection_is_completed(self) -> bool:
        """True once one worker's collection is in: scheduling starts with the workers that are ready."""
        return bool(self.registered_collections)

    def add_node_collection(self, node: Any, collection: Any) -> None:
        if self._run is not None and not self._scopes:
            self._scopes = read_scopes(self._run, node.gateway.id)
        super().add_node_collection(node, collection)
        if node not in self.registered_collections:  # a later worker whose collection differs: xdist skips it
            self._refuse(node, collection)

    def _refuse(self, node: Any, collection: Any) -> None:
        """Fail the run with xdist's report of the difference; the worker gets no items."""
        first = next(iter(self.registered_collections))
        message = report_collection_diff(self.collection, list(collection), first.gateway.id, node.gateway.id)
        self.config.hook.pytest_collectreport(
            report=pytest.CollectReport(nodeid=node.gateway.id, outcome="failed", longrepr=message, result=[]))
        node.shutdown()

    def schedule(self) -> None:
        """xdist's scope scheduling over the workers whose collection is in (called again as each
        later worker's collection arrives); the others wait for theirs."""
        waiting = {node: work for node, work in self.assigned_work.items() if node not in self.registered_collections}
        for node in waiting:
            del self.assigned_work[node]
        try:
            super().schedule()
        finally:
            self.assigned_work.update(waiting)

    def _split_scope(self, nodeid: str) -> str:
        scope = self._scopes.get(nodeid)
        if scope is not None:
            return scope
        prefix, sep, name = nodeid.rpartition("::")
        if sep and name.startswith(ITEM_PREFIX) and "::" not in prefix:
            return prefix
        return nodeid
