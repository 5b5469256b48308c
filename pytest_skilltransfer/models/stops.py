"""Why a model stopped, in one vocabulary for both wire formats.

Providers name their stop reasons differently (Anthropic `end_turn`, `max_tokens`, `refusal`,
`pause_turn`; OpenAI `stop`, `length`, `content_filter`, plus a separate `refusal` message). Replies
keep the provider's own word; `stop_kind` maps it, with the answer text, to a kind. The kinds in
`PROBLEMS` are answers that are not a model's finished work and are counted per evaluation.
"""

from __future__ import annotations

PROBLEMS = ("truncated", "refusal", "content_filter", "empty")
PAUSED = ("pause_turn",)  # a long turn the provider paused; the agent sends it back to be continued

_KINDS = {
    "end_turn": "complete", "stop": "complete", "stop_sequence": "complete", "": "complete",
    "tool_use": "tool_use", "tool_calls": "tool_use", "function_call": "tool_use",
    "max_tokens": "truncated", "length": "truncated", "model_context_window_exceeded": "truncated",
    "refusal": "refusal",
    "content_filter": "content_filter",
    "pause_turn": "truncated",  # still paused when the tool-step limit ended the attempt
}


def stop_kind(stop_reason: str, answer: str) -> str:
    """complete | tool_use | truncated | refusal | content_filter | empty | other.

    A complete (or tool-step-exhausted) stop with no answer text counts as `empty`.
    """
    kind = _KINDS.get(stop_reason or "", "other")
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
