"""A seed's recordings opened for replay only, before vcrpy is needed.

In record mode `none` most calls are answered without the SDK (`models.fidelity`), and vcrpy (with
the HTTP libraries it patches) costs more to import than replaying a seed. So a replay-only context
opens the seed's files into this table first: the interactions, request keys and plays the vcrpy
cassette would hold, each recording played once. The first call that takes the path of record
makes the context open the vcrpy cassette over the same folder (`cassettes._open_cassette`), with
every play so far carried over by request key (`played`), and patch the transports from then on.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

from .store import model_of_plain, plain_key, stored_body
from .stored import StoredInteraction

Key = tuple[str, str, str]


def play_first(index: dict[Key, list[int]], plays: Counter[int], key: Key, repeats: bool = False) -> int | None:
    """Count a play of the first interaction for `key` not played yet (any, with `repeats`); its
    position, or None when none is left (call with the owner's lock held)."""
    for position in index.get(key, ()):
        if plays[position] == 0 or repeats:
            plays[position] += 1
            return position
    return None


def answer_of(stored: Any) -> tuple[int, Any]:
    """(status, body: parsed JSON or bytes) of an interaction held as stored, plain, or as vcrpy's pair."""
    if isinstance(stored, StoredInteraction):
        return stored.answer()
    if isinstance(stored, dict):
        response = stored["response"]
        return response["status"]["code"], stored_body(response["body"])
    response = stored[1]
    body = response["body"].get("string")
    return response["status"]["code"], body if isinstance(body, (bytes, str)) else b""


class ReplayTable:
    """The recordings of one seed folder for a replay-only context, without vcrpy."""

    def __init__(self, store: Any) -> None:
        self.store = store
        loaded = store.open(lambda entry: (plain_key(entry), model_of_plain(entry), entry))
        self.rejected = loaded.rejected
        self.sdk_verified: dict[str, str] = dict(loaded.sdk)
        self._held: list[Any] = []
        self._keys: list[Key] = []
        self._index: dict[Key, list[int]] = {}
        self._plays: Counter[int] = Counter()
        self._lock = threading.Lock()
        models = set()
        for key, model, interaction in loaded.interactions():
            self._add(key, interaction)
            models.add(model)
        self.loaded_models = frozenset(models)

    def _add(self, key: Key, held: Any) -> None:
        self._index.setdefault(key, []).append(len(self._held))
        self._keys.append(key)
        self._held.append(held)

    def __len__(self) -> int:
        return len(self._held)

    def play_without_sdk(self, model: str, fingerprint: str, key: Key) -> tuple[int, Any] | None:
        """As the vcrpy cassette's `play_without_sdk`: the answer for `key` played once, or None."""
        if self.sdk_verified.get(model) != fingerprint:
            return None
        with self._lock:
            position = play_first(self._index, self._plays, key)
        return None if position is None else answer_of(self._held[position])

    def played(self) -> Counter[Key]:
        """How many times each request key was played."""
        with self._lock:
            return Counter({self._keys[position]: count for position, count in self._plays.items() if count})

    def close(self) -> None:
        self.store.close(None)
