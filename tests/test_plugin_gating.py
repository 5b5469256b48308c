"""Gates and the failure diagnosis, for auto-collected items and hand-written tests alike."""

from __future__ import annotations

import pytest

from plugin_support import make_seed, project

MATRIX = "skilltransfer_source = toy-a\nskilltransfer_target = toy-b toy-half\n"


def test_seed_threshold_fails_one_pair_with_a_diagnosis(pytester: pytest.Pytester) -> None:
    project(pytester, ini=MATRIX, seeds=("alpha",))
    make_seed(pytester.path / "seeds", "beta", thresholds={"min_gain": 0.6})
    result = pytester.runpytest_subprocess("--snapshot-update")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines([
        "*_ beta::transfer?toy-a->toy-half? _*",
        "skill transfer failed for beta (toy-a -> toy-half):",
        "  FAILED gain +0.500 is below min_gain +0.600",
        "scores on toy-half (held-out):",
        "                hard  95% CI         soft",
        "  baseline      0.00  ?0.00, 0.00?   0.50",
        "  transferred   0.50  ?0.00, 1.00?   0.75",
        "  gain +0.50 ?+0.00, +1.00? over 4 task(s); efficiency *",
        "held-out tasks failing on toy-half with the learned skill:",
        "  hd-01 (hard 0.00): Route ticket 1",
        "      misses: contains=Owner:",
        "  hd-03 (hard 0.00): Route ticket 3",
        "learned skill vs seed skill:",
        "  --- seed SKILL.md",
        "  +++ learned skill",
        "  +- OWNER-LINE: end every answer with `Owner: @team`.",
        "edits per night (+ accepted, - rejected, x not applied):",
        "  optimized on toy-a (optimizer toy-a):",
        "    night 1: val 0.25 -> 1.00, accepted",
        "      + add: OWNER-LINE: end every answer with `Owner: @team`.",
        "  direct reference, optimized on toy-half (optimizer toy-half):",
        "    night 1: val 0.25 -> 0.25, rejected",
        "      - add: OWNER-LINE*",
    ])


def test_command_line_overrides_and_disables_seed_thresholds(pytester: pytest.Pytester) -> None:
    project(pytester, ini=MATRIX, seeds=())
    make_seed(pytester.path / "seeds", "beta", thresholds={"min_gain": 0.6})
    pytester.runpytest_subprocess("--snapshot-update", "--transfer-min-gain=off").assert_outcomes(passed=2)
    strict = pytester.runpytest_subprocess("--transfer-min-score=0.9", "--transfer-min-efficiency=2")
    strict.assert_outcomes(passed=0, failed=2)
    strict.stdout.fnmatch_lines([
        "*FAILED efficiency 1.000 is below min_efficiency 2.000",
        "*FAILED transferred score 0.500 is below min_score 0.900",
        "*note: min_efficiency gate skipped: efficiency is undefined (direct did not beat the baseline)",
    ], consecutive=False)


def test_samples_above_one_gate_on_the_lower_bound(pytester: pytest.Pytester) -> None:
    project(pytester, ini="skilltransfer_pair = toy-a:toy-half\n", seeds=("alpha",))
    result = pytester.runpytest_subprocess("--snapshot-update", "--samples=2", "--transfer-min-gain=0.25")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "  FAILED gain +0.000 (lower 95% bound, samples > 1) is below min_gain +0.250",
        "  note: gain and score gates use the lower 95% bound because samples > 1",
    ])


def test_hand_written_test_runs_per_pair_through_the_same_fixture(pytester: pytest.Pytester) -> None:
    project(pytester, ini=MATRIX, seeds=("alpha",))
    pytester.makepyfile(test_mine='''
        import pytest

        @pytest.mark.skilltransfer(seed="seeds/alpha", min_score=0.9)
        def test_alpha_transfers(transfer_result, transfer_pair):
            assert transfer_result.source == transfer_pair[0] == "toy-a"
            assert "OWNER-LINE" in transfer_result.learned.learned_skill

        @pytest.mark.skilltransfer(seed="seeds/alpha", source="toy-b", target="toy-a")
        def test_reverse(transfer_result):
            assert transfer_result.transferred.hard.mean == 1.0
    ''')
    result = pytester.runpytest_subprocess("test_mine.py", "-v", "--snapshot-update")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines([
        "test_mine.py::test_alpha_transfers?toy-a->toy-b? PASSED*",
        "test_mine.py::test_alpha_transfers?toy-a->toy-half? FAILED*",
        "test_mine.py::test_reverse PASSED*",
        "*FAILED transferred score 0.500 is below min_score 0.900",
    ], consecutive=False)
    assert (pytester.path / "__snapshots__" / "test_mine" / "test_reverse.md").is_file()


def test_verbose_prints_a_line_per_night(pytester: pytest.Pytester) -> None:
    project(pytester, ini="skilltransfer_pair = toy-a:toy-b\n", seeds=("alpha",))
    result = pytester.runpytest_subprocess("-v", "--snapshot-update", "--no-direct")
    result.stdout.fnmatch_lines([
        "seeds/alpha/SKILL.md::transfer?toy-a->toy-b? ",
        "  alpha: baseline on toy-b",
        "  alpha: optimize on toy-a (optimizer toy-a): night 1: val 0.25 -> 1.00, 1 edit(s) accepted",
        "  alpha: transferred skill on toy-b",
        "seeds/alpha/SKILL.md::transfer?toy-a->toy-b? PASSED*",
    ])
