"""The budget's gate on the network: every request that really leaves reserves its worst case first.

The gate sits in each SDK client's HTTP connection pool (`gate_client`), below the SDK's retries and
below the cassettes: vcrpy answers a recorded request without reaching the pool, so replayed calls
never touch the budget, and every attempt that does go out (retries too) reserves before it is sent.

Worst case of one request, from its JSON body: input tokens at most the body's UTF-8 byte count (a
token of the providers' byte-level tokenizers covers at least one byte; the body holds every text
and tool definition of the prompt, with JSON punctuation to spare) plus `OVERHEAD_TOKENS` for the
prompt the provider adds around tools and structured output, each at the highest prompt rate (a
cache write may cost more than input); output tokens at most the request's `max_tokens`.

After the response: an error status (429, 5xx, 4xx) is not charged by the providers, so its
reservation is released; a connection that could not be opened sent nothing, released too; any
other failure after sending keeps the whole reservation. A complete answer's reservation stays open
until `Spend.settle` prices its usage (at the lane the request went through); a reply without
usage, or one that could not be read, is charged its whole reservation and flagged.

A refused reservation raises `Refused`, a BaseException, so it passes through the SDK's retry loop
(which would otherwise retry an ordinary exception) to `ProviderModel.complete`, which turns it
into the ledger's `BudgetExceeded`.
"""

from __future__ import annotations

import contextvars
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

from .base import ModelCallError, Usage
from .wire import worst_case_of

OVERHEAD_TOKENS = 1024  # the provider's own prompt around tools, schemas and turns, at most (generous)
DEFAULT_MAX_TOKENS = 4096  # a body without max_tokens (never sent by our wires)


class Gate(Protocol):
    """What the gate needs from a budget (`reservations.ReservationLedger` implements it)."""

    def reserve(self, model_id: str, worst_usd: float) -> int: ...

    def reserve_step(self, worst: list[tuple[str, float]]) -> list[int] | None: ...

    def settle(self, token: int, actual_usd: float, flag: str = "") -> None: ...

    def settle_in_full(self, token: int, flag: str) -> None: ...

    def release(self, token: int) -> None: ...


class Refused(BaseException):
    """A reservation did not fit; carries the ledger's error (see module docstring)."""

    def __init__(self, error: ModelCallError) -> None:
        super().__init__(str(error))
        self.error = error


_gate: Gate | None = None
_gate_lock = threading.Lock()


def install(gate: Gate | None) -> None:
    """Gate every live request of this process through `gate` (None: no budget)."""
    global _gate
    with _gate_lock:
        _gate = gate


def current() -> Gate | None:
    with _gate_lock:
        return _gate


def lane_of_body(body: dict[str, Any]) -> str:
    """The price lane a request body asks for (`service_tier: flex` -> flex)."""
    return "flex" if body.get("service_tier") == "flex" else "standard"


def worst_case(body: dict[str, Any], size: int, path: str = "") -> tuple[str, int, int, str]:
    """(model id, input tokens at most, output tokens at most, lane) of one request body of `size` bytes sent
    to `path` (its wire names the model and the output limit: `models.wire.worst_case_of`)."""
    model_id, output = worst_case_of(path, body)
    return model_id, size + OVERHEAD_TOKENS, int(output or DEFAULT_MAX_TOKENS), lane_of_body(body)


@dataclass
class _Open:
    token: int
    model_id: str
    lane: str


@dataclass
class Spend:
    """The reservations of one model call (its attempts), settled when the reply is read."""

    gate: Gate
    open: list[_Open] = field(default_factory=list)

    def settle(self, usage: Usage) -> None:
        """Price the answered attempt by its usage (in full and flagged when there is none)."""
        from ..pricing.prices import cost_usd

        while self.open:
            entry = self.open.pop()
            usd = cost_usd(entry.model_id, usage, entry.lane)
            if usage.unreported or usd is None:
                self.gate.settle_in_full(entry.token, "reply without usage: charged its worst case")
            else:
                self.gate.settle(entry.token, usd)

    def close(self) -> None:
        """Anything still open had an answer that could not be read: charge it in full."""
        while self.open:
            self.gate.settle_in_full(self.open.pop().token, "answer not readable: charged its worst case")


_spend: contextvars.ContextVar[Spend | None] = contextvars.ContextVar("skilltransfer_spend", default=None)


@contextmanager
def tracking() -> Iterator[Spend | None]:
    """Collect the reservations of the requests sent in this block (None without a budget)."""
    gate = current()
    if gate is None:
        yield None
        return
    spend = Spend(gate)
    token = _spend.set(spend)
    try:
        yield spend
    finally:
        _spend.reset(token)
        spend.close()


class GatedPool:
    """Wraps an httpcore connection pool: reserve, send, then release or keep (see module docstring)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def __enter__(self) -> "GatedPool":
        self._inner.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._inner.__exit__(*exc)

    def handle_request(self, request: Any) -> Any:
        gate = current()
        if gate is None:
            return self._inner.handle_request(request)
        token, model_id, lane = _reserve(gate, b"".join(request.stream), path=_path_of(request))
        try:
            response = self._inner.handle_request(request)
        except BaseException as exc:
            if type(exc).__name__ == "ConnectError":  # nothing reached the provider
                gate.release(token)
            else:
                gate.settle_in_full(token, f"no answer ({type(exc).__name__}) after sending: charged its worst case")
            raise
        if not 200 <= response.status < 300:
            gate.release(token)  # providers do not charge refused or failed requests
            return response
        spend = _spend.get()
        if spend is None:
            gate.settle_in_full(token, "usage not read by this caller: charged its worst case")
        else:
            spend.open.append(_Open(token, model_id, lane))
        return response


def _unpriced(model_id: str, lane: str) -> ModelCallError:
    from ..pricing.prices import price_fix

    where = f" in the {lane} lane" if lane != "standard" else ""
    return ModelCallError(
        f"--max-cost: {model_id} has no price{where}, so a call to it cannot be reserved and was not sent. Price it "
        f"in pyproject.toml: {price_fix(model_id, lane)}")


def gate_client(client: Any) -> Any:
    """Put the gate into an SDK client's connection pool (both SDKs keep their httpx client as `_client`)."""
    transport = getattr(getattr(client, "_client", None), "_transport", None)
    pool = getattr(transport, "_pool", None)
    if pool is not None and not isinstance(pool, GatedPool):
        transport._pool = GatedPool(pool)
    return client


@dataclass
class Reservation:
    """One request's reservation made outside the connection pool (the batch lane parks requests)."""

    gate: Gate
    token: int
    model_id: str
    lane: str

    def answered(self) -> None:
        """A complete answer arrived: settle it with the call's usage (`Spend.settle`)."""
        spend = _spend.get()
        if spend is None:
            self.gate.settle_in_full(self.token, "usage not read by this caller: charged its worst case")
        else:
            spend.open.append(_Open(self.token, self.model_id, self.lane))

    def release(self) -> None:
        """Nothing was charged for it (refused, failed, or to be sent another way)."""
        self.gate.release(self.token)


def reserve_request(raw: bytes, lane: str, path: str = "") -> Reservation | None:
    """Reserve one request body's worst case in `lane`, waiting while calls in flight may free enough (None
    without a budget); raises `Refused` when it does not fit. The batch lane uses it for a request already
    in a batch (a resumed run adopts it): nothing is sent, but its answer is charged when it arrives."""
    gate = current()
    if gate is None:
        return None
    return Reservation(gate, *_reserve(gate, raw, lane, path))


def reserve_step(raws: list[tuple[str, bytes]], lane: str) -> list[Reservation | None] | None:
    """Reserve a whole step's requests (path, body) in `lane` at once, all or none (the batch lane sends a step
    as one batch): their reservations (each None without a budget), or None while calls in flight may free
    enough; raises `Refused` when the step cannot fit at all or a model has no price there."""
    gate = current()
    if gate is None:
        return [None] * len(raws)
    from ..pricing.prices import worst_case_usd

    worst: list[tuple[str, float]] = []
    for path, raw in raws:
        model_id, input_tokens, output_tokens, _ = worst_case(_body(raw), len(raw), path)
        usd = worst_case_usd(model_id, input_tokens, output_tokens, lane)
        if usd is None:
            raise Refused(_unpriced(model_id, lane))
        worst.append((model_id, usd))
    try:
        tokens = gate.reserve_step(worst)
    except ModelCallError as exc:
        raise Refused(exc) from None
    if tokens is None:
        return None
    return [Reservation(gate, token, model_id, lane) for token, (model_id, _) in zip(tokens, worst)]


def _body(raw: bytes) -> dict[str, Any]:
    try:
        body = json.loads(raw or b"{}")
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def _path_of(request: Any) -> str:
    """The URL path of a connection pool's request (its target, without the query)."""
    target = getattr(request.url, "target", b"")
    return (target.decode("ascii", "replace") if isinstance(target, bytes) else str(target)).split("?")[0]


def _reserve(gate: Gate, raw: bytes, lane: str | None = None, path: str = "") -> tuple[int, str, str]:
    """Reserve a request body's worst case in `lane` (None: the lane the body asks for): (token, model id,
    lane); raises `Refused` when it does not fit or the model has no price there."""
    model_id, input_tokens, output_tokens, asked = worst_case(_body(raw), len(raw), path)
    lane = lane or asked
    from ..pricing.prices import worst_case_usd

    worst = worst_case_usd(model_id, input_tokens, output_tokens, lane)
    try:
        if worst is None:
            raise _unpriced(model_id, lane)
        return gate.reserve(model_id, worst), model_id, lane
    except ModelCallError as exc:
        raise Refused(exc) from None
