"""Token usage as a provider reports it: what prices apply to."""

from __future__ import annotations

from dataclasses import dataclass

ANOTHER_RUN = "another run"  # the `lanes` part another process paid for: an answer a concurrent recorder sent


@dataclass(frozen=True)
class Usage:
    """Tokens as the provider reported them.

    `input_tokens` counts the whole prompt; `cache_write_tokens` and `cache_read_tokens` are the
    parts of it written to and read from the provider's prompt cache (priced at their own rates).
    `unreported` counts the calls whose reply carried no usage at all (their tokens are unknown, not 0).
    `lanes` names the parts of these tokens paid in a lane other than the one the model's calls go
    through in this run (a batch lane's synchronous fallback, a batch of an earlier run collected by a
    run without the lane): prices apply to each part in its own lane (`parts`); the part named
    `ANOTHER_RUN` was paid by a concurrent recorder of the same seed and costs this run nothing.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_write_tokens: int = 0
    cache_read_tokens: int = 0
    unreported: int = 0
    lanes: tuple[tuple[str, "Usage"], ...] = ()  # (lane, the part of these tokens paid there), by lane

    def __add__(self, other: "Usage") -> "Usage":
        return Usage(self.input_tokens + other.input_tokens, self.output_tokens + other.output_tokens,
                     self.cache_write_tokens + other.cache_write_tokens,
                     self.cache_read_tokens + other.cache_read_tokens, self.unreported + other.unreported,
                     _merged(self.lanes, other.lanes) if self.lanes or other.lanes else ())

    def tokens_only(self) -> "Usage":
        """The same tokens, without lane parts."""
        return Usage(self.input_tokens, self.output_tokens, self.cache_write_tokens, self.cache_read_tokens,
                     self.unreported)

    def paid_in(self, lane: str) -> "Usage":
        """These tokens, all paid in `lane` (which is not the model's lane in this run)."""
        plain = self.tokens_only()
        return Usage(*_fields(plain), lanes=((lane, plain),))

    def parts(self, default_lane: str) -> list[tuple[str, "Usage"]]:
        """(lane, tokens) for every lane these tokens were paid in; what no lane part names is `default_lane`'s."""
        if not self.lanes:
            return [(default_lane, self)]
        named: dict[str, Usage] = {}
        for lane, part in self.lanes:
            named[lane] = named[lane] + part if lane in named else part
        rest = [a - sum(_fields(p)[i] for p in named.values()) for i, a in enumerate(_fields(self.tokens_only()))]
        if any(rest):
            named[default_lane] = named[default_lane] + Usage(*rest) if default_lane in named else Usage(*rest)
        return sorted(named.items())


def _fields(usage: Usage) -> tuple[int, int, int, int, int]:
    return (usage.input_tokens, usage.output_tokens, usage.cache_write_tokens, usage.cache_read_tokens,
            usage.unreported)


def _merged(first: tuple[tuple[str, Usage], ...], second: tuple[tuple[str, Usage], ...]) -> tuple[tuple[str, Usage], ...]:
    totals: dict[str, Usage] = {}
    for lane, part in (*first, *second):
        totals[lane] = totals[lane] + part if lane in totals else part
    return tuple(sorted(totals.items()))
