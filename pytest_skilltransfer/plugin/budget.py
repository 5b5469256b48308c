"""`--max-cost USD`: stop recording once the dollars really spent on provider calls reach the budget.

Spending is charged from each reply that came over the network (`providers.on_live_reply`), priced
from its usage (`prices.cost_usd`, prompt-cache rates included); replayed calls cost nothing. Once
the budget is reached the open cassette stops recording (its record mode becomes `none`, so the
calls already answered stay recorded and replays keep working), later seeds open replay-only, and
a call that would need the network fails with `BudgetSpent`, which names the budget and what was
spent. Calls in flight when the budget is reached still finish and are kept: a run can overshoot by
at most the calls in flight (`--max-concurrency`) at that moment.

Under xdist each worker writes what it spent to its own file in a folder named after the run
(`testrunuid`), and every worker sums all files, so the budget holds for the whole run.
"""

from __future__ import annotations

import os
import tempfile
import threading
from pathlib import Path

from ..models.base import ModelCallError, Usage
from ..prices import cost_usd


class BudgetSpent(ModelCallError):
    """A call needed the network after the budget was spent."""


class Budget:
    """Dollars spent by this run against a limit (see module docstring)."""

    def __init__(self, limit_usd: float, folder: Path | None = None, worker: str = "main") -> None:
        self.limit_usd = limit_usd
        self.folder = folder
        self.worker = worker
        self.own_usd = 0.0
        self._lock = threading.Lock()
        self._spent = False

    def charge(self, model_id: str, usage: Usage) -> None:
        """Add one live reply's cost; stop recording when the budget is reached."""
        usd = cost_usd(model_id, usage) or 0.0
        with self._lock:
            self.own_usd += usd
            if self.folder is not None:
                self.folder.mkdir(parents=True, exist_ok=True)
                path = self.folder / f"{self.worker}.usd"
                tmp = path.with_suffix(".tmp")
                tmp.write_text(repr(self.own_usd), encoding="utf-8")
                os.replace(tmp, path)
        if self.spent_usd() >= self.limit_usd:
            self.stop_recording()

    def spent_usd(self) -> float:
        """Dollars spent by every process of this run."""
        if self.folder is None or not self.folder.is_dir():
            return self.own_usd
        total = 0.0
        for path in self.folder.glob("*.usd"):
            try:
                total += float(path.read_text(encoding="utf-8") or 0)
            except (OSError, ValueError):
                continue
        return max(total, self.own_usd)

    @property
    def spent(self) -> bool:
        """Whether the budget is reached (checks the other workers' spending too)."""
        if not self._spent and self.spent_usd() >= self.limit_usd:
            self.stop_recording()
        return self._spent

    def stop_recording(self) -> None:
        """From now on, replay only: the open cassette keeps what it recorded and records nothing more."""
        from .. import cassettes

        with self._lock:
            self._spent = True
        rec = cassettes.active_recording()
        if rec is not None and rec.mode != "none":
            rec.mode = "none"
            if rec.cassette is not None:
                from vcr.record_mode import RecordMode

                rec.cassette.record_mode = RecordMode.NONE

    def message(self, what: str) -> str:
        return (f"--max-cost {self.limit_usd:g}: the budget is spent (${self.spent_usd():.4f} on provider calls in "
                f"this run), so {what} was not called. What was recorded is kept in the cassettes; to record the "
                "rest, run again with --record-mode=new_episodes --snapshot-update (recorded calls replay for free) "
                "and a budget for what is left.")


def shared_folder(run_id: str) -> Path:
    """Where the workers of one xdist run share their spending."""
    return Path(tempfile.gettempdir()) / f"skilltransfer-spend-{run_id}"
