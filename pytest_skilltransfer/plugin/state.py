"""The plugin's per-run state, kept in the pytest config's stash: the settings, the engine runner, each item's
spec and run. Every plugin module reads it here; the plugin's entry module stores how a run engages (ENGAGE), so
this module imports nothing of the plugin's hooks."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

import pytest

from .options import Settings

if TYPE_CHECKING:
    from syrupy.assertion import SnapshotAssertion

    from ..engine.results import TransferResult
    from ..evidence.item_record import ItemRecord
    from ..engine.seed_data import Seed
    from ..guards.run_scope import RunScope  # noqa: F401  (named in a stash key's type)
    from .collect import TransferSpec
    from .runner import Runner

ENGAGE = pytest.StashKey[Callable[[pytest.Config], None]]()
SETTINGS = pytest.StashKey[Settings]()
RUNNER = pytest.StashKey["Runner"]()
SPEC = pytest.StashKey["TransferSpec"]()
RUN = pytest.StashKey["ItemRun"]()
ERROR_COST = pytest.StashKey[dict]()  # an item that errored before its result: what it spent (JSON shape)
PAIR_ARG = "transfer_pair"
SEED_SCHEDULING = pytest.StashKey[bool]()
RUN_SCOPE = pytest.StashKey["RunScope"]()  # the run's configuration (`guards.run_scope`)
RUN_DIR = pytest.StashKey[str]()  # the controller's run folder (see `run_folder`)
RUN_DIR_KEY = "skilltransfer_run_dir"  # workerinput key: the same folder, on a worker


def starts_workers(config: pytest.Config) -> bool:
    """Whether this process is an xdist controller that starts workers (xdist's own test, collection aside)."""
    return (not hasattr(config, "workerinput") and not config.option.collectonly
            and getattr(config.option, "dist", "no") != "no" and bool(getattr(config.option, "tx", None)))


def run_folder(config: pytest.Config) -> Path | None:
    """The folder an xdist controller makes for its run and names to each worker: the workers' seed maps
    (`scopes/`), progress counts (`progress/`) and the budget ledger live there. None without workers
    (and on a remote worker that cannot share it)."""
    folder = getattr(config, "workerinput", {}).get(RUN_DIR_KEY) or config.stash.get(RUN_DIR, None)
    return Path(folder) if folder and Path(folder).is_dir() else None


@dataclass
class ItemRun:
    """One item's protocol run: the engine result, its record (what the gates decide is added to it), the seed
    and the snapshot assertion."""

    result: "TransferResult"
    record: "ItemRecord"
    seed: "Seed"
    spec: "TransferSpec"
    snapshot: "SnapshotAssertion"


def settings_of(config: pytest.Config) -> Settings:
    """The run's settings; a run that was not engaged engages here, when it meets a seed or a transfer test."""
    if SETTINGS not in config.stash:
        config.stash[ENGAGE](config)
    return config.stash[SETTINGS]


def runner_of(config: pytest.Config) -> "Runner":
    """The run's engine runner (engaging the run as `settings_of` does)."""
    if RUNNER not in config.stash:
        config.stash[ENGAGE](config)
    return config.stash[RUNNER]


def spec_of(item: pytest.Item) -> "TransferSpec | None":
    """The transfer spec of an item, or None for any other test."""
    return item.stash.get(SPEC, None)
