"""The plugin's side of the engine: one `SeedSession` per seed per process, resolved models, cassettes.

A `SeedSession` memoizes a seed's baselines and optimizations, so every item of one seed that runs
in this process shares them (xdist sends all of a seed's items to one worker, see `plugin`).

Cassettes: when a run involves a provider model (anthropic / openai SDKs), the seed's recording
(`cassettes.recording`) is opened before the run and kept open for the seed's following items;
the plugin closes it when the next item belongs to another seed (or at the end). One context per
seed, not per item: `once` decides which models may record when the cassette is opened, so a
second pair of the same seed must find the context of the first still open.
"""

from __future__ import annotations

import threading
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ..models.base import Model, ModelCallError, ModelError, ModelRef
from .options import Settings

if TYPE_CHECKING:  # the engine is imported where a seed is first used: an xdist controller runs none
    from ..engine.aa import AACheck
    from ..engine.protocol import SeedSession
    from ..engine.results import Costs, TransferResult
    from ..engine.rubric import JudgeSetup
    from ..engine.seed_data import Seed, SeedError
    from .budget import Budget
    from ..evidence.sequential import Stopping

Progress = Callable[[str], None]


def needs_recording(models: list[Model]) -> bool:
    """True when a model talks to a provider SDK (whose HTTP the cassettes record); the simulator and
    in-process test models never need a cassette."""
    from ..models.providers import ProviderModel

    return any(isinstance(m, ProviderModel) for m in models)


def concurrency(model: Model) -> int:
    """How many attempts of one evaluation run at once: a provider model's limiter maximum; for other
    models (the in-process simulator) the user's --max-concurrency, else 1."""
    from ..models.limiter import LIMITERS

    maximum = getattr(model, "max_concurrency", None)
    return maximum if isinstance(maximum, int) else LIMITERS.maximum(model.model_id, 1)


@dataclass
class Runner:
    """Loaded seeds, models and seed sessions of this process, keyed so each is built once."""

    settings: Settings
    progress: Progress
    _seeds: dict[Path, Seed | SeedError] = field(default_factory=dict)
    _keys: dict[Path, Path] = field(default_factory=dict)  # a seed path as given -> resolved, once
    _sessions: dict[Path, SeedSession] = field(default_factory=dict)
    _models: dict[str, Model] = field(default_factory=dict)
    broken_seeds: set[str] = field(default_factory=set)  # node ids of seeds that failed to load
    _recording: tuple[str, ExitStack] | None = None  # (seed name, its open cassette context)
    _local_server: OnDemandServer | None = None  # a local llama-server this process starts when needed
    budget: "Budget | None" = None  # --max-cost
    concurrent_phases: bool = True  # a transfer's independent phases run at the same time (see `phases`)
    recorded: bool = False  # a recording context that may write was opened (models.lock pins its aliases)

    def key(self, path: Path) -> Path:
        """The seed folder `path` names, symlinks resolved (once per path: the seed is loaded once, too)."""
        key = self._keys.get(path)
        if key is None:
            key = self._keys[path] = path.resolve()
        return key

    def seed(self, path: Path) -> Seed:
        """Load a seed once; raises the engine's SeedError (every problem, file:line) each time it is asked."""
        from ..engine.seed_data import SeedError
        from ..engine.seeds import load_seed

        key = self.key(path)
        if key not in self._seeds:
            try:
                self._seeds[key] = load_seed(key, self.settings.seed_limits)
            except SeedError as exc:
                self._seeds[key] = exc
        loaded = self._seeds[key]
        if isinstance(loaded, SeedError):
            raise loaded
        return loaded

    def ref(self, name: str) -> ModelRef:
        """The run's reference for a model name: its name, id and provider (resolved once, as `model`)."""
        return ModelRef.of(name, self.model(name))

    def models_used(self) -> set[str]:
        """The model names this process resolved."""
        return set(self._models)

    def model(self, name: str) -> Model:
        """Resolve a model name once per process (raises ModelError listing the known names)."""
        if name not in self._models:
            from ..models.registry import resolve_model

            self._models[name] = resolve_model(name)
        return self._models[name]

    def prune_scope(self, path: Path) -> tuple[list[tuple[str, str]], list[str]]:
        """For pruning a seed's cassette: the pairs the configured matrix defines for it beyond the command
        line's (ini matrix and seed.toml pairs, when the command line names the matrix), and the model names
        every item may use (the judge, the configured optimizers and the validation models)."""
        seed = self.seed(path)
        configured = (list(set(self.settings.configured_pairs) | set(seed.pairs))
                      if self.settings.matrix_from_cli else [])
        chosen = self.settings.judge(seed.judge)
        shared = [name for name in (chosen.model, seed.judge.model, self.settings.optimizer, seed.optimizer) if name]
        validating = (*self.settings.ini_validate_on, *self.settings.cli_validate_on, *seed.validate_on)
        shared += [name for name in validating if name != "off"]
        return configured, shared

    def model_files(self, names: Any) -> frozenset[str] | None:
        """The cassette model files of these model names; None when one cannot be resolved."""
        from ..cassettes.store import file_name

        try:
            return frozenset(file_name(self.model(name).model_id) for name in names)
        except ModelError:
            return None

    def judge(self, seed: Seed) -> JudgeSetup | None:
        """The seed's judge (command line > seed.toml [judge] > ini), or None when none is configured."""
        chosen = self.settings.judge(seed.judge)
        if chosen.model is None:
            return None
        try:
            model = self.model(chosen.model)
        except ModelError as exc:
            if chosen.model == seed.judge.model:
                raise ModelError(f"{seed.path / 'seed.toml'} [judge] model: {exc}") from None
            raise
        from ..engine.rubric import JudgeSetup

        return JudgeSetup(model, chosen.samples or 1, chosen.min_accuracy or 0.0)

    def session(self, path: Path) -> SeedSession:
        key = self.key(path)
        if key not in self._sessions:
            from ..engine.protocol import SeedSession

            seed = self.seed(key)
            self._sessions[key] = SeedSession(seed, self.settings.protocol, self.progress, concurrency,
                                              judge=self.judge(seed), concurrent_phases=self.concurrent_phases)
        return self._sessions[key]

    def transfer(self, path: Path, source: str, target: str, optimizer: str | None,
                 validate_on: tuple[str, ...] = (), tolerance: float = 0.0,
                 stopping: "Stopping | None" = None) -> TransferResult:
        """Run (or reuse) the protocol for one seed and pair, inside the seed's cassette when needed;
        `validate_on`: the validation set of models (see `engine.validation`)."""
        if self.budget is not None and self.budget.refusal:
            raise ModelError(self.budget.refusal)  # an unpriced model under --max-cost: nothing is sent
        session = self.session(path)
        names = [source, target] + ([optimizer] if optimizer else []) + list(validate_on)
        models = [self.model(name) for name in names]
        if needs_recording(models + ([session.judge.model] if session.judge else [])):
            self.record(session.seed.name)
            if self.start_local_server(models):
                models = [self.model(name) for name in names]
        listed = tuple(models[len(names) - len(validate_on):])
        try:
            result = session.transfer(models[0], models[1], models[2] if optimizer else None, listed, tolerance,
                                      stopping)
            from ..guards.redaction import strip_userinfo  # names as node ids show them: no base-URL credentials

            return replace(result, source_name=strip_userinfo(source), target_name=strip_userinfo(target))
        except ModelCallError as exc:
            if session.phase and hasattr(exc, "with_phase") and getattr(exc, "phase", None) != "judge":
                # a cassette miss: name the protocol phase (a judge call's miss already names `judge`)
                raise exc.with_phase(session.phase) from exc.__cause__
            raise

    def unbilled(self, path: Path) -> "Costs":
        """What the seed's session spent that no result paid (`SeedSession.unbilled`; empty without a session)."""
        session = self._sessions.get(self.key(path))
        return session.unbilled() if session is not None else {}

    def aa(self, path: Path, target: str, skill: str, temperature: float | None = None) -> "AACheck":
        """The A/A check of `skill` on `target` over the seed's held-out tasks, in the seed's cassette
        (with a `temperature`: both scorings sampled at it)."""
        from ..engine.aa import aa_check

        session = self.session(path)
        model = self.model(target)
        if needs_recording([model]):
            self.record(session.seed.name)
            if self.start_local_server([model]):
                model = self.model(target)
        session.phase = "aa-check"
        try:
            return aa_check(session, model, skill, temperature=temperature)
        except ModelCallError as exc:
            if hasattr(exc, "with_phase"):
                raise exc.with_phase(session.phase) from exc.__cause__
            raise
        finally:
            session.phase = ""

    def start_local_server(self, models: list[Model]) -> bool:
        """With --local-server=auto, when a local model may have calls to record, point it at a free loopback
        port where llama-server starts on the first call its cassette cannot replay (once per process; a
        fully recorded seed never starts it, nor needs it installed).

        Returns True when it chose the port: local models are then resolved again against its URL.
        """
        from .. import cassettes
        from ..models import local
        from ..models.aliases import local_aliases, set_local_server_url
        from ..models.providers import start_on_demand

        local_names = [m.name for m in models if m.name in local_aliases()]
        rec = cassettes.active_recording()
        if (self.settings.local_server != "auto" or not local_names or local.env_base_url() or self._local_server
                or rec is None or all(rec.replay_only(self.model(n).model_id) for n in local_names)):
            return False
        server = OnDemandServer(local.free_port(), local_names, self.progress)
        self._local_server = server
        set_local_server_url(server.base_url)
        for name in local_aliases():
            self._models.pop(name, None)
        start_on_demand(server.base_urls, server.start)
        return True

    def stop_local_server(self) -> None:
        """Stop a server `start_local_server` started (and forget its port)."""
        if self._local_server is not None:
            from ..models.aliases import set_local_server_url
            from ..models.providers import start_on_demand

            start_on_demand(self._local_server.base_urls, None)
            self._local_server.close()
            self._local_server = None
            set_local_server_url(None)

    def record(self, seed: str) -> None:
        """Open the seed's recording unless it is already open (closing another seed's first)."""
        if self._recording is not None and self._recording[0] == seed:
            return
        self.stop_recording()
        from ..cassettes import recording  # vcrpy is heavy: imported only when a provider runs

        stack = ExitStack()
        rec = stack.enter_context(recording(self.settings.cassette_dir, seed, self.settings.record_mode))
        self.recorded = self.recorded or rec.mode != "none"
        self._recording = (seed, stack)

    def stop_recording(self, spare: frozenset[str] | None = None) -> None:
        """Close (and save) the open recording, if any; with `spare` (model file names), keep only the
        interactions it used in every other model file (the caller knows every item that could use
        those ran, see `pruning`)."""
        if self._recording is not None:
            if spare is not None:
                from ..cassettes import active_recording

                recording = active_recording()
                if recording is not None:
                    recording.prune_unused(spare)
            stack = self._recording[1]
            self._recording = None
            stack.close()


class OnDemandServer:
    """The local model server of a run, started at its port on the first call to record (thread-safe, once)."""

    def __init__(self, port: int, names: list[str], progress: Callable[[str], None]):
        from ..models.local import HOST

        self.port = port
        self.base_url = f"http://{HOST}:{port}"
        self.base_urls = (self.base_url, self.base_url + "/v1")  # the Anthropic and the OpenAI protocol's
        self.names = names
        self.progress = progress
        self._stack: ExitStack | None = None
        self._failure: str | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        """Start llama-server unless it runs; a failure is raised again for every later call."""
        from ..models import local

        with self._lock:
            if self._stack is not None:
                return
            if self._failure is None and not local.server_available():
                self._failure = local.not_installed_message(self.names)
            if self._failure is None:
                stack = ExitStack()
                try:
                    stack.enter_context(local.local_server(self.port, use_env=False))
                except local.LocalSetupError as exc:
                    self._failure = f"--local-server=auto could not start the local model server: {exc}"
                else:
                    self._stack = stack
                    self.progress(f"started the local model server at {self.base_url}")
                    return
            raise ModelError(self._failure)

    def close(self) -> None:
        with self._lock:
            if self._stack is not None:
                self._stack.close()
                self._stack = None
