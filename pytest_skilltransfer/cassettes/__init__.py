"""Record model calls once, replay them offline and deterministically (vcrpy underneath).

How to use::

    from pytest_skilltransfer import cassettes

    with cassettes.recording(Path("cassettes"), seed="pricing-brief", mode="once") as rec:
        with cassettes.phase("baseline"):          # optional: named in miss messages
            reply = model.complete(request)        # SDK calls are recorded or replayed

Layout: `cassettes/<seed>/<model-id>.yaml`, one folder per seed and one readable YAML file per
model, so pairs that share a target share its recorded calls and a reviewer reads one model's
traffic per file. Matching is on method, path and canonical JSON body (never headers); the sample
id travels in the body, so repeated samples replay distinctly.

Record modes (as pytest-recording): `none` replays only; `once` records models that have no
recordings for the seed yet and replays the others (a model whose recording a killed process left
unfinished, found in its journal, has none yet: the same command resumes it); `new_episodes` replays what matches and records
the rest; `all` re-records everything. `default_record_mode()` is `none` when `CI` is set, else
`once`. In `none` mode a network guard makes any socket connect fail loudly.

A replay miss surfaces, through the model backends, as `CassetteMiss` (a ModelCallError) naming the
seed, model and phase, with a diff against the closest recorded request and the command to
re-record. `scan_for_secrets(path)` lists anything key-like in cassette files.
"""

from __future__ import annotations

import os
import shlex
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

from ..models.base import ModelCallError, ModelError, find_in_chain
from .miss import CassetteMiss, build_miss, find_vcr_miss
from .scrub import scan_for_secrets

__all__ = [
    "RECORD_MODES",
    "CassetteMiss",
    "Recording",
    "active_recording",
    "current_phase",
    "default_record_mode",
    "phase",
    "recording",
    "scan_for_secrets",
    "transport_failure",
]

RECORD_MODES = ("none", "once", "new_episodes", "all")
GUARDS = ("auto", "off", "loopback", "all")


def default_record_mode(environ: dict[str, str] | None = None) -> str:
    """`none` (replay only) when the `CI` variable is set to anything but false/0, else `once`."""
    ci = (environ if environ is not None else os.environ).get("CI", "")
    return "none" if ci.strip().lower() not in ("", "0", "false", "no") else "once"


@dataclass
class Recording:
    """The active recording context of one seed."""

    seed: str
    folder: Path
    mode: str
    command: str
    cassette: Any = field(repr=False, default=None)
    open_cassette: Callable[[], None] | None = field(repr=False, default=None)  # see `prepare_sdk_call`

    def replay_only(self, model_id: str) -> bool:
        """Whether calls to `model_id` can only be replayed (so no API key is needed)."""
        if self.mode == "none":
            return True
        if self.mode == "once":
            return bool(self.cassette is not None and model_id in self.cassette.loaded_models)
        return False

    @property
    def interactions(self) -> int:
        """Interactions held in memory (loaded plus recorded)."""
        return len(self.cassette) if self.cassette is not None else 0

    def key_needed_for(self) -> str:
        """Why a live call needs a key here, for the missing-key message."""
        return f"to record calls for seed {self.seed!r} (record mode {self.mode!r})"

    def explain(self, exc: BaseException) -> ModelCallError | None:
        """A clear error for a cassette miss or a network-guard block hidden in `exc`'s chain."""
        return transport_failure(exc)

    def prepare_sdk_call(self) -> None:
        """Before an SDK call: a replay-only context opened without vcrpy opens its cassette now."""
        if self.open_cassette is not None:
            self.open_cassette()

    def recorded_answer(self, model_id: str, fingerprint: str, key: tuple[str, str, str]) -> tuple[int, Any] | None:
        """The recorded answer to play for `key` without the SDK, or None (see `models.fidelity`)."""
        if self.cassette is None or not self.replay_only(model_id):
            return None
        return self.cassette.play_without_sdk(model_id, fingerprint, key)

    def will_replay(self, model_id: str, fingerprint: str, key: tuple[str, str, str]) -> bool:
        """Whether the request with `key` finds a recorded answer left to play (False when unknown: `model_id`'s
        file was not verified under SDK `fingerprint`); nothing is played."""
        return self.cassette is not None and self.cassette.holds_unplayed(model_id, fingerprint, key)

    def prune_unused(self, spare: frozenset[str] = frozenset()) -> None:
        """On close, keep only the interactions this context replayed or recorded (record modes
        new_episodes and all) in every model file but those named in `spare`. For the files every item
        that could use them ran to its result in: whatever it did not use is stale, e.g. the requests
        of a skill's previous text."""
        if self.cassette is not None and self.mode in ("new_episodes", "all"):
            self.cassette.prune_unused = True
            self.cassette.prune_spare = spare


_state_lock = threading.Lock()
_active: Recording | None = None
_phase = threading.local()


def active_recording() -> Recording | None:
    """The recording context currently open in this process, if any."""
    with _state_lock:
        return _active


@contextmanager
def phase(name: str) -> Iterator[None]:
    """Name the protocol phase for misses raised by calls in this thread."""
    previous = getattr(_phase, "name", None)
    _phase.name = name
    try:
        yield
    finally:
        _phase.name = previous


def current_phase() -> str | None:
    """The phase set by `phase()` in this thread."""
    return getattr(_phase, "name", None)


Observer = Callable[[str, bytes, bytes], None]
_observers: list[Observer] = []


def on_recorded(observer: Observer) -> Callable[[], None]:
    """Call `observer(request path, request body, response body)` for each answer this process records
    (a live call, not a replay); returns the function that removes it. An observer's error is ignored."""
    _observers.append(observer)
    return lambda: _observers.remove(observer) if observer in _observers else None


def _notify_recorded(request: Any, response: dict[str, Any]) -> None:
    if not _observers:
        return
    from .match import body_bytes
    from .store import request_path

    body = response["body"].get("string") or b""
    for observer in list(_observers):
        try:
            observer(request_path(request.uri), body_bytes(request.body),
                     body if isinstance(body, bytes) else str(body).encode("utf-8"))
        except Exception:  # noqa: BLE001 - progress figures never stop a recording
            pass


def transport_failure(exc: BaseException) -> ModelCallError | None:
    """A clear error for a cassette miss, a stopped recording (a full disk) or a network-guard block hidden
    in `exc`'s chain (an SDK that does not retry wraps them as a connection error)."""
    from .netguard import NetworkBlocked
    from .store import CassetteFileError

    damaged = find_in_chain(exc, CassetteFileError) or find_in_chain(exc, RecordingStopped)
    if damaged is not None:
        return damaged  # type: ignore[return-value]
    if find_vcr_miss(exc) is not None:
        rec = active_recording()
        if rec is not None and rec.cassette is not None:
            return build_miss(exc, rec.cassette, rec.seed, rec.command, current_phase())
        return ModelCallError(f"cassette miss outside a recording context: {find_vcr_miss(exc)}")
    blocked = find_in_chain(exc, NetworkBlocked)
    return ModelCallError(str(blocked)) if blocked is not None else None


class _OnImport:
    """A meta-path finder that calls `callback()` when one of `names` is first imported (and finds nothing)."""

    def __init__(self, names: tuple[str, ...], callback: Callable[[], None]) -> None:
        self.names, self.callback = names, callback

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name in self.names:
            self.callback()
        return None


def _open_replay_table(rec: Recording, stack: ExitStack) -> None:
    """Open a replay-only context's recordings without vcrpy (`replay_table`). The vcrpy cassette is
    opened in its place before any SDK call can be made: before a call takes the path of record
    (`Recording.prepare_sdk_call`), and when an SDK is imported; while one is imported already (a
    client of the caller's own may exist), it is opened at once, as in the other modes."""
    from ..models.wire import sdk_modules

    if any(name in sys.modules for name in sdk_modules()):
        rec.cassette = stack.enter_context(_open_cassette(rec.folder, "none"))
        return
    from .replay_table import ReplayTable
    from .seedstore import SeedStore

    table = ReplayTable(SeedStore(rec.folder, "none"))
    stack.callback(table.close)
    rec.cassette = table
    opening = threading.RLock()

    def open_cassette() -> None:
        with opening:
            if rec.cassette is table:
                unwatch()
                rec.cassette = stack.enter_context(_open_cassette(rec.folder, "none", table.played()))

    watcher = _OnImport(sdk_modules(), open_cassette)

    def unwatch() -> None:
        if watcher in sys.meta_path:
            sys.meta_path.remove(watcher)

    sys.meta_path.insert(0, watcher)
    stack.callback(unwatch)
    rec.open_cassette = open_cassette


class RecordingStopped(ModelCallError):
    """A write failed (disk full, ...), so this recording sends nothing more; says what was kept."""

    def __init__(self, store: Any, model: str) -> None:
        err = store.write_error
        super().__init__(
            f"recording stopped for {store.folder}: the disk refused a write to its journal or the room for an "
            f"answer ({err.strerror or err}), so no further call is sent in this run (this one to {model} was not). "
            f"The {len(store.unwritten)} answer(s) "
            "received since are kept in memory and written when the seed closes if the disk allows; any that "
            "cannot be are named then. Free disk space and run again with --record-mode=new_episodes.")


@lru_cache(maxsize=1)
def _seed_cassette_class() -> type:
    """A vcrpy Cassette over a `SeedStore`: an index, a lock, a journal, and per-model `once` semantics."""
    from vcr.cassette import Cassette
    from vcr.errors import UnhandledHTTPRequestError
    from vcr.record_mode import RecordMode

    from .match import model_of, request_key
    from .replay_table import answer_of, play_first
    from .scrub import filter_recorded_response, filter_request_once
    from .store import from_plain, model_of_plain, plain_key, request_path, to_plain
    from ..models import sdk_common
    from ..models.validity import response_problem

    class SeedCassette(Cassette):
        def __init__(self, *args: Any, store: Any = None, **kwargs: Any) -> None:
            self._lock = threading.RLock()
            self._index: dict[tuple[str, str, str], list[int]] = {}
            self._loading = False
            self.store = store
            self.loaded_models: frozenset[str] = frozenset()
            self.rejected: list[Any] = []
            self.unsaved: list[tuple[str, str]] = []  # (model, why) of answers that were not stored
            self._keys: list[tuple[str, str, str]] = []  # the request key of each interaction in `data`
            self._recorded: set[tuple[str, str, str]] = set()
            self._others: set[int] = set()  # interactions other recorders paid for while this one ran
            self.sdk_verified: dict[str, str] = {}  # model -> fingerprint its file's index vouches for
            self.prune_unused = False
            self.prune_spare: frozenset[str] = frozenset()  # model files pruning leaves alone
            super().__init__(*args, **kwargs)
            # one redaction pass per request and no deep copies (see `scrub`); they replace vcrpy's
            # composed filters, which deep-copy first and then run the same filters
            self._before_record_request = filter_request_once
            self._before_record_response = filter_recorded_response
            # a call that failed gives up its claim, so other recorders waiting on it send it themselves
            self._end_claims = sdk_common.on_call_end(lambda: self.store.end_call())

        def append(self, request: Any, response: Any) -> None:
            # vcrpy's append deep-copies the response and filters the request again; here the request
            # is filtered once per call and the response (a fresh dict vcrpy built) is filtered as is.
            # Filtering, checking and journaling run outside the lock: calls of other threads go on
            # while this answer is made durable (and their journal lines join the same fsync).
            request = self._before_record_request(request)
            if not request:
                return
            response = self._before_record_response(response)
            if response is None:
                return
            if not self._loading:
                problem = response_problem(request_path(request.uri), response["status"]["code"],
                                           response["body"].get("string"))
                if problem is not None:  # never stored, never replayed
                    with self._lock:
                        self.unsaved.append((model_of(request), problem))
                    return
            key = request_key(request)
            with self._lock:
                self.data.append((request, response))
                self.dirty = True
                if not self._loading:
                    self._recorded.add(key)
                self._keys.append(key)
                self._index.setdefault(key, []).append(len(self.data) - 1)
            if self._loading:
                return
            if self.store.record(to_plain(request, response), key):
                self.store.inflight.release(key, answered=True)
            _notify_recorded(request, response)

        def can_play_response_for(self, request: Any) -> bool:
            """vcrpy's check, then (when recording) what other processes recorded or are sending: a request
            another recorder answered is played from its journal; one it is sending is waited for."""
            if super().can_play_response_for(request):
                return True
            if not self.store.writes or self.record_mode == RecordMode.ALL:
                return False
            filtered = self._before_record_request(request)
            if not filtered or (self.record_mode == RecordMode.ONCE and model_of(filtered) in self.loaded_models):
                return False  # a miss, as before
            if self.store.write_error is not None:
                self._stop(filtered)
            key = request_key(filtered)
            if self._adopt(request):
                return True
            if self.store.inflight.claim(key, sdk_common.call_policy().deadline_s) and self._adopt(request):
                self.store.inflight.release(key, answered=True)
                return True
            # to be sent (after a whole call deadline without the claim, too: paying twice beats hanging);
            # this thread holds the claim until its answer is journaled or its call ends
            try:
                self.store.reserve(key, filtered.body)  # the answer's room in the journal, before paying
            except OSError:
                self.store.inflight.release(key)
                self._stop(filtered)
            return False

        def _stop(self, filtered: Any) -> None:
            """Send nothing more: a write failed or the disk has no room for another answer."""
            stopped = RecordingStopped(self.store, model_of(filtered))
            sdk_common.stop_retrying(stopped)
            raise stopped

        def _adopt(self, request: Any) -> bool:
            """Take in what other processes journaled since the last look; whether `request` is now answered."""
            with self._lock:
                for entry in self.store.answers_from_others():
                    self._add_loaded(plain_key(entry), from_plain(entry))
                    self._others.add(len(self.data) - 1)
                    self.rewound = True
                return self._unplayed(request) is not None

        def _load(self) -> None:
            # Stored interactions were filtered and redacted when they were recorded (and every write
            # is scanned for secrets), so none goes through vcrpy's filters or copies. A file with a
            # current index is not parsed: each interaction is read from it when played. A file
            # without one is read once, each interaction converted as it is read.
            loaded = self.store.open(lambda entry: (plain_key(entry), model_of_plain(entry), from_plain(entry)))
            self.rejected = loaded.rejected
            models = set()
            for key, model, interaction in loaded.interactions():
                self._add_loaded(key, interaction)
                models.add(model)
            self.sdk_verified = dict(loaded.sdk)
            self._loaded_count = len(self.data)
            self.dirty = False
            self.rewound = bool(self.data)
            # `once`: a model whose recording a killed process left unfinished (its journal folded in now)
            # is still being recorded, so the same command resumes it
            self.loaded_models = frozenset(models - self.store.resumed_models)

        def _add_loaded(self, key: tuple[str, str, str], interaction: Any) -> None:
            self._index.setdefault(key, []).append(len(self.data))
            self._keys.append(key)
            self.data.append(interaction)
            self._old_interactions.append(interaction)

        def _unplayed(self, request: Any) -> int | None:
            """The first stored interaction for `request` not played yet (call with the lock held)."""
            request = self._before_record_request(request)
            if not request:
                return None
            for index in self._index.get(request_key(request), ()):
                if self.play_counts[index] == 0 or self.allow_playback_repeats:
                    return index
            return None

        def _responses(self, request: Any) -> Iterator[tuple[int, Any]]:
            request = self._before_record_request(request)
            if not request:
                return
            with self._lock:
                indices = list(self._index.get(request_key(request), ()))
            for index in indices:
                yield index, self.data[index][1]

        def __contains__(self, request: Any) -> bool:
            with self._lock:
                return self._unplayed(request) is not None

        def play_response(self, request: Any) -> Any:
            with self._lock:
                index = self._unplayed(request)
                if index is None:
                    raise UnhandledHTTPRequestError(
                        f"The cassette ({self._path!r}) doesn't contain the request ({request!r}) asked for")
                self.play_counts[index] += 1
                if index in self._others:
                    sdk_common.note_paid_by_another_run()  # this run's bill does not charge it
            return self.data[index][1]  # a stored interaction is read from its file here, outside the lock

        def play_without_sdk(self, model: str, fingerprint: str, key: tuple[str, str, str]) -> tuple[int, Any] | None:
            """Play the first unplayed interaction for `key`, as `play_response` would, when `model`'s
            file was verified under SDK `fingerprint`: its (status, body), read without vcrpy. None
            (nothing played) when it was not, or nothing unplayed matches: the call then takes the
            path of record, which replays it or raises the miss."""
            if self.sdk_verified.get(model) != fingerprint:
                return None
            with self._lock:
                index = play_first(self._index, self.play_counts, key, self.allow_playback_repeats)
            return None if index is None else answer_of(self.data[index])  # read outside the lock

        def holds_unplayed(self, model: str, fingerprint: str, key: tuple[str, str, str]) -> bool:
            """Whether `play_without_sdk` would find an interaction for `key` (nothing is played)."""
            if self.sdk_verified.get(model) != fingerprint:
                return False
            with self._lock:
                return any(self.play_counts[i] == 0 or self.allow_playback_repeats for i in self._index.get(key, ()))

        def carry_plays(self, played: Counter[tuple[str, str, str]]) -> None:
            """Count the plays a `ReplayTable` made before this cassette was opened (by request key)."""
            with self._lock:
                for key, count in played.items():
                    for index in self._index.get(key, [])[:count]:
                        self.play_counts[index] += 1

        def filter_request(self, request: Any) -> Any:
            request = super().filter_request(request)
            if request and self.record_mode == RecordMode.ONCE and model_of(request) not in self.loaded_models:
                return None  # `once`: a model without recordings for this seed may be recorded
            return request

        def used_keys(self) -> set[tuple[str, str, str]]:
            """The requests this context replayed or recorded."""
            with self._lock:
                played = {self._keys[index] for index, count in self.play_counts.items() if count}
                return played | self._recorded

        def _save(self, force: bool = False) -> None:
            self._end_claims()
            # every recording is already in the journal: fold it into the files (and prune, when asked)
            self.store.close(self.used_keys() if self.prune_unused else None, self.prune_spare)

    return SeedCassette


@contextmanager
def _open_cassette(folder: Path, mode: str, played: Counter[tuple[str, str, str]] | None = None) -> Iterator[Any]:
    """Load the seed's cassette and patch the HTTP transports until exit, then fold the journal.

    Unlike vcrpy's own context manager, the transports are unpatched even when saving fails
    (say, an interrupt during the write), so a failed save never leaves a stale cassette installed.
    """
    import vcr
    from vcr.patch import CassettePatcherBuilder

    from .match import canonical_body
    from .seedstore import SeedStore

    # the filters (headers, redaction, decompression) are the cassette's own: see SeedCassette.__init__
    config = vcr.VCR(record_mode=mode, match_on=("method", "path", "canonical_body"))
    config.register_matcher("canonical_body", canonical_body)
    merged = config.get_merged_config(path=str(folder), allow_playback_repeats=False)
    for option in ("path_transformer", "func_path_generator", "record_on_exception"):
        merged.pop(option, None)
    cassette = _seed_cassette_class().load(store=SeedStore(folder, mode), **merged)
    if played:
        cassette.carry_plays(played)
    with ExitStack() as patches:
        for patcher in CassettePatcherBuilder(cassette).build():
            patches.enter_context(patcher)
        patches.callback(cassette._save)  # runs first on exit; the patchers exit even if it raises
        yield cassette


@contextmanager
def recording(
    cassette_dir: Path | str,
    seed: str,
    mode: str | None = None,
    *,
    guard: str = "auto",
    rerecord_command: str | None = None,
) -> Iterator[Recording]:
    """Record or replay every SDK call made (from any thread) while the context is open.

    `mode` is one of RECORD_MODES (default: `default_record_mode()`). `guard` is `auto` (block
    every connect in `none` mode), `off`, `loopback` (block leaving the machine) or `all`.
    Contexts cannot overlap within a process: vcrpy patches transports process-wide.
    """
    global _active
    from ..models import sdk_common

    mode = mode or default_record_mode()
    if mode not in RECORD_MODES:
        raise ModelError(f"unknown record mode {mode!r}; use one of {', '.join(RECORD_MODES)}")
    if guard not in GUARDS:
        raise ModelError(f"unknown network guard {guard!r}; use one of {', '.join(GUARDS)}")
    folder = Path(cassette_dir) / seed
    command = rerecord_command or f"pytest --record-mode=new_episodes --snapshot-update -k {shlex.quote(seed)}"
    rec = Recording(seed=seed, folder=folder, mode=mode, command=command)
    with _state_lock:
        if _active is not None:
            raise ModelCallError(
                f"cannot record seed {seed!r} while seed {_active.seed!r} is recording in this process "
                "(recording contexts cannot overlap; run seeds one after another or in xdist workers)"
            )
        _active = rec
    try:
        with ExitStack() as stack:
            stack.enter_context(sdk_common.call_environment(rec))
            if guard == "all" or (guard == "auto" and mode == "none"):
                from .netguard import network_guard

                stack.enter_context(network_guard(allow_loopback=False))
            elif guard == "loopback":
                from .netguard import network_guard

                stack.enter_context(network_guard(allow_loopback=True))
            if mode == "none":
                _open_replay_table(rec, stack)
            else:
                rec.cassette = stack.enter_context(_open_cassette(folder, mode))
            yield rec
    finally:
        with _state_lock:
            _active = None
