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
  plugin gates the result (`gating`), compares the snapshot (`snapshots`) and, on failure, prints a
  diagnosis (`diagnosis`). Hand-written tests whose marker names no pair run once per pair.
* Order and xdist: a seed's items share its baseline and optimizations through one `SeedSession`
  per seed per process, and its cassette, so all items of a seed (hand-written tests naming it
  included) run one after another (`order_by_seed`, after any reordering such as pytest-randomly)
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
* Snapshots: syrupy, one Markdown file per item in `<seed>/__snapshots__/`; see `snapshots` for
  the layout and for why unused detection cannot break selections. The regression gate reads the
  committed file's transferred score before syrupy compares.
* Progress: with `-v`, each night of an item prints a line (workers write to stderr as `[gwN] ...`).
"""

from __future__ import annotations

from pathlib import Path
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Generator

import pytest

from ..seed_layout import is_collectable_seed, is_seed_file
from .collect import MARKER, SeedDirectory, SeedModule, TransferSpec, marker_spec, pair_id, seed_optimizer
from .engagement import engaged
from .options import (Pair, Settings, add_options, add_short_spellings, apply_project_tables, flag,
                      plan_requested, read_settings)
from .reporting import ERROR_ATTRIBUTE, REPORT_ATTRIBUTE, TransferReporting, is_worker, plain_nodeid
from .aa_fixture import transfer_aa  # noqa: F401  (a fixture: pytest finds it in this module)
from ..terminal import safe

if TYPE_CHECKING:
    from syrupy.assertion import SnapshotAssertion

    from ..protocol import TransferResult
    from ..seeds import Seed
    from .runner import Runner

SETTINGS = pytest.StashKey[Settings]()
RUNNER = pytest.StashKey["Runner"]()
SPEC = pytest.StashKey[TransferSpec]()
RUN = pytest.StashKey["ItemRun"]()
PAIR_ARG = "transfer_pair"
SEED_SCHEDULING = pytest.StashKey[bool]()
SCOPES_DIR = pytest.StashKey[str]()


@dataclass
class ItemRun:
    """One item's protocol run: the engine result, its JSON, the seed and the snapshot assertion."""

    result: "TransferResult"
    data: dict[str, Any]
    seed: "Seed"
    spec: TransferSpec
    snapshot: "SnapshotAssertion"


def settings_of(config: pytest.Config) -> Settings:
    """The run's settings; a run that was not engaged engages here, when it meets a seed or a transfer test."""
    if SETTINGS not in config.stash:
        _engage(config)
    return config.stash[SETTINGS]


def runner_of(config: pytest.Config) -> "Runner":
    if RUNNER not in config.stash:
        _engage(config)
    return config.stash[RUNNER]


# -- options and configuration -------------------------------------------------------------------


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from . import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    from . import batch, compare, shards

    add_options(parser)
    shards.add_options(parser)
    compare.add_options(parser)
    batch.add_options(parser)


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

    return SeedScheduling(config, log, config.stash.get(SCOPES_DIR, None))


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """Tell each worker where to publish which seed each of its items uses, and where the budget's
    spending is shared."""
    folder = node.config.stash.get(SCOPES_DIR, None)
    if folder:
        from .xdist_scheduling import SCOPES_KEY

        node.workerinput[SCOPES_KEY] = folder
    runner = node.config.stash.get(RUNNER, None)
    if runner is not None and runner.budget is not None:
        node.workerinput[BUDGET_LEDGER] = str(runner.budget.path)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(seed, source=None, target=None, optimizer=None, min_gain=None, min_score=None, "
        "min_efficiency=None, regression_tolerance=None): run the skill-transfer protocol for this test "
        "(fixture transfer_result); without source/target the test runs once per configured pair",
    )
    from . import markers

    markers.register(config)
    if config.option.help or not engaged(config):  # --help must work even when the configuration is wrong
        return
    _engage(config)
    if config.stash.get(SEED_SCHEDULING, False):
        import tempfile

        config.stash[SCOPES_DIR] = tempfile.mkdtemp(prefix="skilltransfer-scopes-")


def _engage(config: pytest.Config) -> None:
    """Read and check the settings, set up the runner, the reports and the CI features (once per run)."""
    if SETTINGS in config.stash:
        return
    from .runner import Runner

    _keep_transfer_snapshots(config)
    settings = read_settings(config)
    from .extensions import Registry

    project_models = apply_project_tables(config)
    from ..inventory import apply_lock

    try:
        apply_lock(settings.cassette_dir, project_models)  # aliases pinned by earlier recordings
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    registry = Registry(project_models)
    config.hook.pytest_skilltransfer_configure.call_historic(kwargs={"config": config, "registry": registry})
    _check_models(config, settings)
    config.stash[SETTINGS] = settings
    progress = _progress_writer(config)
    _configure_concurrency(settings, progress)
    from ..models.sdk_common import configure_calls

    configure_calls(settings.calls)
    from . import batch

    batch.configure(config, settings.cassette_dir)
    runner = config.stash[RUNNER] = Runner(settings, progress)
    if settings.max_cost is not None:
        runner.budget = _budget(config, settings)
        from .budget import BudgetPlugin

        config.pluginmanager.register(BudgetPlugin(runner.budget), "skilltransfer-budget")
    from . import live_progress

    live_progress.register(config, settings, runner, lambda item: item.stash.get(SPEC, None))
    if settings.plan:
        config.option.disable_unused_snapshots = True  # no item runs, so no snapshot is "unused"
        config.pluginmanager.register(PlanMode(), "skilltransfer-plan")
    config.pluginmanager.register(ItemHooks(), "skilltransfer-items")
    reporting = TransferReporting(config, settings)
    config.pluginmanager.register(reporting, "skilltransfer-reporting")
    if runner.budget is not None:
        reporting.run_fields.append(lambda: {"budget": runner.budget.as_dict()})
    _register_ci(config, reporting)
    _add_seed_dirs(config, settings)


def pytest_unconfigure(config: pytest.Config) -> None:
    if SETTINGS in config.stash:  # an engaged run (only those can have turned the batch lane on)
        from ..cassettes.scrub import clear_scrubbers
        from . import batch

        batch.unconfigure(config)
        clear_scrubbers()  # a conftest's scrubbers belong to its run, not to the next one in this process
    folder = config.stash.get(SCOPES_DIR, None)
    if folder:
        import shutil

        shutil.rmtree(folder, ignore_errors=True)


def _keep_transfer_snapshots(config: pytest.Config) -> None:
    """syrupy's default extension claims every file in a test file's `__snapshots__` folder and deletes
    the ones it does not own on `--snapshot-update`; the transfer snapshots are Markdown files in the
    seed's `__snapshots__` (next to its SKILL.md), so snapshot discovery skips `.md` files."""
    if hasattr(config.option, "ignore_file_extensions"):
        config.option.ignore_file_extensions = sorted({*(config.option.ignore_file_extensions or []), "md"})


def _register_ci(config: pytest.Config, reporting: TransferReporting) -> None:
    """Shard selection (`shards`) and the base ref (`compare`); both are named in the JSON report."""
    from . import compare, shards

    selection = shards.register(config)
    if selection is not None:
        reporting.run_fields.append(lambda: {"shard": selection.record()})
    base = compare.configure(config)
    if base is not None:
        reporting.run_fields.append(lambda: {"compare_to": base.as_dict()})


def _check_models(config: pytest.Config, settings: Settings) -> None:
    """Every model name must resolve; the error names the option and lists the known models."""
    from ..models.base import ModelError, resolve_model

    judges = {j.model for j in (settings.ini_judge, settings.cli_judge) if j.model}
    names = {name for pair in settings.pairs for name in pair} | ({settings.optimizer} if settings.optimizer else set())
    for name in sorted(names | judges):
        try:
            resolve_model(name)
        except ModelError as exc:
            role = ("optimizer" if name == settings.optimizer else "judge" if name in judges else "")
            role = flag(config, role) if role else "/".join(flag(config, o) for o in ("source", "target", "pair"))
            raise pytest.UsageError(f"{role}: {exc}") from None


def _configure_concurrency(settings: Settings, progress: Callable[[str], None]) -> None:
    """Per-model maximum concurrency from --max-concurrency (names resolved to model ids); limiter
    changes (rate limits, recovery) are reported like the nights, with -v."""
    from ..models.base import ModelError, resolve_model
    from ..models.limiter import LIMITERS

    by_id: dict[str, int] = {}
    for name, number in settings.model_concurrency.items():
        try:
            by_id[resolve_model(name).model_id] = number
        except ModelError as exc:
            raise pytest.UsageError(f"--max-concurrency {name}={number}: {exc}") from None
    LIMITERS.configure(lambda model_id: by_id.get(model_id, settings.concurrency), progress)


BUDGET_LEDGER = "skilltransfer_budget_ledger"


def _budget(config: pytest.Config, settings: Settings) -> Any:
    """The run's budget (see `budget`): xdist workers use the ledger file the controller made."""
    from ..models.base import resolve_model
    from ..prices import lane_of, rates_of
    from .budget import Budget

    names = {m for pair in settings.pairs for m in pair} | ({settings.optimizer} if settings.optimizer else set())
    names |= {j.model for j in (settings.ini_judge, settings.cli_judge) if j.model}
    ids = {name: resolve_model(name).model_id for name in names}
    unpriced = sorted(f"{name} ({ids[name]}, {lane_of(ids[name])} lane)" if lane_of(ids[name]) != "standard"
                      else name for name in names if rates_of(ids[name], lane_of(ids[name])) is None)
    if unpriced:
        raise pytest.UsageError(
            f"--max-cost: no price for {', '.join(unpriced)}, so no call to it could be reserved; nothing was sent. "
            'Price it in pyproject.toml: [tool.skilltransfer.prices] "<model id>" = { input = <$/Mtok>, '
            "output = <$/Mtok> }")
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None and workerinput.get(BUDGET_LEDGER):
        return Budget(settings.max_cost, Path(workerinput[BUDGET_LEDGER]))
    return Budget(settings.max_cost, Path(settings.budget_ledger) if settings.budget_ledger else None)


def resolve_model_id(name: str) -> str:
    from ..models.base import resolve_model

    return resolve_model(name).model_id


class PlanMode:
    """`--plan`: print the plan instead of running the items."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool:
        from ..prices import shipped_table
        from .planning import build_plans, plan_lines

        runner = runner_of(session.config)
        plans = build_plans(runner, session.items, lambda item: item.stash.get(SPEC, None))
        reporter = session.config.pluginmanager.getplugin("terminalreporter")
        if reporter is not None:
            reporter.write_sep("=", "skill transfer plan")
            for line in plan_lines(plans, shipped_table().effective):
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
        item.stash[SPEC] = spec
        item.extra_keyword_matches.add(f"{spec.source}_to_{spec.target}")  # `-k` as for collected items
        _mark_model_kinds(item, spec)
        if grouped:
            item.add_marker(pytest.mark.xdist_group(spec.seed_path.name))


def _mark_model_kinds(item: pytest.Item, spec: TransferSpec) -> None:
    from ..models.base import ModelError
    from . import markers

    runner = runner_of(item.config)
    try:
        models = [runner.model(name) for name in (spec.source, spec.target, spec.optimizer) if name]
    except ModelError as exc:
        raise pytest.UsageError(f"{item.nodeid}: {exc}") from None
    markers.mark_kinds(item, models)


@pytest.hookimpl(trylast=True, specname="pytest_collection_modifyitems")
def order_by_seed(items: list[pytest.Item]) -> None:
    """After every other reordering (-p randomly, --ff): a seed's items run one after another.

    Stable: each seed's items move up to its first item, so a seed's cassette is opened once and
    everything else keeps its order.
    """
    first: dict[Any, int] = {}
    keys = []
    for index, item in enumerate(items):
        spec = item.stash.get(SPEC, None)
        group = spec.seed_path.resolve() if spec is not None else index
        keys.append(first.setdefault(group, index))
    items[:] = [item for _, _, item in sorted(zip(keys, range(len(items)), items), key=lambda t: t[:2])]


@pytest.hookimpl(tryfirst=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """On an xdist worker: publish which seed each item uses, for the controller's scheduler."""
    if is_worker(session.config):
        from .xdist_scheduling import write_scopes

        write_scopes(session.config, {item.nodeid: str(item.stash[SPEC].seed_path.resolve())
                                      for item in session.items if SPEC in item.stash})


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
    from ..models.base import ModelCallError, ModelError
    from ..protocol import CalibrationFailed, NoJudgeConfigured
    from ..result_json import result_to_json
    from ..seeds import SeedError
    from .snapshots import TransferSnapshotExtension

    item = request.node
    spec = item.stash[SPEC]
    runner = runner_of(request.config)
    try:
        result = runner.transfer(spec.seed_path, spec.source, spec.target, spec.optimizer)
        seed = runner.seed(spec.seed_path)
    except (SeedError, ModelError, ModelCallError, NoJudgeConfigured, CalibrationFailed) as exc:
        if hasattr(exc, "with_command"):  # a cassette miss: the command that re-records this very item
            exc = exc.with_command(rerecord_command(item, spec))
        from ..redaction import redact_text

        problem = redact_text(f"{spec.seed_path.name} ({spec.source} -> {spec.target}): {exc}")
    else:
        problem = ""
    if problem:
        pytest.fail(safe(problem), pytrace=False)
    data = result_to_json(result, settings_of(request.config).answer_chars)
    data["prompt_cache"] = "auto" if runner.settings.calls.prompt_cache else "off"  # shapes Anthropic requests
    item.stash[RUN] = ItemRun(result, data, seed, spec, snapshot.use_extension(TransferSnapshotExtension))
    item.user_properties.extend(junit_properties(data))
    return result


REQUEST_SHAPING = ("optimizer", "nights", "edit-budget", "limit-replay", "limit-holdout", "samples", "no-direct",
                   "prompt-cache", "transfer-service-tier")


def rerecord_command(item: pytest.Item, spec: TransferSpec) -> str:
    """`pytest <node id> --pair SRC->TGT [the command line's protocol options] --record-mode=new_episodes
    --snapshot-update`: the failing item, with the options that shape its requests (ini keys apply again
    by themselves); its result will change with the new recordings, so its snapshot is written too."""
    import shlex

    from .options import dest

    config = item.config
    parts = ["pytest", item.nodeid, flag(config, "pair"), f"{spec.source}->{spec.target}"]
    if item.nodeid.startswith("/") and config.inipath is not None:
        parts[1:1] = ["-c", str(config.inipath)]  # pytest finds the configuration from the paths it is given
    for option in REQUEST_SHAPING:
        value = getattr(config.option, dest(option), None)
        if value is True:
            parts.append(flag(config, option))
        elif value not in (None, False):
            parts += [flag(config, option), str(value)]
    return shlex.join([*parts, f"{flag(config, 'record-mode')}=new_episodes", "--snapshot-update"])


def junit_properties(data: dict[str, Any]) -> list[tuple[str, object]]:
    """Scores and cost as (name, value) pairs, as `record_property` makes them, for JUnit XML."""
    values = {
        "pair": f"{data['source']}->{data['target']}",
        "baseline": data["baseline_target"],
        "transferred": data["transferred"],
        "direct": data["direct_target"],
        "gain": data["gain"]["mean"],
        "gain_ci_low": data["gain"]["ci_low"],
        "gain_ci_high": data["gain"]["ci_high"],
        "gain_p_value": data["gain"]["p_value"],
        "gain_method": data["gain"]["method"],
        "mdg": data["gain"]["mdg"],
        "restarts": len(data.get("restarts") or []) or None,
        "restart_gain_sd": ((data["gain"].get("restarts") or {}).get("sd")),
        "tasks": data["gain"].get("tasks") or data["gain"]["n"],
        "clusters": data["gain"].get("clusters"),  # with clusters only (the gain's units), and their design effect
        "design_effect": data["gain"].get("design_effect"),
        "efficiency": data["efficiency"],
        "efficiency_ci_low": (data.get("efficiency_ci") or {}).get("ci_low"),
        "efficiency_ci_high": (data.get("efficiency_ci") or {}).get("ci_high"),
        "calls": data["cost"]["calls"],
        "tokens": data["cost"]["tokens"],
        "usd": data["cost"]["total_usd"],
    }
    judge = data.get("judge")
    if judge:
        calibration = judge["calibration"] or {}
        values.update({"judge": judge["model"], "judge_agreement": judge["agreement"],
                       "judge_unstable": len(judge["unstable"]), "judge_errors": judge["errors"],
                       "judge_calibration_accuracy": calibration.get("accuracy")})
    return [(f"skilltransfer_{name}", value) for name, value in values.items() if value is not None]


def _runtest_call(item: pytest.Item) -> Generator[None, Any, Any]:
    """After a transfer test's body passes: gates, snapshot, and the diagnosis on failure."""
    outcome = yield
    run = item.stash.get(RUN, None)
    if run is not None:
        _gate(item, run)
    return outcome


def _gate(item: pytest.Item, run: ItemRun) -> None:
    from . import compare, gating, snapshots
    from ..report import failure_reason
    from .diagnosis import TransferFailed, diagnose

    settings = settings_of(item.config)
    thresholds = settings.thresholds(run.seed.thresholds, run.spec.thresholds)
    committed = snapshots.committed_per_task(run.snapshot, run.data)
    updating = bool(run.snapshot.update_snapshots)
    base = compare.before(item.config, snapshots.location(run.snapshot))
    if base is not None:  # --compare-to: the snapshot committed at the base ref, also while updating
        committed, updating = base.committed(snapshots.parse_per_task), False
    family = sum(1 for other in item.session.items if SPEC in other.stash)
    outcome = gating.evaluate(run.data, thresholds, committed, updating=updating,
                              correction=settings.correction, family=family,
                              reference=base.reference if base is not None else None,
                              expected=run.seed.expected_outcome(run.spec.source, run.spec.target))
    if base is not None:
        run.data["compare"] = base.record(run.data, outcome.as_dict())
    mismatch = snapshots.compare(run.snapshot, run.data) if settings.compare_snapshots else []
    verdict = "fail" if mismatch else outcome.verdict
    written = "updated" if run.snapshot.update_snapshots else "ok"
    run.data["gate"] = {**outcome.as_dict(), "verdict": verdict, "passed": verdict == "pass",
                        "snapshot": mismatch[0] if mismatch else written if settings.compare_snapshots else "not compared"}
    run.data["gate"]["label"] = gating.verdict_label(run.data["gate"])
    for gate in outcome.gates:
        item.user_properties.append((f"skilltransfer_gate_{gate.name}", gate.verdict))
        if gate.tasks_for_power is not None:
            name = "min_gain" if gate.name == "min_gain" else "harm"
            item.user_properties.append((f"skilltransfer_tasks_for_{name}", gate.tasks_for_power))
    item.user_properties.append(("skilltransfer_outcome", run.data["outcome"]))
    item.user_properties.append(("skilltransfer_verdict", run.data["gate"]["label"]))
    if verdict == "fail" or (verdict == "inconclusive" and settings.inconclusive == "fail"):
        texts = {task.id: task.text for task in run.seed.test}
        raise TransferFailed(diagnose({**run.data, "item": plain_nodeid(item.nodeid)}, outcome, run.seed.skill, texts,
                                      mismatch),
                             failure_reason(run.data))
    if verdict == "inconclusive":
        reason = "inconclusive: " + "; ".join(outcome.inconclusive)
        if settings.inconclusive == "xfail":
            pytest.xfail(safe(reason))
        warnings.warn(pytest.PytestWarning(safe(f"{item.nodeid}: {reason}")), stacklevel=1)


def _runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """Close a seed's cassette once the next item belongs to another seed (or there is none)."""
    spec = item.stash.get(SPEC, None)
    following = nextitem.stash.get(SPEC, None) if nextitem is not None else None
    if spec is not None and (following is None or following.seed_path != spec.seed_path):
        from .pruning import may_prune, seed_key

        prune = may_prune(item, seed_key(spec), settings_of(item.config).matrix_from_cli,
                          lambda other: seed_key(other.stash.get(SPEC, None)), lambda other: RUN in other.stash)
        runner_of(item.config).stop_recording(prune=prune)


def _deselected(items: list[pytest.Item]) -> None:
    """A seed with a deselected item is not re-recorded completely: its cassette is not pruned."""
    specs = [item for item in items if SPEC in item.stash]
    if specs:
        from .pruning import note_deselected, seed_key

        note_deselected(specs[0].config, specs, lambda item: seed_key(item.stash.get(SPEC, None)))


def _sessionfinish(session: pytest.Session) -> None:
    runner = session.config.stash.get(RUNNER, None)
    if runner is None:
        return
    runner.stop_recording()
    if runner.recorded:
        from ..inventory import pin

        pin(runner.settings.cassette_dir, sorted(runner.models_used()))
    runner.stop_local_server()
    if runner.budget is not None and is_worker(session.config):
        runner.budget.ledger.close()


def _runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    """Attach the result to the call report, which xdist carries to the controller."""
    report = yield
    if SPEC in item.stash:
        _short_summary(report, call)
    run = item.stash.get(RUN, None)
    if run is not None and report.when == "call":
        setattr(report, REPORT_ATTRIBUTE, {**run.data, "item": plain_nodeid(report.nodeid)})
    spec = item.stash.get(SPEC, None)
    if run is None and spec is not None and report.failed:  # errored before a result: counted in every report
        reason = str(getattr(call.excinfo, "value", "") or report.longreprtext).strip().splitlines()
        setattr(report, ERROR_ATTRIBUTE, {"item": plain_nodeid(report.nodeid), "seed": spec.seed_path.name,
                                          "source": spec.source, "target": spec.target, "when": report.when,
                                          "reason": reason[0] if reason else "error"})
    return report


class ItemHooks:
    """The per-item hooks, registered only in an engaged run (`_engage`): a foreign suite pays nothing per test."""

    pytest_runtest_call = staticmethod(pytest.hookimpl(wrapper=True)(_runtest_call))
    pytest_runtest_teardown = staticmethod(_runtest_teardown)
    pytest_runtest_makereport = staticmethod(pytest.hookimpl(wrapper=True)(_runtest_makereport))
    pytest_deselected = staticmethod(_deselected)
    pytest_sessionfinish = staticmethod(_sessionfinish)


def _short_summary(report: pytest.TestReport, call: pytest.CallInfo[None]) -> None:
    """One line in pytest's short test summary for a transfer failure (the reason first); the item's
    report (longrepr) keeps the whole diagnosis."""
    from .diagnosis import TransferFailed

    crash = getattr(report.longrepr, "reprcrash", None)
    error = getattr(call.excinfo, "value", None)
    if crash is None or not isinstance(error, pytest.fail.Exception) or error.pytrace:
        return
    if isinstance(error, TransferFailed):
        crash.message = error.summary
    elif error.msg and "\n" in error.msg:
        crash.message = error.msg.strip().splitlines()[0]
