"""The run's family of hypotheses: which items' evidence is judged together, at what level, and the one word
each item's row says.

A nightly run gates on every item it collects, so the gates that fail a build (harm, `min_gain`, regression,
non-inferiority) control the family-wise error over the evidence that is new in the run: each is tested at
Bonferroni's level 1 - alpha / m, m the run's collected (seed, pair) items. Bonferroni and not Holm because an
item must decide on its own: items gate in parallel (`-n`), shards merge later, and an item replayed
unchanged must keep its verdict; Holm's bar for an item depends on every other item's p-value, so one seed's
change could flip another's words. Bonferroni's bar depends on m alone, and the collected items bound the new
ones (new is a subset of collected), so the family-wise error over the new evidence is at most alpha.

An item whose evidence is unchanged (its evidence digest equals its committed snapshot's) was judged when it
was new: it keeps the family size recorded there, hence exactly its verdict and words (`recorded_size`).

Words (`word`): `transfers` / `hurts` only for a finding of the family (the interval at the family's level
lies wholly above / below 0); `undecidable at n tasks` when not even every unit moving one way could be a
finding at this level; `gain shown alone` / `harm shown alone` when the item's own 95% interval excludes 0
but the family's does not; `no effect shown` otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .decidability import smallest_p
from .gain_tests import gain_bounds_of, restart_count_of
from .score_intervals import EPSILON, HURTS, LEVEL, NO_EFFECT, TRANSFERS

ALPHA = round(1 - LEVEL, 6)
METHOD = "bonferroni"
GAIN_ALONE, HARM_ALONE = "gain shown alone", "harm shown alone"
UNDECIDABLE = "undecidable"


@dataclass(frozen=True)
class RunFamily:
    """The family an item is judged in: Bonferroni over `size` items at `alpha` (size 1: the item alone)."""

    size: int
    alpha: float = ALPHA
    method: str = METHOD
    recorded: bool = False  # the size was read from the committed snapshot (evidence unchanged); not in the JSON,
    # so a replay's report equals the recording's
    share: float = 1.0  # the share of the item's alpha its stopping look spent (`sequential`; 1: one look)
    futile: bool = False  # the item stopped for futility: the last look would most likely not have decided it

    @property
    def level(self) -> float:
        """The two-sided level every gate and the finding use: the item's alpha / size, times the share of it
        the look the item stopped at spends (the design divides each item's alpha across its looks)."""
        return 1 - self.alpha / max(self.size, 1) * self.share

    def as_dict(self) -> dict[str, Any]:
        shared = {"alpha_share": self.share, **({"futile": True} if self.futile else {})} if self.share < 1.0 else {}
        return {"method": self.method, "alpha": self.alpha, "size": self.size, **shared, "level": round(self.level, 8)}


def undecidable(gain: dict[str, Any], family: RunFamily) -> bool:
    """Whether no outcome could be a finding: the smallest p-value of the item's units exceeds the bar."""
    return smallest_p(gain["n"], restart_count_of(gain)) > family.alpha / max(family.size, 1) * family.share + EPSILON


def units_word(gain: dict[str, Any]) -> str:
    """`6 tasks` or `4 clusters`: the units the test counts."""
    unit = "cluster" if gain.get("unit") == "cluster" else "task"
    return f"{gain['n']} {unit}{'s' if gain['n'] != 1 else ''}"


def word(gain: dict[str, Any], family: RunFamily) -> str:
    """The one word an item's row says (see the module docstring)."""
    low, high = gain_bounds_of(gain, family.level)
    if low > EPSILON:
        return TRANSFERS
    if high < -EPSILON:
        return HURTS
    if undecidable(gain, family) and not family.futile:  # a futile stop's few tasks were enough to see that
        return f"{UNDECIDABLE} at {units_word(gain)}"
    if gain["ci_low"] > 0:
        return GAIN_ALONE
    if gain["ci_high"] < 0:
        return HARM_ALONE
    return NO_EFFECT


def record(gain: dict[str, Any], family: RunFamily) -> dict[str, Any]:
    """The JSON record: the method, the family and its level, the adjusted p-value and the interval at the
    family's level beside the item's own (unadjusted) outcome."""
    from .score_intervals import outcome

    low, high = gain_bounds_of(gain, family.level)
    return {**family.as_dict(), "p_adjusted": float(f"{min(1.0, gain['p_value'] * max(family.size, 1)):.6g}"),
            "ci_low": round(low, 4), "ci_high": round(high, 4),
            "unadjusted": {"level": LEVEL, "p_value": gain["p_value"], "ci_low": gain["ci_low"],
                           "ci_high": gain["ci_high"], "outcome": outcome(gain["ci_low"], gain["ci_high"])},
            "decidable": not undecidable(gain, family)}


def kind(text: str) -> str:
    """The count a word falls in: transfers, hurts, shown alone, undecidable or no effect shown."""
    if text.startswith(UNDECIDABLE):
        return UNDECIDABLE
    if text in (GAIN_ALONE, HARM_ALONE):
        return "shown alone"
    return text
