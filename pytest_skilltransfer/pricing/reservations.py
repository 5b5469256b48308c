"""A dollar budget that cannot be crossed: reserve a call's worst case before sending, settle after.

API (also used by other callers that spend money, such as batch submissions):

    ledger = ReservationLedger(path, limit_usd)
    token = ledger.reserve(model_id, worst_case_usd)   # raises BudgetExceeded when it does not fit
    tokens = ledger.reserve_step([(model_id, worst_case_usd), ...])  # a batch step: all or none, or None: later
    ...send the call...
    ledger.settle(token, actual_usd)                   # or ledger.release(token) when nothing was charged

A reservation counts at its worst case until it is settled; a settled one counts at what was
really charged. So the sum the budget checks is never below what was spent, and `reserve` admits a
call only while the sum plus its worst case stays within the limit: spending can be overstated,
never exceeded. When a reservation does not fit but other calls are still in flight, `reserve`
waits for them to settle (they usually settle far below their worst case) and refuses only when
nothing in flight could free enough.

Storage: one SQLite database in WAL mode (Python's own `sqlite3`), so every xdist worker and every
process pointed at the same file shares one budget. A reservation is one row, admitted inside a
`BEGIN IMMEDIATE` transaction (one writer at a time across processes; readers never block), and is
durable once committed. A process killed with calls in flight leaves their rows at the worst case:
the ledger never claims money for calls that were not sent, and never forgets a call that was.
Rows of a process that no longer runs are not waited for. SQLite was chosen over a locked JSON
file because it gives atomic, crash-safe updates and cross-process locking in the standard library.
Amounts are stored in whole nano-dollars (worst cases rounded up), so a budget of exactly k calls
admits exactly k.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from ..guards.errors import ModelCallError

NANO = 1_000_000_000
WAIT_POLL_S = 0.02
BUSY_TIMEOUT_MS = 30_000
SCHEMA = """
CREATE TABLE IF NOT EXISTS reservations (
    id INTEGER PRIMARY KEY,
    pid INTEGER NOT NULL,
    model TEXT NOT NULL,
    reserved INTEGER NOT NULL,   -- nano-dollars, the call's worst case
    actual INTEGER,              -- nano-dollars charged; NULL while the call is in flight
    flag TEXT NOT NULL DEFAULT '',
    created REAL NOT NULL
)
"""


class BudgetExceeded(ModelCallError):
    """A call whose worst case does not fit in what is left of the budget; it was not sent."""

    def __init__(self, message: str, model_id: str = "", worst_usd: float = 0.0) -> None:
        super().__init__(message)
        self.model = model_id
        self.worst_usd = worst_usd


@dataclass(frozen=True)
class LedgerState:
    """What the ledger holds: settled dollars, dollars reserved for calls in flight, and counts."""

    limit_usd: float
    settled_usd: float
    open_usd: float
    calls: int
    flagged: int
    refused: int

    @property
    def committed_usd(self) -> float:
        """Settled plus in flight: the figure a reservation must fit under."""
        return self.settled_usd + self.open_usd


def _nano_up(usd: float) -> int:
    return max(0, -int(-usd * NANO // 1))


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class ReservationLedger:
    """Reservations against one dollar limit, in a SQLite file shared by every process of a run."""

    def __init__(self, path: Path, limit_usd: float, wait_s: float = 600.0) -> None:
        self.path = Path(path)
        self.limit_usd = limit_usd
        self.limit = int(round(limit_usd * NANO))
        self.wait_s = wait_s
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                                   check_same_thread=False)
        self._db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        self._db.execute("PRAGMA journal_mode = WAL")
        self._db.execute("PRAGMA synchronous = FULL")
        self._db.execute(SCHEMA)
        self._db.execute("CREATE TABLE IF NOT EXISTS refusals (id INTEGER PRIMARY KEY, model TEXT, reserved INTEGER)")

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _committed(self) -> tuple[int, int]:
        """(nano-dollars counted against the limit, nano-dollars of calls in flight in running processes)."""
        rows = self._db.execute("SELECT pid, reserved, actual FROM reservations WHERE actual IS NULL").fetchall()
        settled = self._db.execute("SELECT COALESCE(SUM(actual), 0) FROM reservations WHERE actual IS NOT NULL")
        total = settled.fetchone()[0] + sum(r[1] for r in rows)
        waiting = sum(r[1] for r in rows if _alive(r[0]))
        return total, waiting

    def reserve(self, model_id: str, worst_usd: float) -> int:
        """Reserve a call's worst case; returns its token. Waits while calls in flight may free enough;
        raises BudgetExceeded when the call cannot fit."""
        amount = _nano_up(worst_usd)
        deadline = time.monotonic() + self.wait_s
        while True:
            with self._lock:
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    total, waiting = self._committed()
                    if total + amount <= self.limit:
                        cursor = self._db.execute(
                            "INSERT INTO reservations (pid, model, reserved, created) VALUES (?, ?, ?, ?)",
                            (os.getpid(), model_id, amount, time.time()))
                        self._db.execute("COMMIT")
                        return int(cursor.lastrowid)
                    could_fit = total - waiting + amount <= self.limit
                    if not could_fit or time.monotonic() >= deadline:
                        self._db.execute("INSERT INTO refusals (model, reserved) VALUES (?, ?)", (model_id, amount))
                    self._db.execute("COMMIT")
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise
            if not could_fit or time.monotonic() >= deadline:
                state = self.state()
                raise BudgetExceeded(self.refusal(model_id, worst_usd, state), model_id, worst_usd)
            time.sleep(WAIT_POLL_S)

    def reserve_step(self, worst: list[tuple[str, float]]) -> list[int] | None:
        """Reserve the worst cases of a whole step at once (all or none; never waits): their tokens, or
        None while calls in flight may still free enough (try again after they settle); raises
        BudgetExceeded when the step cannot fit even once nothing is in flight."""
        amounts = [(model_id, _nano_up(usd)) for model_id, usd in worst]
        step = sum(a for _, a in amounts)
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                total, waiting = self._committed()
                if total + step <= self.limit:
                    now, pid = time.time(), os.getpid()
                    tokens = [int(self._db.execute(
                        "INSERT INTO reservations (pid, model, reserved, created) VALUES (?, ?, ?, ?)",
                        (pid, model_id, amount, now)).lastrowid) for model_id, amount in amounts]
                    self._db.execute("COMMIT")
                    return tokens
                could_fit = total - waiting + step <= self.limit
                if not could_fit:
                    self._db.executemany("INSERT INTO refusals (model, reserved) VALUES (?, ?)", amounts)
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        if could_fit:
            return None
        state = self.state()
        models = sorted({m for m, _ in worst})
        raise BudgetExceeded(
            f"--max-cost {self.limit_usd:g}: a step of {len(worst)} request(s) to {', '.join(models)} was not sent: "
            f"as a whole it may cost up to ${step / NANO:.6f}, and ${state.settled_usd:.6f} is spent and "
            f"${state.open_usd:.6f} reserved for calls in flight, so it does not fit in the budget of "
            f"${self.limit_usd:g} (the batch lane sends a step whole, never a trickle of single requests). What "
            "was recorded is kept in the cassettes; to record the rest, run again with --record-mode=new_episodes "
            "--snapshot-update (recorded calls replay for free) and a budget for what is left.",
            models[0] if models else "", step / NANO)

    def settle(self, token: int, actual_usd: float, flag: str = "") -> None:
        """Charge what the call really cost (never more than its reservation is counted above it)."""
        with self._lock:
            self._db.execute("UPDATE reservations SET actual = ?, flag = ? WHERE id = ?",
                             (_nano_up(actual_usd), flag, token))

    def settle_in_full(self, token: int, flag: str) -> None:
        """Charge the whole reservation (the real cost is unknown), with the reason."""
        with self._lock:
            self._db.execute("UPDATE reservations SET actual = reserved, flag = ? WHERE id = ?", (flag, token))

    def release(self, token: int) -> None:
        """The call was not charged (never sent, or refused by the provider): free its reservation."""
        self.settle(token, 0.0)

    def state(self) -> LedgerState:
        with self._lock:
            settled, open_, calls, flagged = self._db.execute(
                "SELECT COALESCE(SUM(actual), 0), COALESCE(SUM(CASE WHEN actual IS NULL THEN reserved END), 0), "
                "COUNT(CASE WHEN actual IS NULL OR actual > 0 THEN 1 END), COUNT(CASE WHEN flag != '' THEN 1 END) "
                "FROM reservations").fetchone()
            refused = self._db.execute("SELECT COUNT(*) FROM refusals").fetchone()[0]
        return LedgerState(self.limit_usd, settled / NANO, open_ / NANO, calls, flagged, refused)

    def flags(self) -> list[tuple[str, str]]:
        """(model id, reason) of every call charged in full because its cost was unknown."""
        with self._lock:
            return list(self._db.execute("SELECT model, flag FROM reservations WHERE flag != '' ORDER BY id"))

    def refusal(self, model_id: str, worst_usd: float, state: LedgerState) -> str:
        return (f"--max-cost {self.limit_usd:g}: a call to {model_id} was not sent: it may cost up to "
                f"${worst_usd:.6f}, and ${state.settled_usd:.6f} is spent and ${state.open_usd:.6f} reserved for "
                f"calls in flight, so it does not fit in the budget of ${self.limit_usd:g}. What was recorded is "
                "kept in the cassettes; to record the rest, run again with --record-mode=new_episodes "
                "--snapshot-update (recorded calls replay for free) and a budget for what is left.")
