"""The validation set of models (`--validate-on`): the rule that accepts a night's edits against several models.

A candidate edit is scored on the validation split by the source and by each listed model. It is
accepted only when the source's gate score strictly improves (the scoring profile's rule, `min_delta`
included) and no listed model's gate score drops by more than `tolerance` (default 0: no drop at all).
The listed models see the validation split only: never the held-out tasks, never the training replay.
"""

from __future__ import annotations

from dataclasses import dataclass

from .scoring import ScoringProfile

EPSILON = 1e-12
DEFAULT_TOLERANCE = 0.0


@dataclass(frozen=True)
class ValidationScore:
    """One listed model's validation gate score before a night's edits and with them (None: not scored)."""

    model_id: str
    before: float
    after: float | None = None

    def drop(self) -> float:
        """How far the candidate lowers this model's score (negative: it raises it)."""
        return 0.0 if self.after is None else self.before - self.after

    def as_dict(self) -> dict[str, object]:
        return {"model": self.model_id, "before": self.before, "after": self.after}


@dataclass(frozen=True)
class Decision:
    """A gate decision with a validation set: accepted, and which models blocked it when not."""

    accepted: bool
    source_improved: bool
    blocked_by: tuple[str, ...]


def decide(profile: ScoringProfile, source_before: float, source_after: float,
           validators: tuple[ValidationScore, ...], tolerance: float = DEFAULT_TOLERANCE) -> Decision:
    """Accept only a strict improvement on the source that lowers no listed model beyond `tolerance`.

    `blocked_by` names every listed model whose score dropped beyond the tolerance, whether or not the
    source improved (a rejected edit says which models it would have hurt).
    """
    if not 0 <= tolerance <= 1:
        raise ValueError(f"validation tolerance must be within [0, 1], got {tolerance}")
    improved = profile.accepts(source_after, source_before)
    blocked = tuple(v.model_id for v in validators if v.drop() > tolerance + EPSILON)
    return Decision(improved and not blocked, improved, blocked)


def parse_models(value: object, where: str) -> tuple[str, ...]:
    """`MODEL[,MODEL...]` (a string, or a list of strings as ini lines or TOML give it) as unique names in order.

    Raises ValueError naming `where` for an empty name or a value of another type.
    """
    items = value if isinstance(value, (list, tuple)) else [value]
    names: list[str] = []
    for item in items:
        if not isinstance(item, str):
            raise ValueError(f"{where}: expected model names (MODEL[,MODEL...]), got {item!r}")
        for part in item.replace("\n", ",").split(","):
            name = part.strip()
            if not name:
                continue
            if name not in names:
                names.append(name)
    if not names and any(isinstance(i, str) and i.strip() for i in items):
        raise ValueError(f"{where}: expected model names (MODEL[,MODEL...]), got {value!r}")
    return tuple(names)
