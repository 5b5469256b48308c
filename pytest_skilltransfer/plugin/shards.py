"""Shards that keep seeds whole: `--shard-id I --num-shards N` runs a deterministic part of the items.

Units: every item of one seed (the matrix items and the hand-written tests naming that seed) is
one unit, so a seed's baseline and optimizations are computed in one shard only; any other test is
a unit with the other tests of its file. Units are weighed by their number of items or, when a
durations file exists (pytest-split's `.test_durations` format: a JSON object of node id ->
seconds, written by `pytest --store-durations` with pytest-split installed), by their recorded
seconds, an unknown item counting as the mean known one. They are dealt heaviest first to the
lightest shard (ties: the lower key, the lower shard id), so every machine and every xdist worker
computes the same split from the same collection. Ids run from 0 to N-1, as in pytest-shard.

Selection runs after `-k`/`-m`, so shards balance what actually runs; items of other shards are
reported as deselected. The JSON report of a shard carries its `shard` record (id, count, the
seeds and items it ran, the items that failed or errored) so that `python -m pytest_skilltransfer
merge` can check the set is complete and fail for a failed test as the shard did.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from ..guards.terminal import safe

DURATIONS_FILE = ".test_durations"
WORKER_KEY = "skilltransfer_shard"


@dataclass(frozen=True)
class ShardPlan:
    """Which shard this run is, and what the units are weighed by."""

    shard_id: int
    num_shards: int
    durations: dict[str, float] = field(default_factory=dict)
    durations_path: Path | None = None

    @property
    def weighed_by(self) -> str:
        return "durations" if self.durations_path else "items"


def add_options(parser: pytest.Parser) -> None:
    from .spellings import _add

    group = parser.getgroup("skilltransfer")
    _add(group, parser, "shard-id", "run only shard I (0 to N-1) of N; a seed's items stay in one shard",
         metavar="I")
    _add(group, parser, "num-shards", "split the items into N shards that keep seeds whole (with the shard id)",
         metavar="N")
    _add(group, parser, "shard-durations", f"JSON of node id -> seconds to balance shards by "
         f"(default: {DURATIONS_FILE} in the rootdir when it exists; else by item count)", metavar="PATH")


def read_plan(config: pytest.Config) -> ShardPlan | None:
    """The shard plan from the options, or None when sharding is off; bad values are usage errors."""
    from .options import _Reader
    from .values import _int, _path

    reader = _Reader(config)
    (shard_id, id_where), (count, count_where) = reader.get("shard-id"), reader.get("num-shards")
    if shard_id is None and count is None:
        return None
    if shard_id is None or count is None:
        shard, shards = reader.flag("shard-id"), reader.flag("num-shards")
        raise pytest.UsageError(f"{shard} and {shards} go together: give both (e.g. {shard}=0 {shards}=3)")
    number, total = _int(shard_id, id_where, 0), _int(count, count_where, 1)
    if number >= total:
        raise pytest.UsageError(f"{id_where}: shard ids run from 0 to {total - 1} for {total} shard(s), got {number}")
    value, where = reader.get("shard-durations")
    path = _path(value, config.invocation_params.dir) if value else config.rootpath / DURATIONS_FILE
    if value and not path.is_file():
        raise pytest.UsageError(f"{where}: {path} is not a file")
    durations = read_durations(path, where) if path.is_file() else {}
    return ShardPlan(number, total, durations, path if path.is_file() else None)


def read_durations(path: Path, where: str) -> dict[str, float]:
    """A durations file: a JSON object of node id -> seconds (pytest-split's format)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise pytest.UsageError(f"{where}: {path} is not a readable JSON durations file: {exc}") from None
    if isinstance(data, list):  # pytest-split's older format: [[node id, seconds], ...]
        data = {str(entry[0]): entry[1] for entry in data if isinstance(entry, list) and len(entry) == 2}
    if not isinstance(data, dict) or not all(isinstance(v, (int, float)) for v in data.values()):
        raise pytest.UsageError(f"{where}: {path} must map node ids to seconds, e.g. "
                                '{"seeds/ticket-router::transfer[sim-small->sim-large]": 1.5}')
    return {str(k): float(v) for k, v in data.items()}


def unit_of(item: pytest.Item, seed_path: Path | None) -> str:
    """The shard unit of an item: its seed for a transfer test, else its file; relative to the rootdir."""
    root = item.config.rootpath
    path = seed_path if seed_path is not None else item.path
    name = path.relative_to(root).as_posix() if path.is_relative_to(root) else path.as_posix()
    return f"seed:{name}" if seed_path is not None else f"file:{name}"


def deal(weights: dict[str, float], num_shards: int) -> dict[str, int]:
    """Units to shards: heaviest first onto the lightest shard; deterministic for equal inputs."""
    loads = [0.0] * num_shards
    assignment: dict[str, int] = {}
    for unit in sorted(weights, key=lambda u: (-weights[u], u)):
        shard = min(range(num_shards), key=lambda s: (loads[s], s))
        assignment[unit] = shard
        loads[shard] += weights[unit]
    return assignment


@dataclass
class ShardSelection:
    """The plugin object: selects this shard's items and describes the shard for the reports.

    Under xdist every worker computes the same selection from its own collection; the controller,
    which collects nothing, receives the description through `workeroutput` as workers finish.
    """

    plan: ShardPlan
    described: dict[str, Any] = field(default_factory=dict)  # seeds, items, deselected, loads
    failed: dict[str, str] = field(default_factory=dict)  # node id -> "failed" (the test) or "error" (setup, collection)

    def weights(self, units: dict[str, list[pytest.Item]]) -> dict[str, float]:
        if not self.plan.durations:
            return {unit: float(len(members)) for unit, members in units.items()}
        known = [self.plan.durations[i.nodeid] for ms in units.values() for i in ms if i.nodeid in self.plan.durations]
        fallback = sum(known) / len(known) if known else 1.0
        return {unit: sum(self.plan.durations.get(i.nodeid, fallback) for i in members)
                for unit, members in units.items()}

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        from .state import SPEC

        unit_by_item: dict[int, str] = {}
        units: dict[str, list[pytest.Item]] = {}
        for item in items:
            spec = item.stash.get(SPEC, None)
            unit_by_item[id(item)] = unit = unit_of(item, spec.seed_path if spec else None)
            units.setdefault(unit, []).append(item)
        weights = self.weights(units)
        assignment = deal(weights, self.plan.num_shards)
        mine = {unit for unit, shard in assignment.items() if shard == self.plan.shard_id}
        selected = [item for item in items if unit_by_item[id(item)] in mine]
        deselected = [item for item in items if unit_by_item[id(item)] not in mine]
        self.described = {
            "seeds": sorted(u.removeprefix("seed:") for u in mine if u.startswith("seed:")),
            "items": [item.nodeid for item in selected],
            "deselected": len(deselected),
            "loads": [round(sum(weights[u] for u, s in assignment.items() if s == shard), 3)
                      for shard in range(self.plan.num_shards)],
        }
        if hasattr(config, "workeroutput"):
            config.workeroutput[WORKER_KEY] = self.described  # type: ignore[attr-defined]
        if deselected:
            config.hook.pytest_deselected(items=deselected)
            items[:] = selected

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """xdist controller: take the description a worker computed (all workers compute the same)."""
        described = getattr(node, "workeroutput", {}).get(WORKER_KEY)
        if described and not self.described:
            self.described = described

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Failed and errored items, so a merge fails for them too (not only for failed gates)."""
        if report.failed:
            self.failed[report.nodeid] = "failed" if report.when == "call" else "error"
        elif report.when == "call" and report.passed and self.failed.get(report.nodeid) == "failed":
            del self.failed[report.nodeid]  # a rerun passed (pytest-rerunfailures)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.failed[report.nodeid] = "error"

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not hasattr(terminalreporter.config, "workerinput"):
            terminalreporter.write_line(safe(self.summary()))

    def summary(self) -> str:
        """`skilltransfer shard 0 of 3: 2 seed(s), 5 item(s) (10 of other shards deselected); ...`."""
        plan, described = self.plan, self.described
        if not described:
            return f"skilltransfer shard {plan.shard_id} of {plan.num_shards}: nothing was collected"
        loads = ", ".join(f"{load:g}" for load in described["loads"])
        basis = "recorded seconds" if plan.weighed_by == "durations" else "item count"
        return (f"skilltransfer shard {plan.shard_id} of {plan.num_shards} (ids 0-{plan.num_shards - 1}): "
                f"{len(described['seeds'])} seed(s), {len(described['items'])} item(s) "
                f"({described['deselected']} of other shards deselected); loads by {basis}: [{loads}]")

    def record(self) -> dict[str, Any]:
        """The `shard` record of this shard's JSON report."""
        return {"id": self.plan.shard_id, "count": self.plan.num_shards, "weighed_by": self.plan.weighed_by,
                "seeds": self.described.get("seeds", []), "items": self.described.get("items", []),
                "failed": sorted(k for k, v in self.failed.items() if v == "failed"),
                "errors": sorted(k for k, v in self.failed.items() if v == "error")}


def register(config: pytest.Config) -> ShardSelection | None:
    """Install the shard selection when --shard-id/--num-shards are given."""
    plan = read_plan(config)
    if plan is None:
        return None
    selection = ShardSelection(plan)
    config.pluginmanager.register(selection, "skilltransfer-shards")
    return selection
