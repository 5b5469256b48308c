"""`--max-cost USD`: a budget the run cannot cross.

Every request that leaves for a provider first reserves its worst-case dollars in the run's
reservation ledger (`pytest_skilltransfer.pricing.reservations`, through the network gate
`models.spend_gate`); the reservation is settled to the reply's usage when it arrives. A call whose
worst case does not fit is not sent: it fails with `BudgetExceeded`, naming the budget, what was
spent and what is reserved for calls in flight. Replayed calls never reach the gate and cost nothing.

The budget fails closed: every model that would be sent a request must be priced (or declared
`free = true` in the models table, or be a built-in local model); one that is not is refused before
any request, naming the model and the line to add (at configuration for the models named on the
command line, when the items are collected for the seeds' judges and optimizers, and at its first
call for any other), and a reply without usage is charged its whole reservation and flagged in the
summary. A loopback base URL is not a price: a local gateway in front of a paid API looks the same.

The ledger is one SQLite file: an xdist run keeps it in the run folder the controller names to its
workers (`state.run_folder`), so they share one budget; a run without workers keeps it in a temporary
folder; `--transfer-budget-ledger PATH` (ini `skilltransfer_budget_ledger`) names a file that several
pytest processes share (kept after the run, so a later run against it continues the same budget).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any, Iterable


from ..models import spend_gate
from ..pricing.reservations import BudgetExceeded, LedgerState, ReservationLedger

__all__ = ["Budget", "BudgetExceeded", "LEDGER_NAME"]
LEDGER_NAME = "budget.sqlite3"


def unpriced(models: Iterable[Any]) -> list[str]:
    """One line per model that `--max-cost` cannot price in its lane, with the line that prices it
    (and, for a provider model, the models-table line that declares it free)."""
    from ..pricing.prices import lane_of, price_fix, rates_of

    lines = []
    for model in sorted({m.model_id: m for m in models}.values(), key=lambda m: m.model_id):
        lane = lane_of(model.model_id)
        if rates_of(model.model_id, lane) is not None:
            continue
        where = f" in the {lane} lane" if lane != "standard" else ""
        named = f"{model.name} ({model.model_id})" if model.name != model.model_id else model.model_id
        line = f"  {named} has no price{where}: add {price_fix(model.model_id, lane)}"
        target = getattr(model, "target", None)
        if target is not None and lane == "standard":
            url = f', base_url = "{target.base_url}"' if target.base_url else ""
            key = f', api_key_env = "{target.api_key_env}"' if getattr(target, "api_key_env", None) else ""
            alias = model.name if ":" not in model.name else model.model_id
            line += (f'; or, if it really costs nothing, [tool.skilltransfer.models] "{alias}" = '
                     f'{{ provider = "{target.provider}", model = "{model.model_id}"{url}{key}, free = true }}')
        lines.append(line)
    return lines


def refuse_unpriced(models: Iterable[Any], what: str) -> str | None:
    """The refusal naming every model `--max-cost` cannot price, or None when all are priced."""
    lines = unpriced(models)
    if not lines:
        return None
    return (f"--max-cost: {what} include models without a price, so no call to them could be reserved; nothing "
            "was sent. In pyproject.toml:\n" + "\n".join(lines))


class Budget:
    """The run's budget: a reservation ledger, and the gate installed on this process's network calls."""

    def __init__(self, limit_usd: float, path: Path | None = None) -> None:
        self.limit_usd = limit_usd
        self.owned_dir: Path | None = None  # a folder this process made and removes at the end
        if path is None:
            self.owned_dir = Path(tempfile.mkdtemp(prefix="skilltransfer-budget-"))
            path = self.owned_dir / LEDGER_NAME
        self.path = Path(path)
        self.refusal: str | None = None  # on an xdist worker: why no item may run (see `refuse_unpriced`)
        self.ledger = ReservationLedger(self.path, limit_usd)
        spend_gate.install(self.ledger)

    def state(self) -> LedgerState:
        return self.ledger.state()

    def summary_lines(self) -> list[str]:
        """What the terminal summary says about the budget."""
        state = self.state()
        lines = [f"--max-cost {self.limit_usd:g}: ${state.committed_usd:.6f} charged on {state.calls} live call(s)"
                 + (f", ${state.open_usd:.6f} of it reserved for calls that never settled" if state.open_usd else "")
                 + (f"; {state.refused} call(s) refused (would not fit)" if state.refused else "")]
        flags = self.ledger.flags()
        if flags:
            lines.append(f"  {len(flags)} call(s) charged their whole reservation because their cost was unknown:")
            lines += sorted({f"    {model}: {flag}" for model, flag in flags})
        return lines

    def as_dict(self) -> dict[str, float | int]:
        state = self.state()
        return {"limit_usd": self.limit_usd, "charged_usd": round(state.committed_usd, 9),
                "in_flight_usd": round(state.open_usd, 9), "live_calls": state.calls,
                "charged_in_full": state.flagged, "refused": state.refused}

    def close(self) -> None:
        """Stop gating and remove a ledger this process created."""
        spend_gate.install(None)
        self.ledger.close()
        if self.owned_dir is not None:
            shutil.rmtree(self.owned_dir, ignore_errors=True)


class BudgetPlugin:
    """Prints the budget's account at the end of the run and closes the ledger (controller only)."""

    def __init__(self, budget: Budget) -> None:
        self.budget = budget

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not hasattr(terminalreporter.config, "workerinput"):
            for line in self.budget.summary_lines():
                terminalreporter.write_line(line)

    def pytest_unconfigure(self, config: Any) -> None:
        self.budget.close()
