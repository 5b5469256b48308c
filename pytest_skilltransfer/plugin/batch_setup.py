"""`--transfer-batch`: record through the providers' Batch APIs (sleep mode); the hooks delegate here.

Options (each also an ini key, and a short `--batch…` spelling where no other plugin owns it):
`--transfer-batch` (`skilltransfer_batch`), `--transfer-batch-fallback batch|sync` (a failed item goes
into the next batch, or is sent synchronously), `--transfer-batch-poll S` (status checks per batch,
default 30 s), `--transfer-batch-gather S` (quiet period before a flush, default 2 s) and
`--transfer-batch-max-wait DURATION` (default 26h; `90m`, `8h`, seconds) after which the run stops
cleanly, to be resumed by the same command. The manifest lives in the cassette folder.
Progress lines are always printed in batch mode (a line per change): waiting is the whole run.

Every recording run reads the manifest, batch mode or not: a run without `--transfer-batch` turns the
lane on in collect-only mode when the manifest names batches, so a request that sits in one is
collected from it and never sent synchronously as well. `--transfer-batch-pending wait|cancel`
(default wait) says what happens to batches of earlier runs still in flight: wait for them (up to
the max wait), or cancel them at the provider (their answered requests are still collected).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # the batch lane is imported only by runs that use it (see `engagement`)
    from ..models.batch import BatchSettings

FALLBACKS = ("batch", "sync")
PENDING = ("wait", "cancel")
UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def add_options(parser: pytest.Parser) -> None:
    from .spellings import _add

    group = parser.getgroup("skilltransfer")

    def defaults() -> Any:
        from ..models.batch import BatchSettings

        return BatchSettings()

    _add(group, parser, "batch", "record through the providers' Batch APIs at batch prices (about half): "
         "each protocol step's calls go out as one batch per model and the run waits for them; answers are stored "
         "in the same cassettes, replayed as usual, and a killed run resumes its batches without paying twice",
         "bool", action="store_true", default=None)
    _add(group, parser, "batch-fallback", "what a batch item that errored, was canceled or expired does: "
         "batch (go into the next batch; default) or sync (be sent synchronously at the full price)",
         metavar="MODE")
    _add(group, parser, "batch-poll", lambda: "seconds between status checks of a batch (default "
         f"{defaults().poll_s:g})", metavar="S")
    _add(group, parser, "batch-gather", lambda: "seconds without a new request before the parked requests are "
         f"sent as a batch (default {defaults().gather_s:g})", metavar="S")
    _add(group, parser, "batch-max-wait", "stop waiting for batches after this long (90m, 8h, seconds; "
         "default 26h): the run stops cleanly, keeps every answer and resumes with the same command",
         metavar="DURATION")
    _add(group, parser, "batch-pending", "batches of earlier runs still in flight that hold requests of this run "
         "(any recording run reads the batch manifest): wait (collect them when they end; default) or cancel "
         "(cancel them at the provider, collect what they answered, send the rest again)", metavar="MODE")


def duration(value: Any, where: str) -> float:
    """Seconds from `120`, `90s`, `45m`, `8h` or `1d`."""
    text = str(value).strip().lower()
    scale = UNITS.get(text[-1:], None)
    try:
        number = float(text[:-1] if scale else text) * (scale or 1.0)
    except ValueError:
        raise pytest.UsageError(f"{where}: expected a duration such as 90, 45m or 8h, got {value!r}") from None
    if not number > 0 or number == float("inf"):
        raise pytest.UsageError(f"{where}: must be a positive duration, got {value!r}")
    from ..guards.bounds import MAX_SECONDS

    if number > MAX_SECONDS:  # a provider's batch expires after 24 h: a longer wait only hides a stuck run
        raise pytest.UsageError(f"{where}: must be at most 7d ({MAX_SECONDS:g} s, the documented maximum), "
                                f"got {value!r}")
    return number


def read(config: pytest.Config, collect: bool = False) -> BatchSettings | None:
    """The batch settings, or None when batch mode is off: on for every provider model with
    `--transfer-batch`, else for the models whose own lane is batch (`lane = "batch"` in the models table);
    with `collect` (every recording run) the collect-only settings when neither is on."""
    from ..models.aliases import batch_lane_aliases
    from ..models.batch import BatchSettings
    from .options import _choice, _Reader
    from .values import _bool

    reader = _Reader(config)
    value, where = reader.get("batch")
    every_model = value is not None and _bool(value, where)
    submit = every_model or bool(batch_lane_aliases())
    if not submit and not collect:
        return None
    settings: dict[str, Any] = {"fallback": _choice(reader, "batch-fallback", FALLBACKS), "submit": submit,
                                "every_model": every_model or not submit,  # collect only: every model's batches
                                "pending": _choice(reader, "batch-pending", PENDING)}
    for option, name in (("batch-poll", "poll_s"), ("batch-gather", "gather_s"), ("batch-max-wait", "max_wait_s")):
        value, where = reader.get(option)
        if value is not None:
            settings[name] = duration(value, where)
    return BatchSettings(**{k: v for k, v in settings.items() if v is not None})


def configure(config: pytest.Config, cassette_dir: Any, record_mode: str) -> None:
    """Turn the lane on for this process: with `--transfer-batch`, or collect only for a recording run whose
    manifest names batches (see module docstring)."""
    settings = read(config, collect=record_mode != "none")
    if settings is None:
        return
    from pathlib import Path

    from ..models.batch import MANIFEST_NAME, configure_batch
    from ..models.batch.manifest import ManifestError, Manifest, pending_text

    if not settings.submit and not (Path(cassette_dir) / MANIFEST_NAME).exists():
        return
    try:
        if not settings.submit and not Manifest.open(Path(cassette_dir)).live():
            return
        lane = configure_batch(settings, cassette_dir, _writer(config), _batch_dollars)
    except ManifestError as exc:
        raise pytest.UsageError(f"{'--transfer-batch' if settings.submit else 'recording'}: {exc}") from None
    text = pending_text(lane.manifest) if lane is not None else None
    if text is not None and getattr(config, "workerinput", None) is None:
        way = ("cancels in-flight ones at the provider (--transfer-batch-pending=cancel), collects what they answered "
               "and sends the rest again" if settings.pending == "cancel" else
               "waits for in-flight ones (up to --transfer-batch-max-wait; --transfer-batch-pending=cancel cancels "
               "them instead)")
        _writer(config)(f"{text.split('. The next')[0]}. This run collects every request of it found in them "
                        f"instead of paying for it again, and {way}.")


def unconfigure(config: pytest.Config) -> None:
    """Print what the lane did (one line), then turn it off."""
    from ..models.batch import active_lane, configure_batch

    lane = active_lane()
    summary = lane.summary() if lane is not None else None
    if summary is not None:
        worker = getattr(config, "workerinput", None)
        sys.stderr.write(f"[{worker['workerid']}] {summary}\n" if worker else f"{summary}\n")
    configure_batch(None)


def _batch_dollars(provider: str, model_id: str, body: bytes) -> float:
    """One answer's dollars at batch prices (the dated batch lane of `prices.toml`), from its usage."""
    from ..planning.answer_cost import answer_usd

    return answer_usd(provider, model_id, body, "batch") or 0.0


def _writer(config: pytest.Config) -> Any:
    from .lines import line_writer

    return line_writer(config)
