"""The run's family: gates and outcome words at Bonferroni's level over the run's items, an item whose evidence is
unchanged keeps the family its snapshot records (so its verdict and words), rows and counts agree, and
byte-identical answers count once."""

from __future__ import annotations

import json

import pytest
from plugin_support import make_seed, project

from pytest_skilltransfer.evidence import stats
from pytest_skilltransfer.evidence.run_family import RunFamily, word
from pytest_skilltransfer.evidence.item_record import ItemRecord
from pytest_skilltransfer.evidence.summary import summarize

INI = "skilltransfer_pair = toy-a:toy-b\nskilltransfer_correction = bonferroni\n"


def _words(pytester: pytest.Pytester) -> dict[str, str]:
    report = json.loads((pytester.path / "r.json").read_text())
    return {r["seed"]: r["outcome"] for r in report["results"]}


def test_an_unrelated_change_leaves_every_other_row_s_words_unchanged(pytester: pytest.Pytester) -> None:
    """Three seeds of 8 tasks, every task gained (p = 0.0078): a finding among 3 (bar 0.0167). Four seeds added
    later make a family of 7 (bar 0.0071) for the new evidence only: the three keep `transfers`, the new ones say
    `undecidable at 8 tasks` (their smallest p is above the bar); changing one seed's skill re-judges it alone."""
    root = project(pytester, ini=INI, seeds=())
    for name in ("a1", "a2", "a3"):
        make_seed(root, name, tasks=8)
    pytester.runpytest("--snapshot-update", "--skilltransfer-json=r.json", "-p", "no:randomly").assert_outcomes(passed=3)
    assert _words(pytester) == {"a1": "transfers", "a2": "transfers", "a3": "transfers"}
    for name in ("b1", "b2", "b3", "b4"):
        make_seed(root, name, tasks=8)
    result = pytester.runpytest("--snapshot-update", "--skilltransfer-json=r.json", "-p", "no:randomly")
    result.assert_outcomes(passed=7)
    words = _words(pytester)
    assert {k: words[k] for k in ("a1", "a2", "a3")} == {"a1": "transfers", "a2": "transfers", "a3": "transfers"}
    assert {words[k] for k in ("b1", "b2", "b3", "b4")} == {"undecidable at 8 tasks"}
    report = json.loads((pytester.path / "r.json").read_text())
    families = {r["seed"]: r["family"]["size"] for r in report["results"]}
    assert families["a1"] == 3 and families["b1"] == 7  # a1 keeps the family its snapshot records
    gates = {r["seed"]: r["gate"]["gates"][0]["level"] for r in report["results"]}
    assert gates["a1"] == pytest.approx(1 - 0.05 / 3) and gates["b1"] == pytest.approx(1 - 0.05 / 7)
    # rows and counts agree
    summary = report["summary"]
    assert summary["outcomes"]["transfers"] == 3 and summary["undecidable"] == 4
    result.stdout.fnmatch_lines(["*of 7 (seed, pair), Bonferroni over 3/7 item(s) (FWER 5%): 3 transfer, 0 hurt, "
                                 "0 no effect shown, 4 undecidable*"])
    (root / "a2" / "SKILL.md").write_text("# a2\n\nRoute the ticket to a team, politely.\n")  # a2's evidence changes
    pytester.runpytest("--snapshot-update", "--skilltransfer-json=r.json", "-p", "no:randomly")
    after = _words(pytester)
    assert {k: v for k, v in after.items() if k != "a2"} == {k: v for k, v in words.items() if k != "a2"}
    report = json.loads((pytester.path / "r.json").read_text())
    assert next(r for r in report["results"] if r["seed"] == "a2")["family"]["size"] == 7


def test_words_read_the_family_s_level() -> None:
    eight = stats.paired_gain([0.0] * 8, [1.0] * 8).as_dict()  # every task gained: p = 0.0078
    assert word(eight, RunFamily(1)) == "transfers" and word(eight, RunFamily(6)) == "transfers"
    assert word(eight, RunFamily(7)) == "undecidable at 8 tasks"  # 0.0078 > 0.05 / 7 whatever the tasks do
    assert word(stats.paired_gain([0.0] * 6, [1.0] * 6).as_dict(), RunFamily(2)) == "undecidable at 6 tasks"
    five = [1.0] * 5 + [0.0] * 19  # 5 of 24 gained: p = 0.027, below 0.05 and above 0.05 / 2
    assert word(stats.paired_gain([0.0] * 24, five).as_dict(), RunFamily(1)) == "transfers"
    assert word(stats.paired_gain([0.0] * 24, five).as_dict(), RunFamily(2)) == "gain shown alone"
    assert word(stats.paired_gain(five, [0.0] * 24).as_dict(), RunFamily(2)) == "harm shown alone"
    assert word(stats.paired_gain([0.0] * 24, [0.0] * 24).as_dict(), RunFamily(40)) == "no effect shown"


def test_byte_identical_answers_count_once() -> None:
    gain = stats.paired_gain([0.0] * 24, [1.0] * 24).as_dict()
    family = RunFamily(2).as_dict()
    records = [ItemRecord.from_json({"seed": "s", "source": "a", "target": target, "baseline_target": 0.0,
                                     "transferred": 1.0, "gain": gain, "outcome": "transfers", "family": family,
                                     "evidence": {"answers": "same"}, "cost": {}}) for target in ("m", "m-wire2")]
    summary = summarize(records)
    assert summary["hypotheses"] == 1 and summary["outcomes"]["transfers"] == 1
    assert summary["family"]["same_answers"] == 1
    assert [i["counted"] for i in summary["items"]] == [True, False]
    assert [p["transfers"] for p in summary["pairs"]] == [1, 1]  # each pair's rows still count their own
