"""pytest plugin (entry point `skilltransfer`): every seed x (source, target) pair is a test item.

    pytest --source=sim-small --target=sim-large -n 2 seeds/

Design choices:

* Collection (`collect`): seed folders given on the command line, found under `testpaths`, or named
  by `--seeds-dir` become a `SeedDirectory` holding one file node (`SeedModule`, the seed's
  SKILL.md) with one item per pair, `seeds/<seed>/SKILL.md::transfer[<source>-><target>]`, pairs
  sorted so every xdist worker agrees. Every printed id reruns, `--lf`/`--sw`/`-k` work, and
  fixtures of any scope see a module per seed. A broken seed is a collection error for that seed
  only, with the engine's file:line problems.
* One code path: auto items and hand-written tests both carry `@pytest.mark.skilltransfer(...)`
  and use the `transfer_result` fixture, which runs the engine (`runner`). After the test body the
  per-item hooks (`item_hooks`) gate the result (`gating`), compare the snapshot (`snapshots`) and,
  on failure, print a diagnosis (`diagnosis`). Hand-written tests whose marker names no pair run
  once per pair.
* Order and xdist: a seed's items share its baseline and optimizations through one `SeedSession`
  per seed per process, and its cassette, so all items of a seed (hand-written tests naming it
  included) run one after another (`pytest_collection_modifyitems_order_by_seed`, after any reordering such as pytest-randomly)
  and on one worker; then `-n 2` computes exactly what `-n 0` computes and no request is sent
  twice. Under `-n` without an explicit `--dist`, the plugin installs `SeedScheduling`
  (`xdist_scheduling`: xdist's own LoadScope pattern, scoped by the seed each worker reports for
  each item; other tests are balanced as with `--dist load`). The `xdist_group(<seed>)` marks serve users
  who choose `--dist loadgroup` themselves; on pytest 9.2 that mode does not group
  (pytest-dev/pytest-xdist#1386), hence the scheduler. Sharing work across workers through a file
  lock was rejected: it would serialize the workers on a seed anyway and needs a cross-process cache.
* Results reach the controller as a custom attribute of the call-phase report
  (`report.skilltransfer`, the `result_json` shape); xdist serializes report attributes, and the
  controller gathers them in `pytest_runtest_logreport`. Only the controller prints the summary
  table and writes `--skilltransfer-json` / `--skilltransfer-md`. Scores also go to
  `user_properties`, hence to JUnit XML.
* Start-up under xdist: the controller makes one run folder for its workers (seed maps, progress,
  the budget ledger; `state.run_folder`) and engages only once xdist has started them
  (`EngageOnceWorkersStart`), so its settings, models and reports are set up while the workers start.
* Snapshots: syrupy, one Markdown file per item in `<seed>/__snapshots__/`; see `snapshots` for
  the layout and for why unused detection cannot break selections. The regression gate reads the
  committed file's transferred score before syrupy compares.
* Progress: with `-v`, each night of an item prints a line (workers write to stderr as `[gwN] ...`).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Generator

import pytest

from ..engine.gate_specs import threshold_gates
from ..engine.seed_layout import is_collectable_seed, is_seed_file
from ..guards.terminal import safe
from .aa_fixture import transfer_aa  # noqa: F401  (a fixture: pytest finds it in this module)
from .collect import (
    MARKER,
    SeedDirectory,
    SeedModule,
    TransferSpec,
    marker_spec,
    pair_id,
    seed_optimizer,
    seed_validation,
)
from .engagement import engaged
from .options import Pair, Settings, add_options, apply_project_tables, plan_requested, read_settings
from .reporting import TransferReporting, is_worker
from .spellings import add_short_spellings, flag
from .state import (
    ENGAGE,
    ERROR_COST,
    PAIR_ARG,
    RUN,
    RUN_DIR,
    RUN_DIR_KEY,
    RUN_SCOPE,
    RUNNER,
    SEED_SCHEDULING,
    SETTINGS,
    SPEC,
    ItemRun,
    run_folder,
    runner_of,
    settings_of,
    spec_of,
    starts_workers,
)

if TYPE_CHECKING:
    from syrupy.assertion import SnapshotAssertion

    from ..engine.results import TransferResult
    from .runner import Runner

# -- options and configuration -------------------------------------------------------------------


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from . import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    from . import batch_setup, compare_to, shards

    add_options(parser)
    shards.add_options(parser)
    compare_to.add_options(parser)
    batch_setup.add_options(parser)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser) -> Generator[None, Any, Any]:
    """The short spellings (`--source`, `--shard-id`, ...) once every plugin and initial conftest has
    registered its options: a flag another plugin owns stays its own (see `options`)."""
    try:
        return (yield)
    finally:
        add_short_spellings(early_config, parser)


@pytest.hookimpl(wrapper=True)
def pytest_cmdline_main(config: pytest.Config) -> Generator[None, Any, Any]:
    """Under `-n` without an explicit `--dist`, schedule by seed (runs before xdist turns "no" into "load")."""
    option = config.option
    if option.help or not engaged(config):  # another project's run: xdist schedules as it always does
        return (yield)
    if plan_requested(config):  # the plan runs in this process and calls no model
        option.numprocesses, option.dist = 0, "no"
    chose = getattr(option, "dist", "no") != "no" or getattr(option, "distload", False)
    config.stash[SEED_SCHEDULING] = bool(getattr(option, "numprocesses", None)) and not chose
    return (yield)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Keep each seed's items on one worker, in collection order (see `xdist_scheduling`)."""
    if not config.stash.get(SEED_SCHEDULING, False):
        return None
    from .xdist_scheduling import SeedScheduling

    return SeedScheduling(config, log)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """Name the run folder to each worker: there it publishes which seed each of its items uses and its
    progress, and shares the budget's ledger (`state.run_folder`)."""
    folder = node.config.stash.get(RUN_DIR, None)
    if folder:
        node.workerinput[RUN_DIR_KEY] = folder


def pytest_configure(config: pytest.Config) -> None:
    config.stash[ENGAGE] = _engage  # how `state.settings_of` engages a run that meets a seed late
    config.addinivalue_line(
        "markers",
        f"{MARKER}(seed, source=None, target=None, optimizer=None, "
        + ", ".join(f"{name}=None" for name in threshold_gates())
        + "): run the skill-transfer protocol for this test (fixture transfer_result); without source/target "
        "the test runs once per configured pair",
    )
    from . import markers
    from .aa_fixture import AA_MARKER_HELP

    config.addinivalue_line("markers", AA_MARKER_HELP)
    markers.register(config)
    if config.option.help or not engaged(config):  # --help must work even when the configuration is wrong
        return
    from . import stopping

    stopping.register(config)  # SIGINT / SIGTERM: an orderly stop in every process, from the start
    if not starts_workers(config):
        _engage(config)
        return
    import tempfile

    config.stash[RUN_DIR] = tempfile.mkdtemp(prefix="skilltransfer-run-")
    _keep_transfer_snapshots(config)  # before syrupy's session starts
    config.pluginmanager.register(EngageOnceWorkersStart(), "skilltransfer-engage")


class EngageOnceWorkersStart:
    """An xdist controller engages (reads and checks the settings, resolves the models, sets up the reports)
    once xdist has started its workers, not before: each worker then pays its own start-up and
    collection while the controller does this work, instead of after it (about 0.2 s of a
    replay's wall on 2 cores; benchmarks/README.md). A bad setting still ends the run with pytest's
    usage error (exit 4) before any item runs; the workers xdist started are stopped with it."""

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> Generator[None, Any, Any]:
        result = yield  # xdist's DSession starts the workers (trylast)
        _engage(session.config)
        return result


def _engage(config: pytest.Config) -> None:
    """Read and check the settings, set up the runner, the reports and the CI features (once per run)."""
    if SETTINGS in config.stash:
        return
    from ..guards.run_scope import RunScope, enter
    from .runner import Runner

    if RUN_SCOPE not in config.stash:  # what this run configures lives here, not in module globals
        enter(config.stash.setdefault(RUN_SCOPE, RunScope()))
    _keep_transfer_snapshots(config)
    settings = read_settings(config)
    from .extensions import Registry

    project_models = apply_project_tables(config)
    from ..cassettes.model_lock import apply_lock

    try:
        apply_lock(settings.cassette_dir, project_models)  # aliases pinned by earlier recordings
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    registry = Registry(project_models)
    config.hook.pytest_skilltransfer_configure.call_historic(kwargs={"config": config, "registry": registry})
    config.stash[SETTINGS] = settings
    progress = _progress_writer(config)
    runner = Runner(settings, progress)  # resolves each model name once, for the whole run
    try:
        _check_models(config, settings, runner)
    except pytest.UsageError:
        del config.stash[SETTINGS]
        raise
    _configure_concurrency(settings, progress, runner)
    from ..models.sdk_common import configure_calls

    configure_calls(settings.calls)
    from ..cassettes import default_record_mode
    from . import batch_setup

    batch_setup.configure(config, settings.cassette_dir, settings.record_mode or default_record_mode())
    config.stash[RUNNER] = runner
    if settings.max_cost is not None:
        runner.budget = _budget(config, settings, runner)
        from .budget import BudgetPlugin

        config.pluginmanager.register(BudgetPlugin(runner.budget), "skilltransfer-budget")
    from . import live_progress

    live_progress.register(config, settings, runner, spec_of)
    if settings.plan:
        config.option.disable_unused_snapshots = True  # no item runs, so no snapshot is "unused"
        config.pluginmanager.register(PlanMode(), "skilltransfer-plan")
    from .item_hooks import ItemHooks

    config.pluginmanager.register(ItemHooks(), "skilltransfer-items")
    reporting = TransferReporting(config, settings)
    config.pluginmanager.register(reporting, "skilltransfer-reporting")
    from . import live_page

    live_page.register(config, reporting)
    if runner.budget is not None:
        reporting.run_fields.append(lambda: {"budget": runner.budget.as_dict()})
    _register_ci(config, reporting)
    _add_seed_dirs(config, settings)


def pytest_unconfigure(config: pytest.Config) -> None:
    if SETTINGS in config.stash:  # an engaged run (only those can have turned the batch lane on)
        from . import batch_setup

        batch_setup.unconfigure(config)
    folder = config.stash.get(RUN_DIR, None)
    if folder:
        import shutil

        shutil.rmtree(folder, ignore_errors=True)
    scope = config.stash.get(RUN_SCOPE, None)
    if scope is not None:
        from ..guards.run_scope import leave

        leave(scope)  # its aliases, ops, families, gates and scrubbers end with it


def _keep_transfer_snapshots(config: pytest.Config) -> None:
    """syrupy's default extension claims every file in a test file's `__snapshots__` folder and deletes
    the ones it does not own on `--snapshot-update`; the transfer snapshots are Markdown files in the
    seed's `__snapshots__` (next to its SKILL.md), so snapshot discovery skips `.md` files."""
    if hasattr(config.option, "ignore_file_extensions"):
        config.option.ignore_file_extensions = sorted({*(config.option.ignore_file_extensions or []), "md"})


def _register_ci(config: pytest.Config, reporting: TransferReporting) -> None:
    """Shard selection (`shards`) and the base ref (`compare`); both are named in the JSON report."""
    from . import compare_to, shards

    selection = shards.register(config)
    if selection is not None:
        reporting.run_fields.append(lambda: {"shard": selection.record()})
    base = compare_to.configure(config)
    if base is not None:
        reporting.run_fields.append(lambda: {"compare_to": base.as_dict()})


def _check_models(config: pytest.Config, settings: Settings, runner: Runner) -> None:
    """Every model name must resolve; the error names the option and lists the known models."""
    from ..models.base import ModelError

    judges = {j.model for j in (settings.ini_judge, settings.cli_judge) if j.model}
    names = {name for pair in settings.pairs for name in pair} | ({settings.optimizer} if settings.optimizer else set())
    listed = {n for n in (*settings.ini_validate_on, *settings.cli_validate_on) if n != "off"}
    for name in sorted(names | judges | listed):
        try:
            runner.model(name)
        except ModelError as exc:
            role = ("optimizer" if name == settings.optimizer else "judge" if name in judges
                    else "validate-on" if name in listed else "")
            role = flag(config, role) if role else "/".join(flag(config, o) for o in ("source", "target", "pair"))
            raise pytest.UsageError(f"{role}: {exc}") from None


def _configure_concurrency(settings: Settings, progress: Callable[[str], None], runner: Runner) -> None:
    """Per-model maximum concurrency from --max-concurrency (names resolved to model ids); limiter
    changes (rate limits, recovery) are reported like the nights, with -v."""
    from ..models.base import ModelError
    from ..models.limiter import LIMITERS

    by_id: dict[str, int] = {}
    for name, number in settings.model_concurrency.items():
        try:
            by_id[runner.model(name).model_id] = number
        except ModelError as exc:
            raise pytest.UsageError(f"--max-concurrency {name}={number}: {exc}") from None
    LIMITERS.configure(lambda model_id: by_id.get(model_id, settings.concurrency), progress)


def _budget(config: pytest.Config, settings: Settings, runner: Runner) -> Any:
    """The run's budget (see `budget`): under xdist, the controller and its workers share the run folder's ledger."""
    from .budget import LEDGER_NAME, Budget, refuse_unpriced

    names = {m for pair in settings.pairs for m in pair} | ({settings.optimizer} if settings.optimizer else set())
    names |= {j.model for j in (settings.ini_judge, settings.cli_judge) if j.model}
    names |= {n for n in (*settings.ini_validate_on, *settings.cli_validate_on) if n != "off"}
    refusal = refuse_unpriced([runner.model(name) for name in names], "the models named for this run")
    if refusal:
        raise pytest.UsageError(refusal)
    run = run_folder(config)  # under xdist, the controller and its workers share one ledger
    shared = Path(settings.budget_ledger) if settings.budget_ledger else run / LEDGER_NAME if run else None
    return Budget(settings.max_cost, shared)


class PlanMode:
    """`--plan`: print the plan instead of running the items."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool:
        from ..pricing.prices import shipped_table
        from .undecidable import plan_lines as decidability_lines
        from .undecidable import undecidable_items
        from ..planning.calibration import Calibration
        from .planning import build_plans, plan_json, plan_lines

        runner = runner_of(session.config)
        calibration = Calibration()
        plans = build_plans(runner, session.items, spec_of, calibration)
        reporting = session.config.pluginmanager.getplugin("skilltransfer-reporting")
        if reporting is not None:  # `--skilltransfer-json` writes the plan
            plan = plan_json(plans, shipped_table().effective, calibration)
            reporting.run_fields.append(lambda: {"plan": plan})
        reporter = session.config.pluginmanager.getplugin("terminalreporter")
        if reporter is not None:
            reporter.write_sep("=", "skill transfer plan")
            for line in plan_lines(plans, shipped_table().effective, calibration) + decidability_lines(
                    undecidable_items(runner, session.items, spec_of)):
                reporter.write_line(safe(line))
        return True


def _add_seed_dirs(config: pytest.Config, settings: Settings) -> None:
    """Collect --seeds-dir folders too; ini seed folders only when the command line names no paths."""
    from_cli = bool(getattr(config.option, "skilltransfer_seeds_dir", None))
    if not settings.seeds_dirs or (not from_cli and config.args_source == pytest.Config.ArgsSource.ARGS):
        return
    present = {str(config.invocation_params.dir / arg.split("::")[0]) for arg in config.args}
    for folder in settings.seeds_dirs:
        if str(folder) not in present:
            config.args.append(str(folder))
            present.add(str(folder))


def _progress_writer(config: pytest.Config) -> Callable[[str], None]:
    """Per-night lines with -v: on the terminal in-process, on stderr as `[gwN] ...` on xdist workers."""
    if config.option.verbose <= 0:
        return lambda _line: None
    from .lines import line_writer

    write = line_writer(config)
    return lambda line: write(f"  {line}" if not is_worker(config) else line)


# -- collection ----------------------------------------------------------------------------------


@pytest.hookimpl(tryfirst=True)
def pytest_collect_directory(path: "Path", parent: pytest.Collector) -> pytest.Collector | None:
    if is_collectable_seed(path):
        return SeedDirectory.from_parent(parent, path=path)
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_collect_file(file_path: "Path", parent: pytest.Collector) -> pytest.Collector | None:
    """A seed's file given directly (a rerun id outside the rootdir is collected from the file up)."""
    if is_seed_file(file_path) and not isinstance(parent, SeedDirectory):
        return SeedModule.from_parent(parent, path=file_path)
    return None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A hand-written transfer test whose marker names no pair runs once per configured pair."""
    if "transfer_result" not in metafunc.fixturenames:
        return
    marks = list(metafunc.definition.iter_markers(MARKER))
    if not marks or any("source" in m.kwargs or "target" in m.kwargs for m in marks):
        return
    pairs = settings_of(metafunc.config).pairs
    if pairs:
        metafunc.parametrize(PAIR_ARG, pairs, ids=[pair_id(p) for p in pairs])


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Resolve each transfer test's spec (bad markers are usage errors) and mark its xdist group."""
    grouped = config.pluginmanager.hasplugin("xdist")
    for item in items:
        if "transfer_result" not in getattr(item, "fixturenames", ()):
            continue
        settings = settings_of(config)
        callspec = getattr(item, "callspec", None)
        pair: Pair | None = callspec.params.get(PAIR_ARG) if callspec else None
        spec = seed_optimizer(marker_spec(item, settings.seeds_dirs, pair, settings.optimizer), runner_of(config))
        spec = seed_validation(spec, runner_of(config))
        item.stash[SPEC] = spec
        item.extra_keyword_matches.add(f"{spec.source}_to_{spec.target}")  # `-k` as for collected items
        _mark_model_kinds(item, spec)
        if grouped:
            item.add_marker(pytest.mark.xdist_group(spec.seed_path.name))
    if SETTINGS in config.stash and settings_of(config).only_seeds:  # an engaged run (a foreign one stays inert)
        from .seed_filter import keep_only_seeds

        keep_only_seeds(config, items, settings_of(config).only_seeds, spec_of)
    _refuse_unpriced_items(config, items)


def _refuse_unpriced_items(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under `--max-cost`: every model the collected items would call (pair, optimizer, the seed's
    judge) must be priced, or the run stops before its first request (see `budget`)."""
    runner = config.stash.get(RUNNER, None)
    if runner is None or runner.budget is None:
        return
    from ..engine.seed_data import SeedError
    from ..models.base import ModelError

    models = []
    for item in items:
        spec = spec_of(item)
        if spec is None:
            continue
        models += [runner.model(name) for name in (spec.source, spec.target, spec.optimizer, *spec.validate_on) if name]
        try:
            judge = runner.judge(runner.seed(spec.seed_path))
        except (SeedError, ModelError):
            continue  # a broken seed is reported by its own items
        if judge is not None:
            models.append(judge.model)
    from .budget import refuse_unpriced

    refusal = refuse_unpriced(models, "the collected items")
    if refusal and is_worker(config):
        runner.budget.refusal = refusal  # a worker's collection cannot stop the run: each item fails, unsent
    elif refusal:
        raise pytest.UsageError(refusal)


def _mark_model_kinds(item: pytest.Item, spec: TransferSpec) -> None:
    from ..models.base import ModelError
    from . import markers

    runner = runner_of(item.config)
    try:
        models = [runner.model(name) for name in (spec.source, spec.target, spec.optimizer, *spec.validate_on) if name]
    except ModelError as exc:
        raise pytest.UsageError(f"{item.nodeid}: {exc}") from None
    markers.mark_kinds(item, models)


@pytest.hookimpl(trylast=True, specname="pytest_collection_modifyitems")
def pytest_collection_modifyitems_order_by_seed(items: list[pytest.Item]) -> None:
    """After every other reordering (-p randomly, --ff): a seed's items run one after another.

    Stable: each seed's items move up to its first item, so a seed's cassette is opened once and
    everything else keeps its order.
    """
    first: dict[Any, int] = {}
    keys = []
    for index, item in enumerate(items):
        spec = spec_of(item)
        group = runner_of(item.config).key(spec.seed_path) if spec is not None else index
        keys.append(first.setdefault(group, index))
    items[:] = [item for _, _, item in sorted(zip(keys, range(len(items)), items), key=lambda t: t[:2])]


@pytest.hookimpl(trylast=True, specname="pytest_collection_modifyitems")
def pytest_collection_modifyitems_decidability(config: pytest.Config, items: list[pytest.Item]) -> None:
    """After deselection: each item of the run that can never be a finding of its family says so, once. (pytest
    registers a plugin's hook functions only under names that start with `pytest_`, whatever their specname.)"""
    if any(SPEC in item.stash for item in items) and not settings_of(config).plan:  # --plan prints it in the plan
        from .undecidable import warn_undecidable

        warn_undecidable(runner_of(config), items, spec_of)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """On an xdist worker: publish which seed each item uses, for the controller's scheduler (a foreign run's
    worker, with no transfer item, publishes nothing and stays inert: no per-test hooks)."""
    if is_worker(session.config):
        scoped = [item for item in session.items if SPEC in item.stash]
        if not scoped and not engaged(session.config):
            return
        from .xdist_scheduling import write_scopes

        key = runner_of(session.config).key
        write_scopes(session.config, {item.nodeid: str(key(item.stash[SPEC].seed_path)) for item in scoped})


@pytest.hookimpl(wrapper=True)
def pytest_runtestloop(session: pytest.Session) -> Generator[None, Any, Any]:
    """A broken seed is a collection error for that seed only: the other items still run."""
    runner = session.config.stash.get(RUNNER, None)
    broken = len(runner.broken_seeds) if runner is not None else 0
    session.testsfailed -= broken
    try:
        return (yield)
    finally:
        session.testsfailed += broken


# -- running -------------------------------------------------------------------------------------


@pytest.fixture
def transfer_pair(request: pytest.FixtureRequest) -> Pair:
    """The (source, target) pair of this transfer test."""
    spec = request.node.stash[SPEC]
    return spec.source, spec.target


@pytest.fixture
def transfer_result(request: pytest.FixtureRequest, transfer_pair: Pair, snapshot: "SnapshotAssertion") -> "TransferResult":
    """Run the skill-transfer protocol for this test's seed and pair; the plugin gates it after the test."""
    from ..engine.protocol import CalibrationFailed, NoJudgeConfigured
    from ..engine.seed_data import SeedError
    from ..models.base import ModelCallError, ModelError
    from ..reports.result_json import item_record
    from .snapshots import TransferSnapshotExtension

    item = request.node
    spec = item.stash[SPEC]
    runner = runner_of(request.config)
    try:
        try:
            from .item_hooks import stopping

            looks = stopping(item, runner.seed(spec.seed_path), spec, snapshot)
            result = runner.transfer(spec.seed_path, spec.source, spec.target, spec.optimizer, spec.validate_on,
                                     spec.validate_tolerance, looks)
        except BaseException:  # what the calls before the error spent stays in the bill, as this item's
            from ..reports.result_json import errored_cost

            item.stash[ERROR_COST] = errored_cost(runner.unbilled(spec.seed_path), runner.model(spec.source).model_id)
            raise
        seed = runner.seed(spec.seed_path)
    except (SeedError, ModelError, ModelCallError, NoJudgeConfigured, CalibrationFailed) as exc:
        if hasattr(exc, "with_command"):  # a cassette miss: the command that re-records this very item
            from .rerecord_command import rerecord_command

            from .reporting import FIX

            item.stash[FIX] = rerecord_command(item, spec)
            exc = exc.with_command(item.stash[FIX])
        from ..guards.redaction import redact_text

        problem = redact_text(f"{spec.seed_path.name} ({spec.source} -> {spec.target}): {exc}")
    else:
        problem = ""
    if problem:
        pytest.fail(safe(problem), pytrace=False)
    record = replace(item_record(result, settings_of(request.config).answer_chars),
                     prompt_cache="auto" if runner.settings.calls.prompt_cache else "off")  # shapes Anthropic requests
    item.stash[RUN] = ItemRun(result, record, seed, spec, snapshot.use_extension(TransferSnapshotExtension))
    from .item_hooks import junit_properties

    item.user_properties.extend(junit_properties(record))
    return result
