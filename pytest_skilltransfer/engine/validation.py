"""The validation set of models (`--validate-on`): the rule that accepts a night's edits against several models.

A candidate edit is scored on the validation split by the source and by each listed model. It is
accepted only when the source's gate score strictly improves (the scoring profile's rule, `min_delta`
included) and, for every listed model, neither its gate score nor its pass rate on any one check
(`op=arg`, over the validation tasks that carry it) drops by more than `tolerance` (default 0: no drop
at all). The per-check rule is what makes "does not hurt" mean it: a gate score is a composite of
every check, so an edit can trade one requirement for another (a length limit kept, a section lost)
and still raise it; the held-out tasks may check only the requirement that was given up.
The listed models see the validation split only: never the held-out tasks, never the training replay.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from .scoring import ScoringProfile

EPSILON = 1e-12
DEFAULT_TOLERANCE = 0.0


@dataclass(frozen=True)
class CheckRate:
    """One kind of check's pass rate on the validation split before a night's edits and with them."""

    check: str  # the kind of check: its op (`section_present`, `max_chars`, ...)
    before: float
    after: float

    def drop(self) -> float:
        """How far the candidate lowers this check's pass rate (negative: it raises it)."""
        return self.before - self.after


@dataclass(frozen=True)
class ValidationScore:
    """One listed model's validation gate score before a night's edits and with them (None: not scored),
    and its pass rate on each check the validation tasks carry."""

    model_id: str
    before: float
    after: float | None = None
    checks: tuple[CheckRate, ...] = ()

    def drop(self) -> float:
        """How far the candidate lowers this model's score (negative: it raises it)."""
        return 0.0 if self.after is None else self.before - self.after

    def dropped_checks(self, tolerance: float = DEFAULT_TOLERANCE) -> tuple[CheckRate, ...]:
        """The checks whose pass rate the candidate lowers by more than `tolerance`."""
        return tuple(c for c in self.checks if c.drop() > tolerance + EPSILON)

    def blocks(self, tolerance: float = DEFAULT_TOLERANCE) -> bool:
        """Whether the candidate lowers this model's gate score, or any check's pass rate, beyond `tolerance`."""
        return self.drop() > tolerance + EPSILON or bool(self.dropped_checks(tolerance))

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
    """Accept only a strict improvement on the source that lowers no listed model beyond `tolerance`:
    neither its gate score nor its pass rate on any one check.

    `blocked_by` names every listed model whose score or a check of which dropped beyond the tolerance,
    whether or not the source improved (a rejected edit says which models it would have hurt).
    """
    if not 0 <= tolerance <= 1:
        raise ValueError(f"validation tolerance must be within [0, 1], got {tolerance}")
    improved = profile.accepts(source_after, source_before)
    blocked = tuple(v.model_id for v in validators if v.blocks(tolerance))
    return Decision(improved and not blocked, improved, blocked)


def check_pass_rates(checks: Sequence[Sequence[tuple[str, str]]],
                     failed: Sequence[Sequence[Sequence[str]]]) -> dict[str, float]:
    """Each kind of check's pass rate on a split. `checks[i]` are task i's checks as (op, `op=arg` label),
    `failed[i][s]` the labels its sample s failed (a timed-out check is its label with a note, and fails).
    Per task, the share of its checks of that op that pass, averaged over its samples; then the mean
    over the tasks that carry the op."""
    rates: dict[str, list[float]] = {}
    for task_checks, samples in zip(checks, failed):
        by_op: dict[str, list[str]] = {}
        for op, label in task_checks:
            by_op.setdefault(op, []).append(label)
        for op, labels in by_op.items():
            passed = [sum(not any(x == label or x.startswith(label + " (") for x in f) for label in labels) / len(labels)
                      for f in samples]
            rates.setdefault(op, []).append(sum(passed) / len(passed) if passed else 0.0)
    return {op: sum(v) / len(v) for op, v in rates.items()}


def check_rates(before: dict[str, float], after: dict[str, float]) -> tuple[CheckRate, ...]:
    """Every check of the split, before and with the candidate, in the order the split first names them."""
    return tuple(CheckRate(label, rate, after.get(label, 0.0)) for label, rate in before.items())


def blocked_text(validators: Sequence[ValidationScore], tolerance: float = DEFAULT_TOLERANCE) -> str:
    """The models that block, each with what dropped: `sim-large (section_present=Next Week 1.00 -> 0.33)`."""
    parts = []
    for v in validators:
        if not v.blocks(tolerance):
            continue
        why = [f"{c.check} {c.before:.2f} -> {c.after:.2f}" for c in v.dropped_checks(tolerance)]
        if v.drop() > tolerance + EPSILON and not why:
            why = [f"gate score {v.before:.2f} -> {v.after:.2f}"]
        parts.append(f"{v.model_id} ({'; '.join(why)})")
    return ", ".join(parts)


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
