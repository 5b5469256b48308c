"""One walk from the collected items to their seeds (`--plan`'s decidability, the progress line's critical path): an
invalid seed is left out, reported by its own collection error; any other error surfaces."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_skilltransfer.engine.seed_data import SeedError
from pytest_skilltransfer.plugin.seed_walk import seeded_items


def _runner(failure: Exception) -> SimpleNamespace:
    def seed(path: str) -> object:
        if path == "broken":
            raise failure
        return SimpleNamespace(name=path)
    return SimpleNamespace(seed=seed)


def test_an_invalid_seed_is_left_out_and_any_other_error_surfaces() -> None:
    items = ["alpha", "not a transfer", "broken", "beta"]
    spec_of = lambda item: None if " " in item else SimpleNamespace(seed_path=item)  # noqa: E731
    walked = seeded_items(_runner(SeedError(Path("broken"), [])), items, spec_of)  # type: ignore[arg-type]
    assert [(item, seed.name) for item, _, seed in walked] == [("alpha", "alpha"), ("beta", "beta")]
    with pytest.raises(OSError, match="disk"):
        list(seeded_items(_runner(OSError("disk")), items, spec_of))  # type: ignore[arg-type]
