"""Call slots per model, handed out by priority: calls on the protocol's critical path go first.

A seed's phases run at the same time and share each model's concurrency. When a model is full, the
next free slot goes to the waiting call with the lowest priority number (the optimizations, whose
nights run one after another), then to the one that asked first (the final evaluations), so the
long chains are not held up behind a large evaluation that could run at any time.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from ..models.base import Model


class PrioritySlots:
    """At most `size` holders at once; waiters are served by (priority, arrival)."""

    def __init__(self, size: int) -> None:
        self.size = max(1, size)
        self._busy = 0
        self._waiting: list[tuple[int, int]] = []
        self._arrivals = itertools.count()
        self._cond = threading.Condition()

    @contextmanager
    def hold(self, priority: int = 0) -> Iterator[None]:
        """Hold one slot for the block (waits for the slot when the model is full)."""
        with self._cond:
            ticket = (priority, next(self._arrivals))
            heapq.heappush(self._waiting, ticket)
            while self._busy >= self.size or self._waiting[0] != ticket:
                self._cond.wait()
            heapq.heappop(self._waiting)
            self._busy += 1
            if self._waiting and self._busy < self.size:
                self._cond.notify_all()
        try:
            yield
        finally:
            with self._cond:
                self._busy -= 1
                self._cond.notify_all()


class ModelSlots:
    """One `PrioritySlots` per model id, sized by `size(model)` on first use."""

    def __init__(self, size: Callable[["Model"], int]) -> None:
        self._size = size
        self._slots: dict[str, PrioritySlots] = {}
        self._lock = threading.Lock()

    def of(self, model: "Model") -> PrioritySlots:
        with self._lock:
            slots = self._slots.get(model.model_id)
            if slots is None:
                slots = self._slots[model.model_id] = PrioritySlots(self._size(model))
            return slots
