"""A group-sequential design for the paired exact test: score the held-out tasks in waves, look after each wave,
and stop an arm pair once its verdict is decided (or can no longer be).

**Looks.** A design with K looks scores an item's N held-out tasks in K waves, in the tasks' order; look k sees the
first n_k = ceil(f_k N) tasks for the design's fractions f_k (6 / 12 / 18 / 24 at N = 24). Two fractions that
land on the same count at small N merge into one look (their shares add up).

**Error spending.** An item tested at two-sided level alpha (0.05 alone; alpha / m in a run family of m items,
`run_family`) spends a share s_k of it at look k (sum of s_k = 1): look k's interval is the exact interval of
`paired_exact` at level 1 - alpha s_k. By the union bound the intervals of all K looks cover the true gain
together with probability >= 1 - alpha, whatever decides when to stop (repeated confidence intervals, Jennison and
Turnbull): the interval the stopping look reports needs no correction for the stopping rule, and no stopping
rule - efficacy or futility, followed or not - can raise the error above alpha. The run family divides alpha
across the run's new items; the design divides each item's share across its looks.

**Efficacy.** Stop at look k when the look's interval excludes every threshold the item is judged against (0 for
its outcome; the harm gate's -tolerance, `min_gain`, -margin of non-inferiority): each is then decided there, pass
or fail, by the same test the fixed design uses.

**Futility (non-binding).** Stop at an interim look when, for every threshold still open, the predictive
probability that the last look decides it is below `futility` (0.05), or when no task has moved yet. The
remaining tasks' moves are drawn from the posterior predictive of the moves seen so far (Dirichlet-multinomial,
Jeffreys' prior 1/2 on up, down and stay; Spiegelhalter, Freedman and Blackburn's predictive power). Tasks flipping
both ways at random (a noisy null) give a small predicted chance; a few tasks' uncertainty is part of the
prediction, so a real gain that started slowly is rarely given up. Nothing moving in the first tasks is the
commonest null of all and its predicted chance (0.08 after 6 of 24 tasks) sits just above the floor, so it stops
by name. Being non-binding the rule needs no error of its own: it only gives up power (0.889 -> 0.803 for a gain
of 0.3 at 24 tasks, where every task improves or stays).

Everything is exact: `operating` enumerates every path of an item through the looks for given chances of a task
moving up or down (`benchmarks/sequential_design.py` prints the figures). Only `math`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Sequence

from .gain_tests import gain_decision, gain_interval, moves, score_bounds
from .score_intervals import FAIL, INCONCLUSIVE, LEVEL, PASS, decide

ALPHA = round(1 - LEVEL, 6)
DECIDED, FUTILE, LAST_LOOK, CONTINUE = "decided", "futile", "last look", "continue"
PREDICTIVE, UNMOVED, NO_FUTILITY = "predictive", "unmoved", "none"


@dataclass(frozen=True)
class Look:
    """One look of a design at N tasks: its number (from 1), the tasks it sees and its share of the item's alpha."""

    number: int
    tasks: int
    share: float

    def level(self, alpha: float = ALPHA) -> float:
        """The two-sided level of this look's interval."""
        return 1.0 - alpha * self.share


@dataclass(frozen=True)
class Design:
    """Looks (fractions of the held-out tasks), the share of alpha each spends, and the futility rule."""

    name: str
    fractions: tuple[float, ...]
    shares: tuple[float, ...]
    futility: float = 0.0  # predictive probability below which an open threshold is futile (0: never)
    rule: str = PREDICTIVE  # PREDICTIVE, UNMOVED (stop when no task has moved) or NO_FUTILITY
    prior: float = 0.5  # the Dirichlet prior on up, down and stay of the predictive rule

    def __post_init__(self) -> None:
        if not self.fractions or len(self.fractions) != len(self.shares):
            raise ValueError(f"design {self.name!r}: one share of alpha per look is needed")
        if any(b <= a for a, b in zip(self.fractions, self.fractions[1:])) or abs(self.fractions[-1] - 1.0) > 1e-12:
            raise ValueError(f"design {self.name!r}: looks must increase and end at every task (1.0)")
        if any(s < 0 for s in self.shares) or abs(sum(self.shares) - 1.0) > 1e-9:
            raise ValueError(f"design {self.name!r}: the shares of alpha must be >= 0 and sum to 1")

    @property
    def sequential(self) -> bool:
        return len(self.fractions) > 1

    def looks(self, n: int) -> tuple[Look, ...]:
        """The looks at n held-out tasks (fractions landing on one count merge; at least one look)."""
        if n <= 0:
            return (Look(1, 0, 1.0),)
        counts: dict[int, float] = {}
        for fraction, share in zip(self.fractions, self.shares):
            tasks = min(n, max(1, math.ceil(fraction * n - 1e-9)))
            counts[tasks] = counts.get(tasks, 0.0) + share
        return tuple(Look(i + 1, tasks, share) for i, (tasks, share) in enumerate(sorted(counts.items())))

    def describe(self, n: int) -> str:
        """`looks at 6/12/18/24 tasks, alpha shares .02/.08/.2/.7, futility: predictive < 0.1` (one line)."""
        looks = self.looks(n)
        if len(looks) == 1:
            return f"fixed design: one look at {looks[0].tasks} task(s)"
        futility = {PREDICTIVE: f"predictive probability < {self.futility:g} or no task moved (non-binding)",
                    UNMOVED: "no task moved (non-binding)", NO_FUTILITY: "none"}[self.rule]
        return (f"looks at {'/'.join(str(k.tasks) for k in looks)} task(s), alpha shares "
                f"{'/'.join(f'{k.share:g}' for k in looks)}; futility: {futility}")

    def as_dict(self, n: int) -> dict[str, Any]:
        looks = self.looks(n)
        return {"design": self.name, "looks": [k.tasks for k in looks], "alpha_shares": [k.share for k in looks],
                "futility": self.rule if self.sequential else NO_FUTILITY,
                "futility_below": self.futility if self.sequential and self.rule == PREDICTIVE else None}


FIXED = Design("fixed", (1.0,), (1.0,), rule=NO_FUTILITY)
# alpha .001 / .004 / .01 / .035 at 0.05: the first look (6 tasks) cannot decide at .001 (the smallest two-sided p of
# 6 tasks is 1/32), but its share gives a futility stop an interval that says something (+-0.73 where nothing moved)
GROUP_SEQUENTIAL = Design("group-sequential", (0.25, 0.5, 0.75, 1.0), (0.02, 0.08, 0.2, 0.7), futility=0.05)
DESIGNS = {d.name: d for d in (FIXED, GROUP_SEQUENTIAL)}


@dataclass(frozen=True)
class LookResult:
    """What one look saw and did: the counts so far, each threshold's decision at the look's level and (at an
    interim look, for an open threshold) the predictive probability that the last look decides it."""

    look: Look
    up: float
    down: float
    decisions: tuple[str, ...]
    predictive: tuple[float | None, ...]
    action: str


def _decisions(n: int, up: float, down: float, thresholds: Sequence[float], level: float) -> tuple[str, ...]:
    return tuple(gain_decision(n, up, down, t, level) for t in thresholds)


@lru_cache(maxsize=8192)
def _predictive_weights(remaining: int, up: float, down: float, stay: float,
                        prior: float) -> tuple[tuple[int, int, float], ...]:
    """Every (ups, downs) of the remaining tasks and its Dirichlet-multinomial probability."""
    a = (up + prior, down + prior, max(stay, 0.0) + prior)
    lg = math.lgamma
    base = lg(remaining + 1) + lg(sum(a)) - lg(sum(a) + remaining) - sum(lg(x) for x in a)
    out = []
    for b in range(remaining + 1):
        for c in range(remaining - b + 1):
            s = remaining - b - c
            log_w = base - lg(b + 1) - lg(c + 1) - lg(s + 1) + lg(a[0] + b) + lg(a[1] + c) + lg(a[2] + s)
            out.append((b, c, math.exp(log_w)))
    return tuple(out)


@lru_cache(maxsize=16384)
def predictive_decision(total: int, tasks: int, up: float, down: float, threshold: float, level: float,
                        prior: float = 0.5) -> float:
    """The posterior predictive probability that the last look (all `total` tasks, at `level`) decides
    `threshold`, given `up` and `down` moves among the first `tasks` (`Design`'s futility rule)."""
    remaining = total - tasks
    if remaining <= 0:
        return 0.0 if gain_decision(total, up, down, threshold, level) == INCONCLUSIVE else 1.0
    weights = _predictive_weights(remaining, round(up, 9), round(down, 9), round(tasks - up - down, 9), prior)
    return sum(w for b, c, w in weights if gain_decision(total, up + b, down + c, threshold, level) != INCONCLUSIVE)


def judge_look(design: Design, total: int, look: Look, up: float, down: float, thresholds: Sequence[float],
               alpha: float = ALPHA) -> LookResult:
    """The look's decisions and what the design does next (`DECIDED`, `FUTILE`, `LAST_LOOK` or `CONTINUE`)."""
    decisions = _decisions(look.tasks, up, down, thresholds, look.level(alpha))
    last = design.looks(total)[-1]
    if look.tasks >= total:
        return LookResult(look, up, down, decisions, (None,) * len(thresholds), LAST_LOOK)
    if all(d != INCONCLUSIVE for d in decisions):
        return LookResult(look, up, down, decisions, (None,) * len(thresholds), DECIDED)
    predictive: list[float | None] = []
    for threshold, decision in zip(thresholds, decisions):
        if decision != INCONCLUSIVE or design.rule != PREDICTIVE:
            predictive.append(None)
        else:
            predictive.append(predictive_decision(total, look.tasks, up, down, threshold, last.level(alpha),
                                                  design.prior))
    unmoved = up + down <= 1e-9
    if design.rule == UNMOVED:
        futile = unmoved
    elif design.rule == PREDICTIVE:
        futile = unmoved or all(p is None or p < design.futility for p in predictive)
    else:
        futile = False
    return LookResult(look, up, down, decisions, tuple(predictive), FUTILE if futile else CONTINUE)


@dataclass(frozen=True)
class Stop:
    """Where an item stopped: the look, the tasks it had seen of how many, why, and the level its interval holds."""

    design: str
    look: int
    looks: int
    tasks: int
    total: int
    share: float
    reason: str  # DECIDED, FUTILE or LAST_LOOK

    def level(self, alpha: float = ALPHA) -> float:
        """The two-sided level of the stopping look's interval (and of every gate's decision there)."""
        return 1.0 - alpha * self.share

    @property
    def early(self) -> bool:
        return self.tasks < self.total

    def as_dict(self) -> dict[str, Any]:
        return {"look": self.look, "tasks": self.tasks, "of": self.total, "alpha_share": self.share,
                "reason": self.reason}


def run(design: Design, differences: Sequence[float], thresholds: Sequence[float] = (0.0,),
        alpha: float = ALPHA) -> tuple[Stop, tuple[LookResult, ...]]:
    """Walk the looks over per-task differences (after - before, in [-1, 1], in scoring order) and stop where the
    design does; returns the stop and every look taken. A fractional difference counts as a fractional move."""
    total = len(differences)
    looks = design.looks(total)
    seen: list[LookResult] = []
    for look in looks:
        part = differences[:look.tasks]
        up, down = moves(part)
        result = judge_look(design, total, look, up, down, thresholds, alpha)
        seen.append(result)
        if result.action != CONTINUE:
            return Stop(design.name, look.number, len(looks), look.tasks, total, look.share, result.action), tuple(seen)
    raise AssertionError("the last look always stops")  # pragma: no cover


def stop_interval(stop: Stop, up: float, down: float, alpha: float = ALPHA) -> tuple[float, float]:
    """The interval the stopping look supports: the exact interval of its tasks at its own level."""
    return gain_interval(stop.tasks, up, down, stop.level(alpha))


# -- operating characteristics, exactly ------------------------------------------------------------


def _wave(tasks: int, p_up: float, p_down: float) -> list[tuple[int, int, float]]:
    """Every (ups, downs) of `tasks` tasks and its trinomial probability."""
    p_stay = 1.0 - p_up - p_down
    out = []
    for b in range(tasks + 1):
        for c in range(tasks - b + 1):
            s = tasks - b - c
            if (b and p_up <= 0) or (c and p_down <= 0) or (s and p_stay <= 1e-15):
                continue
            log_p = (math.lgamma(tasks + 1) - math.lgamma(b + 1) - math.lgamma(c + 1) - math.lgamma(s + 1)
                     + (b * math.log(p_up) if b else 0.0) + (c * math.log(p_down) if c else 0.0)
                     + (s * math.log(p_stay) if s else 0.0))
            out.append((b, c, math.exp(log_p)))
    return out


@dataclass(frozen=True)
class Operating:
    """An item's exact operating characteristics under a design: expected tasks scored, the chance each threshold
    ends decided pass / fail, the chance the reported interval covers the true gain, and where it stops."""

    total: int
    expected_tasks: float
    passes: tuple[float, ...]
    fails: tuple[float, ...]
    coverage: float
    stops: dict[int, float]  # tasks at the stop -> probability

    @property
    def saved(self) -> float:
        """The expected share of held-out answers not paid for."""
        return 1.0 - self.expected_tasks / self.total if self.total else 0.0


def operating(design: Design, total: int, p_up: float, p_down: float, thresholds: Sequence[float] = (0.0,),
              alpha: float = ALPHA, coverage: bool = True) -> Operating:
    """Enumerate every path through the looks when each task moves up with probability `p_up` and down with
    `p_down` (independently): `Operating` for the item. The coverage is of the stopping look's exact interval."""
    truth = p_up - p_down
    looks = design.looks(total)
    states: dict[tuple[int, int], float] = {(0, 0): 1.0}
    before = 0
    passes = [0.0] * len(thresholds)
    fails = [0.0] * len(thresholds)
    covered = expected = 0.0
    stops: dict[int, float] = {}
    for look in looks:
        wave = _wave(look.tasks - before, p_up, p_down)
        moved: dict[tuple[int, int], float] = {}
        for (b, c), p in states.items():
            for db, dc, q in wave:
                key = (b + db, c + dc)
                moved[key] = moved.get(key, 0.0) + p * q
        states = {}
        for (b, c), p in moved.items():
            result = judge_look(design, total, look, b, c, thresholds, alpha)
            if result.action == CONTINUE:
                states[(b, c)] = p
                continue
            expected += p * look.tasks
            stops[look.tasks] = stops.get(look.tasks, 0.0) + p
            for i, decision in enumerate(result.decisions):
                passes[i] += p * (decision == PASS)
                fails[i] += p * (decision == FAIL)
            if coverage:
                low, high = gain_interval(look.tasks, b, c, look.level(alpha))
                covered += p * (low - 1e-9 <= truth <= high + 1e-9)
        before = look.tasks
    return Operating(total, expected, tuple(passes), tuple(fails), covered if coverage else math.nan, stops)


@dataclass(frozen=True)
class Stopping:
    """What an item's looks test: its two-sided alpha (its share of the run family's) and the thresholds its gates
    read from the gain (0 for the outcome, -tolerance for harm, `min_gain`, -margin for non-inferiority)."""

    alpha: float = ALPHA
    thresholds: tuple[float, ...] = (0.0,)
    # the regression gate's committed per-task scores of the transferred skill (task id, score) and its threshold
    # (-tolerance): a second pair, transferred now against then, with looks of its own from the pair's stop on (the
    # transferred arm alone looks on while it is open); it never moves the pair's stop
    reference: tuple[tuple[str, float], ...] = ()
    reference_threshold: float = -0.05
    # the gates that read the transferred score (`min_score`) and the efficiency (`min_efficiency`): like the
    # regression pair they keep an item looking while open and likely decided at the last look, never stop one
    min_score: float | None = None
    min_efficiency: float | None = None
    # the run (re)makes the regression gate's reference (it writes snapshots): after the pair stops, the
    # transferred arm alone is scored on the remaining held-out tasks, which no gate or verdict reads
    full_reference: bool = False


def reference_look(design: Design, total: int, look: Look, scores: Sequence[tuple[str, float]], stopping: Stopping,
                   alpha: float = ALPHA) -> str | None:
    """The regression pair at an interim look: this run's transferred scores so far (`scores`, task id and score)
    against the committed ones, over the tasks both have. `CONTINUE` while it is open and the item's last look
    (of `total` tasks, at its level) would likely decide it, so the transferred arm looks on past the pair's stop;
    else what it is (None without a reference or a common task, and at the last look)."""
    reference = dict(stopping.reference)
    differences = [score - reference[task] for task, score in scores if task in reference]
    if not differences or look.tasks >= total:
        return None
    up, down = moves(differences)
    threshold, n = stopping.reference_threshold, len(differences)
    if gain_decision(n, up, down, threshold, look.level(alpha)) != INCONCLUSIVE:
        return DECIDED
    if up + down <= 1e-9:
        return FUTILE
    last = design.looks(total)[-1].level(alpha)
    common = len(reference)
    chance = (predictive_decision(common, n, up, down, threshold, last, design.prior) if n < common else
              float(gain_decision(n, up, down, threshold, last) != INCONCLUSIVE))
    return CONTINUE if chance >= design.futility else FUTILE


@lru_cache(maxsize=16384)
def score_predictive(total: int, tasks: int, score: float, threshold: float, level: float,
                     prior: float = 0.5) -> float:
    """The posterior predictive probability that the last look (all `total` tasks, at `level`) decides whether the
    mean score reaches `threshold` (`min_score`'s exact interval), given a summed score of `score` over the first
    `tasks` (a task passing counts 1; the remaining tasks' passes are beta-binomial, Jeffreys' prior)."""
    def decided(passed: float) -> bool:
        return decide(*score_bounds(passed / total, total, level), threshold) != INCONCLUSIVE

    remaining = total - tasks
    if remaining <= 0:
        return float(decided(score))
    a, b = score + prior, max(tasks - score, 0.0) + prior
    lg = math.lgamma
    base = lg(remaining + 1) + lg(a + b) - lg(a + b + remaining) - lg(a) - lg(b)
    return sum(math.exp(base - lg(k + 1) - lg(remaining - k + 1) + lg(a + k) + lg(b + remaining - k))
               for k in range(remaining + 1) if decided(score + k))


def gates_look(design: Design, total: int, look: Look, transferred: Sequence[float], baseline: Sequence[float],
               direct: Sequence[float] | None, stopping: Stopping, alpha: float = ALPHA) -> str | None:
    """`min_score` and `min_efficiency` at an interim look, from the per-task hard scores so far (in task order):
    `CONTINUE` while either is open at the look's level and the last look would likely decide it (the predictive
    rule of the pair, probability >= `design.futility`), so the item looks on; None otherwise. Like the
    regression pair it only keeps an item looking, never stops one, so it costs no alpha.

    `min_score` is the transferred score's exact interval against the threshold. `min_efficiency` e is read as
    the paired difference (transferred - baseline) - e (direct - baseline) per task, in [-1, 1]: the efficiency
    reaches e exactly when that difference's mean is >= 0 (with a headroom above 0), so its open question is the
    pair's, tested at 0 with the pair's predictive rule (an approximation that decides only how long to look)."""
    if look.tasks >= total or not transferred:
        return None
    level, last = look.level(alpha), design.looks(total)[-1].level(alpha)
    n = len(transferred)
    if stopping.min_score is not None:
        score = sum(transferred)
        if decide(*score_bounds(score / n, n, level), stopping.min_score) == INCONCLUSIVE and score_predictive(
                total, n, round(score, 9), stopping.min_score, last, design.prior) >= design.futility:
            return CONTINUE
    if stopping.min_efficiency is not None and direct is not None and len(direct) == n:
        e = stopping.min_efficiency
        differences = [(t - b) - e * (d - b) for t, b, d in zip(transferred, baseline, direct)]
        up, down = moves(differences)
        if (gain_decision(n, up, down, 0.0, level) == INCONCLUSIVE and up + down > 1e-9
                and predictive_decision(total, n, round(up, 9), round(down, 9), 0.0, last,
                                        design.prior) >= design.futility):
            return CONTINUE
    return None


def fixed_stop(total: int) -> Stop:
    """The stop of the fixed design: one look at every task."""
    return Stop(FIXED.name, 1, 1, total, total, 1.0, LAST_LOOK)


# What a night's items are assumed to look like when a plan expects the design's saving (weight, chance a task
# moves up, chance it moves down): the mixture `benchmarks/sequential_design.py` states, noisy nulls included.
EXPECTED_MIXTURE = ((0.15, 0.0, 0.0), (0.15, 0.2, 0.2), (0.20, 0.15, 0.05), (0.20, 0.3, 0.0), (0.20, 0.9, 0.0),
                    (0.10, 0.0, 0.3))


@lru_cache(maxsize=64)
def expected_share(design_name: str, total: int, alpha: float = ALPHA) -> float:
    """The expected share of an item's `total` held-out tasks the design scores, over `EXPECTED_MIXTURE`, for an
    item tested at `alpha` (its share of the run family's): 1 for the fixed design."""
    design = DESIGNS[design_name]
    if not design.sequential or total <= 0:
        return 1.0
    expected = sum(weight * operating(design, total, up, down, (0.0,), alpha, coverage=False).expected_tasks
                   for weight, up, down in EXPECTED_MIXTURE)
    return expected / total
