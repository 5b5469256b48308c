"""The `skilltransfer` option group: command-line options, their ini keys, and parsing into `Settings`.

Every option is also an ini key: `skilltransfer_` + the option name without a leading
`transfer-`/`skilltransfer-` (`--nights` -> `skilltransfer_nights`, `--transfer-min-gain` ->
`skilltransfer_min_gain`, `--skilltransfer-json` -> `skilltransfer_json`). The command line wins.

The model matrix is `source x target` (a model paired with itself only where it is a target's sole
source: elsewhere that pair is the other pairs' direct reference) plus explicit `--pair SRC:TGT`s. When the command line names
any of `--source`, `--target`, `--pair`, it replaces the ini matrix (a side it leaves out, such as
the targets of `pytest --source=haiku`, comes from the ini). Bad values raise `pytest.UsageError`
naming the option.

Spellings: every option has a prefixed spelling that no other plugin uses (`--transfer-nights`; an
option already named `transfer-…`/`skilltransfer-…` is its own), and the short design spelling
(`--nights`, `--source`, `--shard-id`, ...) as well when no other plugin of this environment owns
it. The prefixed options are registered in `pytest_addoption`; the short ones only once every
plugin and initial conftest has registered its own (`add_short_spellings`), so pytest-shard keeps
its `--shard-id` and this plugin answers to `--transfer-shard-id` there, saying so once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..engine.gate_specs import BUILT_IN as GATES  # the options: built-in gates only
from ..engine.gate_specs import option_gates, threshold_gates
from ..engine.seed_layout import LIMIT_OPTIONS
from ..guards.bounds import MAXIMA
from .spellings import _add, dest, flag, ini_name
from .values import OFF_WORDS, Pair, _bool, _fraction, _int, _path, _seconds, _threshold, parse_pair, split_names

if TYPE_CHECKING:  # the engine is imported when a run has seeds or shows --help, not by every pytest run
    from ..engine.results import ProtocolConfig
    from ..engine.seed_data import JudgeSettings, SeedLimits, Thresholds
    from ..models.sdk_common import CallPolicy

INT_SETTINGS = {  # option -> (ProtocolConfig field, smallest allowed value, help); maxima in `bounds.MAXIMA`
    "nights": ("nights", 1, "optimization nights"),
    "edit-budget": ("edit_budget", 1, "edits applied per night at most"),
    "limit-replay": ("limit_replay", 0, "training tasks replayed per night (0 = all)"),
    "limit-holdout": ("limit_holdout", 0, "validation tasks scored per gate decision (0 = all)"),
    "limit-test": ("limit_test", 0, "held-out test tasks scored (0 = all)"),
    "samples": ("samples", 1, "rollouts per task (narrows intervals; the method stays the same)"),
    "restarts": ("restarts", 1, "independent optimizations per seed and pair, each with its own train/val split "
                 "and optimizer sample ids; the gain's interval includes their spread, and harm, min_gain and "
                 "regression still fail whenever restart 1 alone or the mean of these skills fails them"),
}
INCONCLUSIVE_ACTIONS = ("fail", "xfail", "pass")  # what an inconclusive gate does to its pytest item


def add_options(parser: Any) -> None:
    """Register the `skilltransfer` group and its ini keys (on pytest's parser, or the CLI's stand-in).

    `--record-mode` is pytest-recording's where it is loaded; this plugin then reads that value (see
    `_record_mode`) and answers to `--transfer-record-mode`.
    """
    group = parser.getgroup("skilltransfer", "skill transfer: optimize a skill on SOURCE, measure it on TARGET")
    for role, text in (("source", "model the skill is optimized with"), ("target", "model the frozen skill is deployed on")):
        _add(group, parser, role, f"{text}; repeat or comma-separate for several (items: source x target)",
             "args", action="append", metavar="MODEL")
    _add(group, parser, "pair", "an explicit SRC:TGT pair, e.g. the reverse direction; repeatable", "args",
         action="append", metavar="SRC:TGT")
    _add(group, parser, "optimizer", "model that proposes edits (default: the agent model itself)", metavar="MODEL")
    _add(group, parser, "validate-on", "a validation set of models: each night's candidate edit is also scored on "
         "their validation split and kept only when the source strictly improves and none of them drops, in its gate "
         "score or in its pass rate on any kind of check, beyond --transfer-validate-tolerance; the item then reports the skill optimized so beside today's (a seed's "
         "validate_on overrides the ini; the command line overrides both); comma-separate or repeat",
         "args", action="append", metavar="MODEL[,MODEL...]")
    _add(group, parser, "validate-tolerance", "how far a listed model's validation score, and its pass rate on each "
         "kind of check, may drop under an accepted edit (default 0: not at all)", metavar="X")
    _add(group, parser, "judge", "judge model for rubric checks (a seed's [judge] model overrides the ini; the "
         "command line overrides both)", metavar="MODEL")
    _add(group, parser, "judge-samples", f"judge calls per rubric check, majority vote (default 1, at most {MAXIMA['judge_samples']})", metavar="N")
    _add(group, parser, "judge-min-accuracy", lambda: "least judge accuracy on a seed's judge-calibration.jsonl "
         f"(default {_defaults('min_accuracy')})", metavar="X")
    for option, (name, _, text) in INT_SETTINGS.items():
        most = f", at most {MAXIMA[name]}" if name in MAXIMA else ""
        _add(group, parser, option, lambda text=text, name=name, most=most:
             f"{text} (default {getattr(_defaults('protocol'), name)}{most})", metavar="N")
    _add(group, parser, "min-delta", "the validation gate keeps a night's edits only when the val score beats the "
         "current one by more than X (default: the scoring profile's, 0 = any strict improvement; gbrain 0.05)",
         metavar="X")
    _add(group, parser, "scoring", "scoring profile: default (hard and soft, mean over samples, gate on any strict "
         "gain) or gbrain (fraction of checks per rollout, median of 3 samples, gate above best + 0.05)",
         metavar="PROFILE")
    _add(group, parser, "no-direct", "skip the direct optimization on the target (no efficiency)",
         action="store_true", default=None)
    _add(group, parser, "direct-on-demand", "run the direct reference (optimize and score on the target) only "
         "where it can change the reading: when the transferred skill shows no gain on the target "
         "(docs/protocol.md)", action="store_true", default=None)
    _add(group, parser, "design", "how held-out tasks are scored: group-sequential (the default: in waves, each "
         "pair stopped once its verdict is decided, alpha spent across the looks) or fixed (every task at once); "
         "docs/protocol.md", metavar="DESIGN")
    _add(group, parser, "only-seed", "keep only the items of this seed: its matrix items and the hand-written "
         "tests naming it (so a re-record covers the seed completely); repeat or comma-separate for several",
         "args", action="append", metavar="SEED")
    _add(group, parser, "seeds-dir", "folder of seeds (or one seed) to collect as well; repeatable", "paths",
         action="append", metavar="DIR")
    for name in option_gates():
        _add(group, parser, GATES[name].option, f"gate {name}: {GATES[name].help} (overrides seed.toml; 'off' disables)",
             metavar="X")
    _add(group, parser, "no-snapshots", "measure and gate without comparing the committed snapshots "
         "(the CLI's default; the regression gate still reads them)", action="store_true", default=None)
    _add(group, parser, "transfer-inconclusive", "what an inconclusive gate does to its test: fail (default: an "
         "unproven claim is not a pass), xfail, or pass (with a warning)", metavar="ACTION")
    _add(group, parser, "transfer-correction", "error control of the gates and outcome words "
         "over the run's items: bonferroni (default: family-wise error 0.05 over the run's new evidence) or none "
         "(each item alone at level 0.95)", metavar="METHOD")
    _add(group, parser, "skilltransfer-json", "write the JSON report (the CLI's --json shape) to PATH; "
         "gzip-compressed when PATH ends in .gz", metavar="PATH")
    _add(group, parser, "skilltransfer-md", "write a Markdown report with charts (for CI job summaries) to PATH",
         metavar="PATH")
    _add(group, parser, "skilltransfer-html", "write one self-contained HTML page (per-item drill-down, task x arm "
         "matrix, answers, skill diff, nights, cost; opens from disk) to PATH", metavar="PATH")
    _add(group, parser, "skilltransfer-progress", "live progress while a run records: auto (a line every 10 s on a "
         "terminal, 60 s in a log, when some item can record), off, or SECONDS", metavar="auto|off|SECONDS")
    _add(group, parser, "skilltransfer-answer-chars", "characters of each answer kept in the JSON and HTML reports "
         "(0 = none; default 2000)", metavar="N")
    _add(group, parser, "record-mode", "cassettes for real providers: none|once|new_episodes|all "
         "(default: none, replay only, when $CI is set; else once)", metavar="MODE")
    _add(group, parser, "cassette-dir", "folder of recorded provider traffic (default: <rootdir>/cassettes)",
         metavar="DIR")
    _add(group, parser, "max-concurrency", "concurrent calls per model at most: N for every model, MODEL=N for "
         "one; repeatable (default: 8 per provider model, lowered on rate limits; 1 for the simulator and the "
         "local llama server)", "args", action="append", metavar="[MODEL=]N")
    _add(group, parser, "plan", "print per item and in total the most calls, tokens and dollars the protocol can "
         "take and which calls the cassettes already hold, then stop without calling a model", "bool",
         action="store_true", default=None)
    _add(group, parser, "max-cost", "a budget the run cannot cross: each live provider call reserves its worst-case "
         "dollars before it is sent and is settled to its usage; a call that does not fit is not sent (what was "
         "recorded is kept); unpriced models are refused", metavar="USD")
    _add(group, parser, "transfer-budget-ledger", "the SQLite file that holds the --max-cost reservations; several "
         "pytest processes given the same file share one budget (default: a temporary file per run)", metavar="PATH")
    _add(group, parser, "transfer-service-tier", "OpenAI service tier for every OpenAI model of the run: flex (batch "
         "prices on the synchronous API, slower, occasional 429 resource unavailable) or default; a model's own "
         "service_tier in [tool.skilltransfer.models] wins", metavar="TIER")
    for name, option in LIMIT_OPTIONS.items():
        what = {"skill_bytes": "SKILL.md", "task_bytes": "each task's text", "corpus_bytes": "a seed's corpus pages in all"}
        _add(group, parser, option[2:], lambda text=what[name], name=name: f"size limit of {text} in bytes "
             f"(default {getattr(_defaults('limits'), name)})", metavar="BYTES")
    _add(group, parser, "provider-retries", lambda: "retries of a provider call on 429/529/5xx/timeouts/resets "
         "(the SDKs' retry machinery; a retry-after the provider sends is waited for) "
         f"(default {_defaults('calls').max_retries})", metavar="N")
    _add(group, parser, "provider-backoff", lambda: "wait before the first retry, doubling up to MAX, in seconds "
         f"(default {_defaults('calls').backoff_s:g}:{_defaults('calls').max_backoff_s:g})", metavar="FIRST[:MAX]")
    _add(group, parser, "provider-timeout", lambda: "seconds one provider call may take "
         f"(default {_defaults('calls').timeout_s:g})", metavar="S")
    _add(group, parser, "transfer-call-deadline", lambda: "seconds one provider call may take in all, its retries and "
         "the waits between them included; then the item fails naming what was tried "
         f"(default {_defaults('calls').deadline_s:g})", metavar="S")
    _add(group, parser, "prompt-cache", "auto: mark the shared prefix of Anthropic requests (skill system prompt, "
         "tools) with cache_control when it reaches the model's minimum cacheable length; off: never (a prefix "
         "sent once is cheaper uncached; some proxies reject the field). Request bodies differ, so cassettes "
         "recorded under one setting miss under the other (default auto)", metavar="MODE")
    _add(group, parser, "local-server", "auto: start the local llama.cpp server when a local model has calls to "
         "record and SKILLTRANSFER_LOCAL_URL is unset; off: never (default auto)", metavar="MODE")


def _defaults(kind: str) -> Any:
    """The engine's defaults, imported when they are needed (a run with seeds, or --help)."""
    if kind == "protocol":
        from ..engine.results import ProtocolConfig

        return ProtocolConfig()
    if kind == "calls":
        from ..models.sdk_common import CallPolicy

        return CallPolicy()
    if kind == "limits":
        from ..engine.seed_data import SeedLimits

        return SeedLimits()
    if kind == "judge":
        from ..engine.seed_data import JudgeSettings

        return JudgeSettings()
    from ..engine.rubric import DEFAULT_MIN_ACCURACY

    return DEFAULT_MIN_ACCURACY


@dataclass(frozen=True)
class Settings:
    """Everything the plugin reads from the command line and ini, validated."""

    pairs: tuple[Pair, ...] = ()
    matrix_from_cli: bool = False  # the command line named the matrix: seed.toml `pairs` are not added
    configured_pairs: tuple[Pair, ...] = ()  # the ini matrix (what `pairs` is when the command line names none)
    optimizer: str | None = None
    ini_validate_on: tuple[str, ...] = ()  # --validate-on from the ini (a seed's validate_on wins over it)
    cli_validate_on: tuple[str, ...] = ()  # --validate-on on the command line (wins over a seed's)
    validate_tolerance: float | None = None  # --validate-tolerance (None: the seed's, else 0)
    protocol: ProtocolConfig = field(default_factory=lambda: _defaults("protocol"))
    ini_thresholds: dict[str, float | None] = field(default_factory=dict)
    cli_thresholds: dict[str, float | None] = field(default_factory=dict)
    seeds_dirs: tuple[Path, ...] = ()
    json_path: Path | None = None
    md_path: Path | None = None
    html_path: Path | None = None
    answer_chars: int = 2000
    record_mode: str | None = None  # None: the cassettes' default (replay only under CI)
    cassette_dir: Path = Path("cassettes")
    local_server: str = "auto"
    only_seeds: tuple[str, ...] = ()  # --only-seed: keep only these seeds' items
    compare_snapshots: bool = True
    inconclusive: str = "fail"
    correction: str = "bonferroni"
    concurrency: int | None = None  # --max-concurrency N (None: each backend's default)
    model_concurrency: dict[str, int] = field(default_factory=dict)  # --max-concurrency MODEL=N
    plan: bool = False
    max_cost: float | None = None  # --max-cost USD (None: no budget)
    budget_ledger: str | None = None  # --transfer-budget-ledger PATH (None: a temporary file)
    calls: CallPolicy = field(default_factory=lambda: _defaults("calls"))  # --provider-retries/-backoff/-timeout, --prompt-cache
    seed_limits: SeedLimits = field(default_factory=lambda: _defaults("limits"))  # --max-skill-bytes/-task-bytes/-corpus-bytes
    ini_judge: JudgeSettings = field(default_factory=lambda: _defaults("judge"))
    cli_judge: JudgeSettings = field(default_factory=lambda: _defaults("judge"))

    def validate_on(self, seed: tuple[str, ...]) -> tuple[str, ...]:
        """ini < seed.toml validate_on < command line; `off` anywhere above clears the layers below it."""
        for layer in (self.cli_validate_on, seed, self.ini_validate_on):
            if layer:
                return () if layer == ("off",) else layer
        return ()

    def judge(self, seed: JudgeSettings) -> JudgeSettings:
        """ini < seed.toml [judge] < command line, then the defaults (1 sample, min accuracy 0.8)."""
        from ..engine.rubric import DEFAULT_MIN_ACCURACY
        from ..engine.seed_data import JudgeSettings

        values = {k: v for layer in (self.ini_judge, seed, self.cli_judge) for k, v in layer.__dict__.items()
                  if v is not None}
        return JudgeSettings(**{"samples": 1, "min_accuracy": DEFAULT_MIN_ACCURACY, **values})

    def thresholds(self, seed: Thresholds, marker: dict[str, Any] | None = None) -> Thresholds:
        """default < seed.toml < ini < the test's marker < command line; None (`off`) turns a gate off.

        The defaults are the regression gate's tolerance (`DEFAULT_REGRESSION_TOLERANCE`) and the harm
        gate's (`DEFAULT_HARM_TOLERANCE`); every other gate is off until set.
        """
        from ..engine.seed_data import Thresholds
        from .gating import DEFAULT_HARM_TOLERANCE, DEFAULT_REGRESSION_TOLERANCE

        values = {"regression_tolerance": DEFAULT_REGRESSION_TOLERANCE, "harm_tolerance": DEFAULT_HARM_TOLERANCE,
                  **seed.values(), **self.ini_thresholds,
                  **(marker or {}), **self.cli_thresholds}
        return Thresholds(**{k: v for k, v in values.items() if k in threshold_gates()})


class _Reader:
    """Reads one option from the command line, falling back to its ini key."""

    def __init__(self, config: pytest.Config):
        self.config = config

    def cli(self, option: str) -> Any:
        return getattr(self.config.option, dest(option), None)

    def ini(self, option: str) -> Any:
        value = self.config.getini(ini_name(option))
        return None if value in ("", [], None) else value

    def get(self, option: str) -> tuple[Any, str]:
        """(value, where it came from) with the command line first."""
        value = self.cli(option)
        if value is not None:
            return value, self.flag(option)
        return self.ini(option), ini_name(option)

    def flag(self, option: str) -> str:
        return flag(self.config, option)


def build_matrix(reader: _Reader, ini_only: bool = False) -> tuple[Pair, ...]:
    """source x target plus explicit pairs, sorted; the command line replaces the ini matrix (`ini_only`:
    the ini matrix whatever the command line says)."""
    cli = {o: [] if ini_only else split_names(reader.cli(o)) for o in ("source", "target", "pair")}
    ini = {o: split_names(reader.ini(o)) for o in ("source", "target", "pair")}
    if any(cli.values()):
        sources = cli["source"] or (ini["source"] if cli["target"] else [])
        targets = cli["target"] or (ini["target"] if cli["source"] else [])
        pairs, pair_where = cli["pair"], reader.flag("pair")
        where = f"{reader.flag('source')}/{reader.flag('target')}"
    else:
        sources, targets, pairs = ini["source"], ini["target"], ini["pair"]
        pair_where, where = ini_name("pair"), f"{ini_name('source')}/{ini_name('target')}"
    if bool(sources) != bool(targets):
        raise pytest.UsageError(f"{where}: sources need targets and targets need sources "
                                "(or name pairs with --pair SRC:TGT)")
    matrix = cross_product(sources, targets) | {parse_pair(p, pair_where) for p in pairs}
    return tuple(sorted(matrix))


def cross_product(sources: list[str], targets: list[str]) -> set[Pair]:
    """Every source with every target, except a model with itself where the target has another source: that
    pair is the direct reference (optimized and scored on the target), which the other pairs' items run."""
    return {(s, t) for s in sources for t in targets if s != t or not set(sources) - {t}}


def _ini_matrix(reader: _Reader) -> tuple[Pair, ...]:
    """The ini matrix alone; empty when it is only half of one (sources the command line gives targets to)."""
    try:
        return build_matrix(reader, ini_only=True)
    except pytest.UsageError:
        return ()


def _validate_on(value: Any, where: str) -> tuple[str, ...]:
    """The model names of --validate-on (repeated or comma-separated; `off`: none, clearing the layers below)."""
    names = tuple(split_names(value if isinstance(value, list) else [value] if value else []))
    if any(name.lower() in OFF_WORDS for name in names):
        if len(names) > 1:
            raise pytest.UsageError(f"{where}: 'off' cannot be combined with model names, got {', '.join(names)}")
        return ("off",)
    return names


def _judge_layers(reader: _Reader) -> tuple[JudgeSettings, JudgeSettings]:
    """(ini, command line) judge settings, each validated where it came from."""
    from ..engine.seed_data import JudgeSettings

    layers = []
    for read, where in ((reader.ini, ini_name), (reader.cli, reader.flag)):
        model, samples, accuracy = read("judge"), read("judge-samples"), read("judge-min-accuracy")
        number = _threshold(accuracy, where("judge-min-accuracy")) if accuracy is not None else None
        if accuracy is not None and number is None:  # `off`: calibration is reported but never fails a seed
            number = 0.0
        if number is not None and not 0 <= number <= 1:
            raise pytest.UsageError(f"{where('judge-min-accuracy')}: must be within [0, 1], got {number}")
        layers.append(JudgeSettings(
            model=str(model).strip() or None if model is not None else None,
            samples=_int(samples, where("judge-samples"), 1, "judge_samples") if samples is not None else None,
            min_accuracy=number,
        ))
    return layers[0], layers[1]


def _choice(reader: _Reader, option: str, choices: tuple[str, ...]) -> str:
    value, where = reader.get(option)
    choice = str(value if value is not None else choices[0]).strip().lower()
    if choice not in choices:
        raise pytest.UsageError(f"{where}: expected one of {', '.join(choices)}, got {value!r}")
    return choice


def _local_server(reader: _Reader) -> str:
    value, where = reader.get("local-server")
    mode = str(value or "auto").strip()
    if mode not in ("auto", "off"):
        raise pytest.UsageError(f"{where}: expected auto or off, got {value!r}")
    return mode


def _record_mode(reader: _Reader) -> str | None:
    value, where = reader.get("record-mode")
    recording_plugin = getattr(reader.config.option, "record_mode", None)  # pytest-recording's --record-mode
    if value is None and recording_plugin:
        value, where = ("all" if recording_plugin == "rewrite" else recording_plugin), "--record-mode"
    if value is None:
        return None
    from ..cassettes import RECORD_MODES  # vcrpy helpers: imported only when the option is used

    if value not in RECORD_MODES:
        raise pytest.UsageError(f"{where}: expected one of {', '.join(RECORD_MODES)}, got {value!r}")
    return str(value)


def _concurrency(reader: _Reader) -> tuple[int | None, dict[str, int]]:
    """`N` (every model) and `MODEL=N` entries of --max-concurrency; the command line replaces the ini."""
    values, where = reader.get("max-concurrency")
    overall: int | None = None
    per_model: dict[str, int] = {}
    for entry in split_names(values if isinstance(values, list) else ([values] if values else [])):
        name, equals, number = entry.rpartition("=")
        if equals and not name.strip():
            raise pytest.UsageError(f"{where}: expected N or MODEL=N, got {entry!r}")
        if equals:
            per_model[name.strip()] = _int(number, f"{where} ({name.strip()})", 1, "max_concurrency")
        else:
            overall = _int(number, where, 1, "max_concurrency")
    return overall, per_model


def _max_cost(reader: _Reader) -> float | None:
    value, where = reader.get("max-cost")
    if value is None or str(value).strip().lower() in OFF_WORDS:
        return None
    try:
        number = float(str(value).strip().removeprefix("$"))
    except ValueError:
        raise pytest.UsageError(f"{where}: expected dollars such as 2.50, got {value!r}") from None
    if not 0 < number < float("inf"):
        raise pytest.UsageError(f"{where}: the budget must be a finite number of dollars above 0, got {value!r} "
                                "(for no budget, leave the option out or give it 'off')")
    return number


SERVICE_TIERS = ("flex", "default")


def _service_tier(reader: _Reader) -> str | None:
    value, where = reader.get("transfer-service-tier")
    if value is None or not str(value).strip():
        return None
    tier = str(value).strip().lower()
    if tier not in SERVICE_TIERS:
        raise pytest.UsageError(f"{where}: unknown service tier {value!r}; use {' or '.join(SERVICE_TIERS)}")
    return tier


def plan_requested(config: pytest.Config) -> bool:
    """Whether --plan (or its ini key) is on."""
    value, where = _Reader(config).get("plan")
    return value is not None and _bool(value, where)


def _call_policy(reader: _Reader) -> CallPolicy:
    """--provider-retries, --provider-backoff FIRST[:MAX], --provider-timeout, --transfer-call-deadline and
    --prompt-cache over the defaults."""
    from ..models.sdk_common import CallPolicy

    policy: dict[str, Any] = {}
    value, where = reader.get("provider-retries")
    if value is not None:
        policy["max_retries"] = _int(value, where, 0, "provider_retries")
    value, where = reader.get("provider-backoff")
    if value is not None:
        first, _, most = str(value).partition(":")
        policy["backoff_s"] = _seconds(first, where)
        policy["max_backoff_s"] = _seconds(most, where) if most.strip() else max(policy["backoff_s"],
                                                                                  CallPolicy().max_backoff_s)
        if policy["max_backoff_s"] < policy["backoff_s"]:
            raise pytest.UsageError(f"{where}: MAX must not be below FIRST, got {value!r}")
    value, where = reader.get("provider-timeout")
    if value is not None:
        policy["timeout_s"] = _seconds(value, where)
    value, where = reader.get("transfer-call-deadline")
    if value is not None:
        policy["deadline_s"] = _seconds(value, where)
    policy["prompt_cache"] = _choice(reader, "prompt-cache", ("auto", "off")) == "auto"
    policy["service_tier"] = _service_tier(reader)
    return CallPolicy(**policy)


def _seed_limits(reader: _Reader) -> SeedLimits:
    from ..engine.seed_data import SeedLimits

    limits: dict[str, int] = {}
    for name, option in LIMIT_OPTIONS.items():
        value, where = reader.get(option[2:])
        if value is not None:
            limits[name] = _int(value, where, 1)
    return SeedLimits(**limits)


def read_settings(config: pytest.Config) -> Settings:
    """Parse and validate every skilltransfer option; raise pytest.UsageError naming the bad one."""
    from ..engine.results import ProtocolConfig
    from ..engine.scoring import PROFILES
    from .gating import CORRECTIONS

    reader = _Reader(config)
    protocol: dict[str, Any] = {}
    for option, (name, low, _) in INT_SETTINGS.items():
        value, where = reader.get(option)
        if value is not None:
            protocol[name] = _int(value, where, low, name if name in MAXIMA else None)
    no_snapshots, snapshots_where = reader.get("no-snapshots")
    min_delta, where = reader.get("min-delta")
    if min_delta is not None:
        protocol["min_delta"] = _fraction(min_delta, where)
    protocol["scoring"] = _choice(reader, "scoring", tuple(PROFILES))
    if "samples" not in protocol:
        protocol["samples"] = PROFILES[protocol["scoring"]].samples  # gbrain: the median of 3
    no_direct, where = reader.get("no-direct")
    protocol["direct"] = not _bool(no_direct, where) if no_direct is not None else True
    on_demand, where = reader.get("direct-on-demand")
    protocol["direct_on_demand"] = _bool(on_demand, where) if on_demand is not None else False
    protocol["design"] = _choice(reader, "design", ("group-sequential", "fixed"))
    layers: dict[str, dict[str, float | None]] = {"ini": {}, "cli": {}}
    for name in option_gates():
        option = GATES[name].option
        for layer, value, where in (("ini", reader.ini(option), ini_name(option)), ("cli", reader.cli(option), reader.flag(option))):
            if value is not None:
                layers[layer][name] = _threshold(value, where)
    cwd = config.invocation_params.dir
    seeds_dirs = [_path(p, cwd) for p in reader.cli("seeds-dir") or []]
    seeds_dirs += [Path(p) for p in reader.ini("seeds-dir") or [] if Path(p) not in seeds_dirs]
    for path in seeds_dirs:
        if not path.is_dir():
            raise pytest.UsageError(f"{reader.flag('seeds-dir')} / {ini_name('seeds-dir')}: {path} is not a folder")
    optimizer, _ = reader.get("optimizer")
    tolerance, tolerance_where = reader.get("validate-tolerance")
    json_path, _ = reader.get("skilltransfer-json")
    md_path, _ = reader.get("skilltransfer-md")
    html_path, _ = reader.get("skilltransfer-html")
    answer_chars, answer_where = reader.get("skilltransfer-answer-chars")
    cassette_dir, _ = reader.get("cassette-dir")
    ini_judge, cli_judge = _judge_layers(reader)
    concurrency, model_concurrency = _concurrency(reader)
    return Settings(
        pairs=build_matrix(reader),
        matrix_from_cli=any(reader.cli(o) for o in ("source", "target", "pair")),
        configured_pairs=_ini_matrix(reader),
        optimizer=optimizer or None,
        ini_validate_on=_validate_on(reader.ini("validate-on"), ini_name("validate-on")),
        cli_validate_on=_validate_on(reader.cli("validate-on"), reader.flag("validate-on")),
        validate_tolerance=_fraction(tolerance, tolerance_where) if tolerance is not None else None,
        protocol=ProtocolConfig(**protocol),
        ini_thresholds=layers["ini"],
        cli_thresholds=layers["cli"],
        seeds_dirs=tuple(seeds_dirs),
        json_path=_path(json_path, cwd) if json_path else None,
        md_path=_path(md_path, cwd) if md_path else None,
        html_path=_path(html_path, cwd) if html_path else None,
        answer_chars=_int(answer_chars, answer_where, 0) if answer_chars is not None else Settings.answer_chars,
        record_mode=_record_mode(reader),
        cassette_dir=_path(cassette_dir, cwd) if cassette_dir else config.rootpath / "cassettes",
        local_server=_local_server(reader),
        only_seeds=tuple(split_names(reader.cli("only-seed"))),
        ini_judge=ini_judge,
        cli_judge=cli_judge,
        inconclusive=_choice(reader, "transfer-inconclusive", INCONCLUSIVE_ACTIONS),
        correction=_choice(reader, "transfer-correction", CORRECTIONS),
        concurrency=concurrency,
        model_concurrency=model_concurrency,
        plan=plan_requested(config),
        max_cost=_max_cost(reader),
        budget_ledger=reader.get("transfer-budget-ledger")[0] or None,
        compare_snapshots=not _bool(no_snapshots, snapshots_where) if no_snapshots is not None else True,
        calls=_call_policy(reader),
        seed_limits=_seed_limits(reader),
    )


def apply_project_tables(config: pytest.Config) -> dict[str, Any]:
    """Apply pyproject's `[tool.skilltransfer.models]` aliases and `[tool.skilltransfer.prices]`;
    returns the models table."""
    pyproject = config.rootpath / "pyproject.toml"
    if not pyproject.is_file():
        return {}
    import tomllib

    try:
        table = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("tool", {}).get("skilltransfer", {})
    except tomllib.TOMLDecodeError as exc:
        raise pytest.UsageError(f"{pyproject}: invalid TOML: {exc}") from None
    from ..models.base import ModelError

    try:
        if table.get("models"):
            from ..models.providers import configure_aliases

            configure_aliases(table["models"])
        if table.get("prices"):
            from ..pricing.prices import configure_prices

            configure_prices(table["prices"])
    except (ModelError, ValueError) as exc:
        raise pytest.UsageError(f"{pyproject}: {exc}") from None
    return dict(table.get("models") or {})
