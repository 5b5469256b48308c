"""Decidability up front: an item whose smallest attainable p-value cannot pass the run family's bar (Bonferroni)
says so once at collection and in --plan, with the number of held-out tasks that could; its row says
`undecidable at n tasks` and the summary counts it apart."""

from __future__ import annotations

import json
import random

import pytest
from plugin_support import make_seed, project

from pytest_skilltransfer.evidence.decidability import reachable, smallest_p, unreachable

ALPHA = 0.05


def test_six_tasks_have_a_smallest_p_of_one_in_thirty_two() -> None:
    assert smallest_p(6) == pytest.approx(2 / 2 ** 6)
    assert smallest_p(24) < 1e-6 and smallest_p(24, restarts=5) > smallest_p(24)


def test_the_issue_case_and_what_the_bar_allows() -> None:
    assert unreachable([6] * 5, [1] * 5) == {i: 8 for i in range(5)}  # five unseen good seeds of 6 tasks
    assert unreachable([6], [1]) == {}  # alone, 0.031 <= 0.05
    assert unreachable([24, 6], [1, 1]) == {1: 7}  # the bar is 0.025 whatever the other item shows
    assert unreachable([24] * 32 + [6] * 3, [1] * 35) == {32: 11, 33: 11, 34: 11}
    assert unreachable([24, 24], [5, 5]) == {0: 27, 1: 27}  # five restarts' bound needs more tasks


def test_the_smallest_p_value_falls_as_units_are_added_so_the_units_needed_are_the_first_that_reach() -> None:
    """`units_to_reach` bisects: it relies on each added unit lowering the smallest p-value, with and without
    restarts; a scan from the item's own units finds the same count."""
    for restarts, start, family in ((1, 4, 40), (5, 20, 2), (5, 20, 3)):
        ladder = [smallest_p(n, restarts) for n in range(start, start + 13)]
        assert ladder == sorted(ladder, reverse=True)
        scanned = next(start + i for i, p in enumerate(ladder) if p <= ALPHA / family + 1e-9)
        units = [start] + [400] * (family - 1)
        assert unreachable(units, [restarts] * family)[0] == scanned


def test_an_unreachable_item_is_never_a_finding_and_a_reachable_one_can_be() -> None:
    """Property over random families: no p-value at or above an unreachable item's smallest one passes the
    Bonferroni bar; a reachable item at its smallest p-value does."""
    rng = random.Random(32)
    for _ in range(300):
        units = [rng.choice((4, 5, 6, 7, 8, 9, 24)) for _ in range(rng.randint(1, 7))]
        floor = [smallest_p(n) for n in units]
        bar = ALPHA / len(units)
        for index in range(len(units)):
            if not reachable(index, floor):
                assert all(rng.uniform(floor[index], 1.0) > bar for _ in range(20)) and floor[index] > bar
            else:
                assert floor[index] <= bar + 1e-12


def test_a_run_of_three_six_task_seeds_says_so_once_per_item_and_counts_them_apart(pytester: pytest.Pytester) -> None:
    project(pytester, ini="skilltransfer_pair = toy-a:toy-b\nskilltransfer_correction = bonferroni\n", seeds=())
    for name in ("alpha", "beta", "gamma"):
        make_seed(pytester.path / "seeds", name, tasks=6)
    result = pytester.runpytest_subprocess("--snapshot-update", "--skilltransfer-json=r.json", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)
    text = result.stdout.str()
    for name in ("alpha", "beta", "gamma"):
        assert text.count(f"seeds/{name}/SKILL.md::transfer[toy-a->toy-b]: its smallest possible p-value, 0.0312 "
                          "with 6 held-out task(s), cannot pass the bar 0.05 / 3 of this run's family") == 1
    assert "7 held-out task(s) would let it" in text
    result.stdout.fnmatch_lines(["*of 3 (seed, pair), Bonferroni over 3 item(s) (FWER 5%): 0 transfer, 0 hurt, "
                                 "0 no effect shown, 3 undecidable (too few held-out units for any finding at the "
                                 "family's level)*"])
    assert text.count("undecidable at 6 tasks") == 3  # each row says it, and the count is the rows'
    summary = json.loads((pytester.path / "r.json").read_text())["summary"]
    assert summary["undecidable"] == 3 and summary["outcomes"]["no effect shown"] == 0
    assert [i["outcome"] for i in summary["items"]] == ["undecidable at 6 tasks"] * 3

    plan = pytester.runpytest_subprocess("--plan", "-p", "no:cacheprovider")
    plan.stdout.fnmatch_lines(["decidability: 3 of this run's 3 item(s) can never be a finding of its family (Bonferroni):",
                               "  seeds/alpha/SKILL.md::transfer[[]toy-a->toy-b[]]: its smallest possible p-value*"])
    assert "PytestWarning: seeds/alpha/SKILL.md" not in plan.stdout.str()  # said once: in the plan, not as a warning

    alone = pytester.runpytest_subprocess("seeds/alpha", "-p", "no:cacheprovider")
    # alone, the item's evidence is unchanged: it keeps the family its snapshot records, and so its words
    assert "cannot pass the bar" not in alone.stdout.str() and "undecidable at 6 tasks" in alone.stdout.str()
    assert "Bonferroni over 3 item(s) (FWER 5%)" in alone.stdout.str()
