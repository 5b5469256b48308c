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
    strict_limits: float = 0.0
    overread_abstract: float = 0.0


# How a learned rule can hurt the other model (each a behaviour of the family, triggered by what the skill says):
# - strict_limits: share of answers in which a followed numeric upper length limit outranks every other rule
#   when the required parts would overrun it: the model leaves out the title, the body and then the required
#   parts (sections and labels, last first) that do not fit under the limit. A weak model appends what it was
#   told to and overruns.
# - overread_abstract: share of the abstract length rules ("be concise") the model cannot follow that it
#   over-reads as a hard literal instead: at most three sentences (OVERREAD_SENTENCES).
OVERREAD_SENTENCES = 3


PROFILES: dict[str, Profile] = {
    "sim-small": Profile(
        follow={LITERAL: 0.9, ABSTRACT: 0.07, NATURAL: 0.9},
        default_chars=(500, 900),
        overshoot=0.1,
        abstract_style=0.0,
        overread_abstract=0.6,
    ),
    "sim-large": Profile(
        follow={LITERAL: 0.97, ABSTRACT: 0.9, NATURAL: 0.95},
        default_chars=(850, 1500),
        overshoot=0.02,
        abstract_style=0.7,
        example_rate=0.35,
        strict_limits=0.9,
    ),
}
