"""Optimization restarts: what makes restart r of an optimization independent of the others.

Restart 1 is exactly the optimization without restarts: the seed's own train/val split (its
`[split] seed`) and optimizer sample id = night number, so recordings made without restarts stay
valid. Restart r > 1 re-splits the seed's training pool (train + val, in file order) with split
seed `seed + r - 1` and asks the optimizer with sample ids offset by `(r - 1) * SAMPLE_STRIDE`, so
its reflections are fresh draws. Every restart scores the same held-out test tasks, and all of them
share the session's call cache: a request already answered is never sent again.
"""

from __future__ import annotations

from .seed_data import Seed, SplitSettings, Task, split_train_val

SAMPLE_STRIDE = 1000


def split_seed(seed: Seed, restart: int) -> int:
    """The train/val split seed of restart `restart` (1-based)."""
    return seed.split.seed + restart - 1


def split_name(split: str, restart: int) -> str:
    """The session's key for a split of a restart: `val` for restart 1, `val@3` for restart 3."""
    return split if restart == 1 or split == "test" else f"{split}@{restart}"


def optimizer_sample_id(night: int, restart: int) -> int:
    """The optimizer's sample id for a night of a restart."""
    return night + (restart - 1) * SAMPLE_STRIDE


def _line(task: Task) -> int:
    number = task.origin.rpartition(":")[2]
    return int(number) if number.isdigit() else 0


def train_val(seed: Seed, restart: int) -> tuple[tuple[Task, ...], tuple[Task, ...]]:
    """Restart `restart`'s (train, val): the seed's own split for restart 1, else a fresh hash split."""
    if restart == 1:
        return seed.train, seed.val
    pool = sorted(seed.train + seed.val, key=_line)
    return split_train_val(pool, SplitSettings(seed.split.val_fraction, split_seed(seed, restart)))
