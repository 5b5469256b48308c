"""A/A check: one skill scored twice on the same held-out tasks by one model, with different sample ids.

Nothing differs between the two scorings but the sample ids (OpenAI `seed`, Anthropic
`metadata.user_id`), so the true effect is zero. The check reports the paired per-task difference
second - first with the same exact interval and sign-flip p-value as a transfer gain: an interval
that excludes 0 would mean the instrument reports effects that are not there (a server that is not
deterministic where it should be, answers that depend on order or on a cache). With greedy decoding
the two scorings are expected to match task by task; `identical` counts the tasks whose answers do,
and such a check cannot fail: it measures the determinism of replay, not a false-positive rate.

With a `temperature`, both scorings sample at it, each call seeded by its sample id (OpenAI `seed`): the
two scorings then give other answers (reproducibly, on a server that honours the seed), and the check
can report an effect that is not there, at the rate its exact test allows.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..evidence.stats import Gain, paired_gain
from ..models.base import Model
from .protocol import SeedSession
from .results import Evaluation


@dataclass(frozen=True)
class AACheck:
    """Two scorings of one skill and their paired difference."""

    model_id: str
    first: Evaluation
    second: Evaluation
    first_sample: int  # the second scoring's first sample id (the first one's is 0)
    gain: Gain  # second - first, hard scores, paired by task
    temperature: float | None = None  # both scorings' sampling temperature (None: the provider's default)

    @property
    def identical(self) -> int:
        """Tasks whose answers are the same text in both scorings (every sample)."""
        return sum(1 for a, b in zip(self.first.tasks, self.second.tasks)
                   if [s.answer for s in a.samples] == [s.answer for s in b.samples])

    @property
    def no_effect(self) -> bool:
        """The interval includes 0 (what an A/A check must show)."""
        return self.gain.low <= 0.0 <= self.gain.high

    def summary(self) -> str:
        """One line: both scores, the difference with its interval and p-value, identical answers."""
        n = len(self.first.tasks)
        sampled = "" if self.temperature is None else f" at temperature {self.temperature:g}"
        return (f"A/A on {self.model_id}{sampled}: {self.first.hard.mean:.2f} vs {self.second.hard.mean:.2f} "
                f"(sample ids from 0 and from {self.first_sample}), difference {self.gain.mean:+.2f} "
                f"[{self.gain.low:+.2f}, {self.gain.high:+.2f}], p = {self.gain.p_value:.3f}, "
                f"{self.identical}/{n} tasks answered identically")


def aa_check(session: SeedSession, model: Model, skill: str, split: str = "test",
             temperature: float | None = None) -> AACheck:
    """Score `skill` on `split` with sample ids from 0 (without a temperature: shared with the protocol's
    own scoring, so usually already known) and again from `samples`, past every id the protocol uses for
    scoring; with a `temperature`, both scorings sample at it."""
    first_sample = session.config.samples
    first = session.evaluate(model, skill, split, temperature=temperature)
    second = session.evaluate(model, skill, split, first_sample=first_sample, temperature=temperature)
    gain = paired_gain([t.hard for t in first.tasks], [t.hard for t in second.tasks])
    return AACheck(model.model_id, first, second, first_sample, gain, temperature)
