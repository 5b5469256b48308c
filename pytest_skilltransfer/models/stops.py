"""Why a model stopped, in one vocabulary for every wire format.

Providers name their stop reasons differently (Anthropic `end_turn`, `max_tokens`, `refusal`,
`pause_turn`; OpenAI `stop`, `length`, `content_filter`, plus a separate `refusal` message). Replies
keep the provider's own word; `stop_kind` maps it, with the answer text, to a kind (each wire's
`stop_kinds`, `models.wire`). The kinds in `PROBLEMS` are answers that are not a model's finished work
and are counted per evaluation.
"""

from __future__ import annotations

from .wire import wires

PROBLEMS = ("truncated", "refusal", "content_filter", "empty")
PAUSED = ("pause_turn",)  # a long turn the provider paused; the agent sends it back to be continued

_SHARED = {"": "complete", "refusal": "refusal"}  # no stop reason (the simulator), a refusal message


def _kind_of(stop_reason: str) -> str:
    """The kind of a stop reason: the shared words, else the registered wires' own (`Wire.stop_kinds`)."""
    if stop_reason in _SHARED:
        return _SHARED[stop_reason]
    return next((w.stop_kinds[stop_reason] for w in wires() if stop_reason in w.stop_kinds), "other")


def stop_kind(stop_reason: str, answer: str) -> str:
    """complete | tool_use | truncated | refusal | content_filter | empty | other.

    A complete (or tool-step-exhausted) stop with no answer text counts as `empty`.
    """
    kind = _kind_of(stop_reason or "")
    if kind in ("complete", "tool_use", "other") and not (answer or "").strip():
        return "empty"
    return kind


def problem_counts(samples: list[tuple[str, str]]) -> dict[str, int]:
    """Counts of each problem kind over (stop_reason, answer) pairs; every kind present, zeros included."""
    counts = dict.fromkeys(PROBLEMS, 0)
    for stop_reason, answer in samples:
        kind = stop_kind(stop_reason, answer)
        if kind in counts:
            counts[kind] += 1
    return counts
