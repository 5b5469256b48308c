"""Token usage as a provider reports it: what prices apply to."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Usage:
    """Tokens as the provider reported them.

    `input_tokens` counts the whole prompt; `cache_write_tokens` and `cache_read_tokens` are the
    parts of it written to and read from the provider's prompt cache (priced at their own rates).
    `unreported` counts the calls whose reply carried no usage at all (their tokens are unknown, not 0).
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_write_tokens: int = 0
    cache_read_tokens: int = 0
    unreported: int = 0

    def __add__(self, other: "Usage") -> "Usage":
        return Usage(self.input_tokens + other.input_tokens, self.output_tokens + other.output_tokens,
                     self.cache_write_tokens + other.cache_write_tokens,
                     self.cache_read_tokens + other.cache_read_tokens, self.unreported + other.unreported)
