"""The SIMULATED models' capacities: how often each follows a directive of each strength, and optimizer style."""

from __future__ import annotations

from dataclasses import dataclass

from .skill_reader import ABSTRACT, LITERAL, NATURAL


@dataclass(frozen=True)
class Profile:
    """A simulated model's capacity: follow rates per directive strength, lengths, optimizer style."""

    follow: dict[str, float]
    default_chars: tuple[int, int] = (650, 1100)
    verbose_chars: tuple[int, int] = (1500, 2500)
    concise_chars: tuple[int, int] = (350, 750)
    overshoot: float = 0.0
    abstract_style: float = 0.0
    example_rate: float = 0.0
    useless_edit_rate: float = 0.15
    harmful_edit_rate: float = 0.12


PROFILES: dict[str, Profile] = {
    "sim-small": Profile(
        follow={LITERAL: 0.9, ABSTRACT: 0.07, NATURAL: 0.9},
        default_chars=(500, 900),
        overshoot=0.1,
        abstract_style=0.0,
    ),
    "sim-large": Profile(
        follow={LITERAL: 0.97, ABSTRACT: 0.9, NATURAL: 0.95},
        default_chars=(850, 1500),
        overshoot=0.02,
        abstract_style=0.7,
        example_rate=0.35,
    ),
}
