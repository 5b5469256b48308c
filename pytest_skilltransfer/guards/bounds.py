"""The documented maxima of every count a user can set: one table for options, ini keys and seed.toml.

Each bound is far above any useful value and low enough that the largest run it allows can still
be planned and held in memory: a value beyond it is a typo or an attack, and is refused with a
usage error naming the option, the maximum and what to do, never a traceback or `MemoryError`.
The agent's tool steps per attempt are fixed (`agent.MAX_TOOL_STEPS`), not a setting.
"""

from __future__ import annotations

MAXIMA: dict[str, int] = {
    "nights": 100,  # optimization nights (optimizer sample ids reserve 1000 per restart)
    "edit_budget": 50,  # edits applied per night
    "samples": 100,  # rollouts per task
    "restarts": 100,  # independent optimizations per seed and pair
    "judge_samples": 25,  # judge calls per rubric check (majority vote)
    "provider_retries": 50,  # retries of one provider call (the call deadline bounds their time too)
    "max_concurrency": 256,  # concurrent calls per model
}


def over_maximum(name: str, value: int) -> str | None:
    """Why `value` is too large for the setting `name` (a key of `MAXIMA`), or None when it is within bounds."""
    most = MAXIMA[name]
    if value <= most:
        return None
    return f"must be at most {most} (the documented maximum), got {value}"
