"""Scoring profiles: how judged rollouts become a task score, a set score and a gate decision.

- `default`: a rollout's hard score (every check passes) and soft score (the fraction that pass) are
  both kept; a task scores the mean over its samples; the validation gate uses the mixed metric
  (1 - w) * hard + w * soft and accepts any strict improvement.
- `gbrain`: gbrain skillopt-v1's published protocol. A rollout scores the fraction of its checks
  that pass (qrels: nDCG@k); a task scores the median over its samples (3 by default, as gbrain's
  VALIDATION_RUNS_PER_TASK); a set scores the mean of its task medians; an edit is accepted only when
  the candidate's set score exceeds the best so far by more than 0.05 (gbrain's VALIDATION_EPSILON).

The profile decides the gate and adds its set score to every evaluation; the hard and soft
estimates (and the gates on them) are reported under every profile.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Sequence

Rollout = tuple[float, float]  # (hard, soft) of one judged sample


@dataclass(frozen=True)
class ScoringProfile:
    """One way to score rollouts and decide the validation gate."""

    name: str
    rollout: str  # "hard" or "soft": the per-rollout score a set score is built from
    per_task: str  # "mean" or "median" over a task's samples
    gate: str  # "mixed": (1 - w) * hard + w * soft; "set": the profile's set score
    min_delta: float  # a candidate must beat the best score by more than this
    samples: int  # samples per task the profile implies unless the run sets them
    description: str = ""

    def rollout_score(self, rollout: Rollout) -> float:
        return rollout[0] if self.rollout == "hard" else rollout[1]

    def task_score(self, rollouts: Sequence[Rollout]) -> float:
        """One task's score from its samples."""
        values = [self.rollout_score(r) for r in rollouts]
        if not values:
            return 0.0
        return statistics.median(values) if self.per_task == "median" else sum(values) / len(values)

    def set_score(self, tasks: Sequence[Sequence[Rollout]]) -> float:
        """The mean of the task scores (0 for an empty set, as gbrain)."""
        return sum(self.task_score(t) for t in tasks) / len(tasks) if tasks else 0.0

    def gate_score(self, tasks: Sequence[Sequence[Rollout]], gate_weight: float) -> float:
        """The number the validation gate compares."""
        if self.gate == "set":
            return self.set_score(tasks)
        if not tasks:
            return 0.0
        hard = sum(sum(r[0] for r in t) / len(t) for t in tasks) / len(tasks)
        soft = sum(sum(r[1] for r in t) / len(t) for t in tasks) / len(tasks)
        return (1 - gate_weight) * hard + gate_weight * soft

    def accepts(self, candidate: float, best: float) -> bool:
        """Keep a candidate only when it beats the best by more than `min_delta` (strictly)."""
        return candidate > best + self.min_delta + 1e-12


DEFAULT = ScoringProfile("default", "hard", "mean", "mixed", 0.0, 1,
                         "hard and soft kept, mean over samples, gate on the mixed metric, any strict gain")
GBRAIN = ScoringProfile("gbrain", "soft", "median", "set", 0.05, 3,
                        "gbrain skillopt-v1: fraction of checks per rollout, median of 3 samples, gate above best + 0.05")
PROFILES: dict[str, ScoringProfile] = {p.name: p for p in (DEFAULT, GBRAIN)}


def scoring_profile(name: str) -> ScoringProfile:
    """The profile called `name`, or ValueError listing the known ones."""
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(f"unknown scoring profile {name!r}; known profiles: {', '.join(PROFILES)}") from None
