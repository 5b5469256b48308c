"""Model names as a project sees them: every alias (built-in, pinned or from `[tool.skilltransfer.models]`),
the provider and id it resolves to, its price and the seeds whose cassettes hold calls to that id (the
table `python -m pytest_skilltransfer models` prints; pins are `cassettes.model_lock`'s)."""

from __future__ import annotations

from pathlib import Path

from ..cassettes.model_lock import read_lock


def rows(cassette_dir: Path) -> list[tuple[str, str, str, str, str]]:
    """(alias, provider:id, price, recordings, note) for every alias."""
    from ..cassettes.store import file_name
    from ..models.aliases import all_aliases, lookup, sdk_aliases
    from ..pricing.prices import price_of

    pins = read_lock(cassette_dir)
    seeds = sorted(p for p in cassette_dir.iterdir() if p.is_dir()) if cassette_dir.is_dir() else []
    table = []
    for alias in all_aliases():
        target = lookup(alias)
        while isinstance(target, str):
            target = lookup(target)
        if target is None:
            continue
        price = price_of(target.model_id)
        cost = "-" if price is None else f"${price[0]:g} in / ${price[1]:g} out"
        recorded = [s.name for s in seeds if (s / file_name(target.model_id)).is_file()]
        note = ""
        if alias in pins:
            newest = sdk_aliases().get(alias, "").split(":", 1)[-1]
            note = "pinned" + (f" (the SDK's newest is {newest})" if newest and newest != target.model_id else "")
        table.append((alias, f"{target.provider}:{target.model_id}", cost,
                      f"{len(recorded)} seed(s)" if recorded else "-", note))
    return table
