"""Collection: seed folders become items, one per seed and (source, target) pair.

A folder is collected as a seed when it holds SKILL.md or a benchmark file and at least one seed
file besides SKILL.md (benchmark.jsonl, held-out.jsonl or seed.toml), so a plain skill folder that
happens to sit under `testpaths` is left alone.

The tree is the one pytest builds for test files, so every id it prints can be passed back:

    <Dir seeds>
      <SeedDirectory docs-style>          the seed folder (nothing else inside it is collected)
        <SeedModule SKILL.md>             the seed's file node: a `pytest.Module`, so module-scoped
          <TransferItem transfer[a->b]>   fixtures, pytest-recording and pytest-randomly see a module

`seeds/docs-style/SKILL.md::transfer[sim-small->sim-large]` selects one item; the file node is the
seed's SKILL.md, or its seed.toml when the skill lives elsewhere (`skill = "<path>"`). Seeds
outside the rootdir get absolute ids (pytest would drop their folder), so those rerun from
anywhere and `--lf` finds them. Items are `pytest.Function`s carrying
`@pytest.mark.skilltransfer(seed=..., source=..., target=...)`: they run through the very fixture
hand-written tests use.
"""

from __future__ import annotations

import types
import warnings
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterator

import pytest

from ..engine.gate_specs import threshold_gates
from ..engine.seed_layout import CONFIG_FILE, is_seed_dir, seed_file
from .options import Pair

try:  # the id suffix `[src->tgt]` travels in a callspec, as for parametrized tests (structured ids, pytest 9.2)
    from _pytest.python import CallSpec
except ImportError:  # pragma: no cover - pytest < 9.2
    from _pytest.python import CallSpec2 as CallSpec

MARKER = "skilltransfer"
ITEM_PREFIX = "transfer["
SPEC_KEYS = ("seed", "source", "target", "optimizer")


def seed_nodeid(path: Path, config: pytest.Config) -> Any:
    """None (pytest's rootdir-relative id) inside the rootdir; outside it, the absolute path."""
    if path.is_relative_to(config.rootpath):
        return None
    try:
        from _pytest.nodeid import NodeId  # structured ids, pytest >= 9.2
    except ImportError:  # pragma: no cover - pytest < 9.2 takes a string
        return path.as_posix()
    return NodeId(path=path.as_posix())


def pair_id(pair: Pair) -> str:
    """The pair as an item id shows it: `SRC->TGT`, without the credentials of any base URL in a name."""
    from ..guards.redaction import strip_userinfo

    return strip_userinfo(f"{pair[0]}->{pair[1]}")


@dataclass(frozen=True)
class TransferSpec:
    """What one item runs: a seed folder, a pair, an optimizer, and its marker's thresholds."""

    seed_path: Path
    source: str
    target: str
    optimizer: str | None
    thresholds: dict[str, Any]
    validate_on: tuple[str, ...] = ()  # the validation set of models (`--validate-on`)
    validate_tolerance: float = 0.0


def run_transfer(transfer_result: Any) -> None:
    """Run the transfer protocol for this seed and pair; the plugin gates the result after the call."""


class TransferItem(pytest.Function):
    """An auto-collected transfer item; reported at its seed folder, not at the plugin's source."""

    is_transfer_item = True

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"{self.path.parent.name}::{self.name}"


class SeedDirectory(pytest.Directory):
    """A seed folder: its one file node (nothing else in the folder is collected)."""

    @classmethod
    def from_parent(cls, parent: Any, *, path: Path, **kw: Any) -> "SeedDirectory":  # type: ignore[override]
        return super().from_parent(parent, path=path, nodeid=seed_nodeid(path, parent.config), **kw)

    def collect(self) -> Iterator[pytest.Collector]:
        yield SeedModule.from_parent(self, path=seed_file(self.path))


class SeedModule(pytest.Module):
    """A seed's file node: one item per configured pair, or the engine's problems as a collection error.

    A `pytest.Module` whose module object is an empty stand-in (nothing is imported), so fixtures
    and plugins that look for the item's module find one per seed.
    """

    @classmethod
    def from_parent(cls, parent: Any, *, path: Path, **kw: Any) -> "SeedModule":  # type: ignore[override]
        return super().from_parent(parent, path=path, nodeid=seed_nodeid(path, parent.config), **kw)

    def _getobj(self) -> types.ModuleType:
        module = types.ModuleType(f"skilltransfer_seed_{self.path.parent.name}", f"seed {self.path.parent}")
        module.__file__ = str(self.path)
        return module

    def collect(self) -> Iterator[pytest.Item]:  # type: ignore[override]
        from ..engine.seed_data import SeedError
        from ..models.base import ModelError
        from .state import runner_of, settings_of  # the plugin owns per-config state

        seed_path = self.path.parent
        try:
            runner = runner_of(self.config)  # the first seed engages the plugin (options, conftest hooks)
        except pytest.UsageError as exc:
            raise self.CollectError(str(exc)) from None
        try:
            seed = runner.seed(seed_path)
        except SeedError as exc:
            runner.broken_seeds.add(self.nodeid)
            raise self.CollectError(str(exc)) from None
        if _warns_at_collection(self.config):
            _warn_if_undecidable(seed)
            _warn_if_format_only(seed)
        settings = settings_of(self.config)
        pairs = settings.pairs if settings.matrix_from_cli else tuple(sorted(set(settings.pairs) | set(seed.pairs)))
        for name in sorted({name for pair in pairs for name in pair}):
            try:
                runner.model(name)
            except ModelError as exc:
                runner.broken_seeds.add(self.nodeid)
                raise self.CollectError(f"{seed_path / CONFIG_FILE} pairs: {exc}") from None
        if not pairs:
            raise self.CollectError(
                f"seed {seed.name}: no models to run; pass --source and --target (or --pair SRC:TGT), "
                "or set skilltransfer_source / skilltransfer_target in [tool.pytest.ini_options]")
        fixtureinfo = None  # the pairs' closure is one, as for a parametrized function's calls
        for pair in pairs:
            shown = pair_id(pair)
            item = TransferItem.from_parent(
                self, name=f"{ITEM_PREFIX}{shown}]", originalname=ITEM_PREFIX[:-1], callobj=run_transfer,
                callspec=CallSpec(_idlist=(shown,)), fixtureinfo=fixtureinfo,
            )
            fixtureinfo = item._fixtureinfo
            item.add_marker(pytest.mark.skilltransfer(seed=str(seed_path), source=pair[0], target=pair[1]))
            item.extra_keyword_matches.add(f"{pair[0]}_to_{pair[1]}")  # `-k` cannot spell "->"
            yield item


def _warns_at_collection(config: pytest.Config) -> bool:
    """Under xdist every worker collects every seed and pytest lists each worker's warnings; the first worker
    alone warns about a seed, so a run shows each warning once, as it does without `-n`."""
    workerinput = getattr(config, "workerinput", None)
    return workerinput is None or workerinput.get("workerid") == "gw0"


def _warn_if_format_only(seed: Any) -> None:
    """A seed whose held-out tasks all carry the same rule checks and no rubric says so: any answer that passes one
    passes every one, so a constant answer can pass them all (`engine.constant_answer`)."""
    from ..engine.constant_answer import identical_checks

    if not identical_checks(seed.test):
        return
    checks = ", ".join(c.label() for c in seed.test[0].judge.checks)
    warnings.warn(pytest.PytestWarning(
        f"seed {seed.name}: its {len(seed.test)} held-out tasks carry the same checks ({checks[:160]}) and no "
        f"per-task correctness check: a constant answer that passes one passes {len(seed.test)}/{len(seed.test)}: "
        f"these checks cannot tell a right answer from a wrong one; add a per-task check of the expected content "
        f"to {seed.path / 'held-out.jsonl'} (docs/seeds.md)"), stacklevel=1)


def _warn_if_undecidable(seed: Any) -> None:
    """A seed whose held-out tasks (or, when it names clusters, whose clusters) are too few for the exact
    test to ever reach significance says so: with n units the smallest two-sided p-value is 2 / 2**n."""
    from ..evidence.stats import LEVEL, cluster_count, is_clustered, units_needed

    n = len(seed.test)
    clusters = [t.cluster for t in seed.test]
    units = cluster_count(clusters) if is_clustered(clusters) else n
    if 2 / 2 ** units <= 1 - LEVEL:
        return
    where = seed.path / "held-out.jsonl"
    if units == n:
        warnings.warn(pytest.PytestWarning(
            f"seed {seed.name}: {n} held-out task(s) can never show a significant gain (the smallest possible "
            f"p-value is {2 / 2 ** n:.3f}); add tasks to {where} (at least {units_needed()})"), stacklevel=1)
        return
    warnings.warn(pytest.PytestWarning(
        f"seed {seed.name}: {units} cluster(s) of {n} held-out task(s) can never show a significant gain or harm "
        f"(clusters are the test's units; the smallest possible p-value is {2 / 2 ** units:.3f}); add clusters to "
        f"{where} (at least {units_needed()}): tasks of new topics, or tasks without a cluster"), stacklevel=1)


def resolve_seed(value: str | Path, item: pytest.Item, seeds_dirs: tuple[Path, ...]) -> Path:
    """A marker's `seed=`: absolute, or relative to the test file, the rootdir, or a --seeds-dir."""
    path = Path(value)
    if path.is_absolute():
        return path
    bases = [item.path.parent, item.config.rootpath, *seeds_dirs]
    for base in bases:
        if is_seed_dir(base / path):
            return base / path
    raise pytest.UsageError(f"{item.nodeid}: skilltransfer marker seed={str(value)!r} is not a seed folder "
                            f"(looked under {', '.join(str(b) for b in bases)})")


def marker_spec(item: pytest.Item, seeds_dirs: tuple[Path, ...], pair: Pair | None, optimizer: str | None) -> TransferSpec:
    """Merge an item's skilltransfer marks (closest wins) and the pair it was parametrized with."""
    kwargs: dict[str, Any] = {}
    for mark in reversed(list(item.iter_markers(MARKER))):
        unknown = set(mark.kwargs) - set(SPEC_KEYS) - set(threshold_gates())
        if unknown or mark.args:
            raise pytest.UsageError(f"{item.nodeid}: skilltransfer marker takes keyword arguments "
                                    f"{', '.join(SPEC_KEYS + threshold_gates())}; got {sorted(unknown) or mark.args}")
        kwargs.update(mark.kwargs)
    if "seed" not in kwargs:
        raise pytest.UsageError(f"{item.nodeid}: uses transfer_result but has no @pytest.mark.skilltransfer(seed=...)")
    source = kwargs.get("source") or (pair[0] if pair else None)
    target = kwargs.get("target") or (pair[1] if pair else None)
    if not source or not target:
        raise pytest.UsageError(f"{item.nodeid}: no model pair; give source= and target= in the marker, "
                                "or configure --source/--target/--pair")
    return TransferSpec(
        seed_path=resolve_seed(kwargs["seed"], item, seeds_dirs),
        source=source,
        target=target,
        optimizer=kwargs.get("optimizer") or optimizer,
        thresholds={k: kwargs[k] for k in threshold_gates() if k in kwargs},
    )


def seed_optimizer(spec: TransferSpec, runner: Any) -> TransferSpec:
    """The seed's `optimizer` (seed.toml) when neither the marker nor the command line / ini names one."""
    from ..engine.seed_data import SeedError

    if spec.optimizer is not None:
        return spec
    try:
        seed = runner.seed(spec.seed_path)
    except SeedError:  # reported when the item runs (or as its seed's collection error)
        return spec
    return replace(spec, optimizer=seed.optimizer) if seed.optimizer else spec


def seed_validation(spec: TransferSpec, runner: Any) -> TransferSpec:
    """The validation set of models and its tolerance: command line > the seed's validate_on > ini (`off`
    clears), the tolerance from the command line / ini, else the seed's, else 0."""
    from ..engine.seed_data import SeedError

    settings = runner.settings
    try:
        seed = runner.seed(spec.seed_path)
    except SeedError:  # reported when the item runs (or as its seed's collection error)
        seed = None
    models = settings.validate_on(seed.validate_on if seed else ())
    if seed is not None and models == seed.validate_on:
        from ..models.base import ModelError

        for name in models:
            try:
                runner.model(name)
            except ModelError as exc:
                raise pytest.UsageError(f"{seed.path / 'seed.toml'} validate_on: {exc}") from None
    tolerance = settings.validate_tolerance
    if tolerance is None:
        tolerance = seed.validate_tolerance if seed and seed.validate_tolerance is not None else 0.0
    from .in_sample import warn_in_sample

    validated = replace(spec, validate_on=models, validate_tolerance=tolerance)
    warn_in_sample(validated, runner)
    return validated
