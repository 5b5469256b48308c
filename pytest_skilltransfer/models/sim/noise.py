"""Deterministic pseudo-random draws for the SIMULATED models: sha256 of a seed string and a label."""

from __future__ import annotations

import hashlib
from typing import Sequence, TypeVar

T = TypeVar("T")


class Noise:
    """Deterministic pseudo-random draws from a seed string (sha256; no global or salted state)."""

    def __init__(self, seed: str):
        self.seed = seed

    def unit(self, label: str) -> float:
        """A float in [0, 1) fixed by the seed and the label."""
        digest = hashlib.sha256(f"{self.seed}|{label}".encode()).digest()
        return int.from_bytes(digest[:8], "big") / 2**64

    def chance(self, label: str, probability: float) -> bool:
        return self.unit(label) < probability

    def between(self, label: str, low: int, high: int) -> int:
        return low + int(self.unit(label) * (high - low + 1))

    def choice(self, label: str, options: Sequence[T]) -> T:
        return options[int(self.unit(label) * len(options))]

    def shuffled(self, label: str, items: Sequence[T]) -> list[T]:
        order = sorted(range(len(items)), key=lambda i: self.unit(f"{label}:{i}"))
        return [items[i] for i in order]
