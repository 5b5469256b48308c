"""`--transfer-batch`: record through the providers' Batch APIs (sleep mode); the hooks delegate here.

Options (each also an ini key, and a short `--batch…` spelling where no other plugin owns it):
`--transfer-batch` (`skilltransfer_batch`), `--transfer-batch-fallback batch|sync` (a failed item goes
into the next batch, or is sent synchronously), `--transfer-batch-poll S` (status checks per batch,
default 30 s), `--transfer-batch-gather S` (quiet period before a flush, default 2 s) and
`--transfer-batch-max-wait DURATION` (default 26h; `90m`, `8h`, seconds) after which the run stops
cleanly, to be resumed by the same command. The manifest lives in the cassette folder.
Progress lines are always printed in batch mode (a line per change): waiting is the whole run.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # the batch lane is imported only by runs that use it (see `engagement`)
    from ..models.batch import BatchSettings

FALLBACKS = ("batch", "sync")
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
    return number


def read(config: pytest.Config) -> BatchSettings | None:
    """The batch settings, or None when batch mode is off: on for every provider model with
    `--transfer-batch`, else for the models whose own lane is batch (`lane = "batch"` in the models table)."""
    from ..models.aliases import batch_lane_aliases
    from ..models.batch import BatchSettings
    from .options import _choice, _Reader
    from .values import _bool

    reader = _Reader(config)
    value, where = reader.get("batch")
    every_model = value is not None and _bool(value, where)
    if not every_model and not batch_lane_aliases():
        return None
    settings: dict[str, Any] = {"fallback": _choice(reader, "batch-fallback", FALLBACKS), "every_model": every_model}
    for option, name in (("batch-poll", "poll_s"), ("batch-gather", "gather_s"), ("batch-max-wait", "max_wait_s")):
        value, where = reader.get(option)
        if value is not None:
            settings[name] = duration(value, where)
    return BatchSettings(**settings)


def configure(config: pytest.Config, cassette_dir: Any) -> None:
    """Turn the lane on for this process when `--transfer-batch` is set."""
    settings = read(config)
    if settings is None:
        return
    from ..models.batch import configure_batch
    from ..models.batch.manifest import ManifestError

    try:
        configure_batch(settings, cassette_dir, _writer(config), _batch_dollars)
    except ManifestError as exc:
        raise pytest.UsageError(f"--transfer-batch: {exc}") from None


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
