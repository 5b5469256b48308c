"""The plan's expected figures calibrated from what recorded items paid (`--plan` with cassettes)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from .plan import Share, Unit


@dataclass
class Calibration:
    """What recorded items paid against what the plan expected of them, in tokens, per phase, model and role:
    reply lengths, prompt tokenization, retries, early stops and the nights that kept no edit (a transferred
    skill equal to the baseline's is answered from the run's cache and paid nothing) all show in it."""

    tokens: dict[tuple[str, str, str], list[float]] = field(default_factory=dict)  # expected in, paid in, out, out
    items: int = 0
    seen: set[tuple[str, ...]] = field(default_factory=set)

    def observe(self, units: list[Unit], bill: dict[str, dict[tuple[str, str], Any]]) -> None:
        """One fully recorded item: its units (each counted once over the items) and its bill (phase ->
        (model, role) -> tally with the paid `usage`)."""
        self.items += 1
        for unit in units:
            if unit.on_demand and unit.phase not in bill:
                continue  # the direct reference on demand did not run for this item: nothing to compare
            if unit.key not in self.seen:
                self.seen.add(unit.key)
                for share in unit.shares:
                    row = self.tokens.setdefault((unit.phase, share.model_id, share.role), [0.0] * 4)
                    row[0] += share.expected_input
                    row[2] += share.expected_output
        for phase, costs in bill.items():
            for (model_id, role), tally in costs.items():
                row = self.tokens.setdefault((phase, model_id, role), [0.0] * 4)
                row[1] += tally.usage.input_tokens
                row[3] += tally.usage.output_tokens

    def ratios(self, phase: str, model_id: str, role: str) -> tuple[float, float] | None:
        """(paid / expected) for prompt and reply tokens; None when no recorded item showed this key."""
        row = self.tokens.get((phase, model_id, role))
        if row is None or row[0] <= 0 or row[2] <= 0:
            return None
        return row[1] / row[0], row[3] / row[2]

    def describe(self) -> list[str]:
        """A line per phase, model and role calibrated."""
        lines = []
        for phase, model_id, role in sorted(self.tokens):
            found = self.ratios(phase, model_id, role)
            if found is not None:
                lines.append(f"{phase} {model_id} {role}: paid {found[0]:.2f}x the expected prompt tokens, "
                             f"{found[1]:.2f}x the expected reply tokens")
        return lines

    def as_dict(self) -> dict[str, Any]:
        return {"items": self.items, "ratios": {
            " ".join(key): {"prompt": round(found[0], 4), "reply": round(found[1], 4)}
            for key in sorted(self.tokens) if (found := self.ratios(*key)) is not None}}


def calibrated(units: list[Unit], calibration: Calibration) -> list[Unit]:
    """The units with their expected figures scaled by what recorded items of the same phase, model and role
    paid against their own expected figures (bounds unchanged; keys no recorded item showed keep the
    assumptions)."""
    def share_of(phase: str, share: Share) -> Share:
        found = calibration.ratios(phase, share.model_id, share.role)
        if found is None:
            return share
        prompt, reply = found
        return replace(share, expected_input=round(share.expected_input * prompt),
                       expected_output=round(share.expected_output * reply),
                       expected_cache_write=round(share.expected_cache_write * prompt),
                       expected_cache_read=round(share.expected_cache_read * prompt))

    return [replace(unit, shares=tuple(share_of(unit.phase, s) for s in unit.shares)) for unit in units]
