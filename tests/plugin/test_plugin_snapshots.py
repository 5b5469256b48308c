"""Snapshots: creation, match, mismatch, update, the regression gate, and unused detection vs selection."""

from __future__ import annotations

import re

import pytest

from plugin_support import make_seed, project

MATRIX = "skilltransfer_source = toy-a\nskilltransfer_target = toy-b toy-half\n"


def _snapshot(pytester: pytest.Pytester, seed: str, pair: str) -> str:
    return (pytester.path / "seeds" / seed / "__snapshots__" / f"transfer[{pair}].md").read_text()


def test_snapshot_is_created_matched_flagged_and_updated(pytester: pytest.Pytester,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # the short test summary lines in full
    project(pytester, ini=MATRIX, seeds=("alpha",))
    missing = pytester.runpytest_subprocess()
    missing.assert_outcomes(failed=2)
    missing.stdout.fnmatch_lines(["  no snapshot at seeds/alpha/__snapshots__/transfer?toy-a_to_toy-b?.md; "
                                  "run with --snapshot-update to write it"])

    pytester.runpytest_subprocess("--snapshot-update").assert_outcomes(passed=2)
    text = _snapshot(pytester, "alpha", "toy-a_to_toy-half")
    assert text.startswith("# alpha: toy-a -> toy-half\n")
    assert "| transferred | 0.500 | [0.068, 0.932] | 0.750 |" in text
    assert "- night 1: val 0.250 -> 1.000, accepted\n  - add: OWNER-LINE" in text
    assert "## Learned skill\n\n````markdown\n# alpha\n" in text

    skill = pytester.path / "seeds" / "alpha" / "SKILL.md"
    skill.write_text(skill.read_text() + "Be brief.\n")
    changed = pytester.runpytest_subprocess()
    changed.assert_outcomes(failed=2)
    changed.stdout.fnmatch_lines([
        "snapshot mismatch (accept once reviewed: pytest 'seeds/alpha/SKILL.md::transfer[[]toy-a->toy-b[]]' "
        "--transfer-pair 'toy-a->toy-b' --snapshot-update):",
        "  seeds/alpha/__snapshots__/transfer?toy-a_to_toy-b?.md differs: scores unchanged; skill +1/-0 lines",
        "  --- committed snapshot",
        "  +++ this run",
        "  +Be brief.",
    ])
    changed.stdout.fnmatch_lines(["FAILED seeds/alpha/SKILL.md::transfer?toy-a->toy-b? - snapshot differs, scores "
                                  "unchanged; skill +1/-0 lines"])
    pytester.runpytest_subprocess("--snapshot-update").assert_outcomes(passed=2)
    assert "Be brief." in _snapshot(pytester, "alpha", "toy-a_to_toy-b")

    for committed, kind in (("0.250", "improvement"), ("0.750", "regression")):
        path = pytester.path / "seeds" / "alpha" / "__snapshots__" / "transfer[toy-a_to_toy-half].md"
        text = path.read_text()
        path.write_text(re.sub(r"\| transferred \| [0-9.]+ \|", f"| transferred | {committed} |", text))
        moved = pytester.runpytest_subprocess("-rf", "--transfer-regression-tolerance=off", "-k", "half")
        moved.assert_outcomes(failed=1)
        moved.stdout.fnmatch_lines([f"FAILED *toy-half? - snapshot differs, {kind}: transferred {committed} -> 0.500; "
                                    "skill unchanged"])


def test_regression_gate_compares_per_task_with_the_committed_snapshot(pytester: pytest.Pytester) -> None:
    project(pytester, ini="skilltransfer_pair = toy-a:toy-half\n", seeds=())
    make_seed(pytester.path / "seeds", "alpha", tasks=30)
    pytester.runpytest_subprocess("--snapshot-update").assert_outcomes(passed=1)
    path = pytester.path / "seeds" / "alpha" / "__snapshots__" / "transfer[toy-a_to_toy-half].md"
    text = path.read_text()
    line = next(x for x in text.splitlines() if x.startswith("- transferred per task: "))
    assert line.startswith("- transferred per task: `hd-00=1 hd-01=0 hd-02=1 ")
    path.write_text(text.replace(line, line.replace("=0", "=1")))  # the committed run passed every task
    beyond = pytester.runpytest_subprocess("--transfer-regression-tolerance=0.1")
    beyond.assert_outcomes(failed=1)
    beyond.stdout.fnmatch_lines(["  FAILED regression: transferred change -0.500 ?-0.687, -0.307? over 30 common task(s) "
                                 "vs the committed snapshot (p = 7.1e-05, tolerance 0.100); the drop is beyond the "
                                 "tolerance; run with --snapshot-update to accept"])
    within = pytester.runpytest_subprocess("--transfer-regression-tolerance=0.9")
    assert "FAILED regression" not in within.stdout.str()


def test_selections_and_matrix_changes_never_flag_snapshots_unused(pytester: pytest.Pytester) -> None:
    project(pytester, ini=MATRIX)
    pytester.makepyfile(test_plain="def test_plain(snapshot):\n    assert 'plain' == snapshot\n")
    pytester.runpytest_subprocess("--snapshot-update").assert_outcomes(passed=5)
    runs = (["--target", "toy-b"], ["-k", "alpha", "--snapshot-update"],
            ["seeds/beta", "-n", "2", "--target", "toy-half", "--snapshot-update"])
    for args in runs:
        result = pytester.runpytest_subprocess(*args)
        assert result.ret == 0, args
        assert not re.search(r"unused snapshot|snapshots? unused", result.stdout.str()), args
    assert len(list((pytester.path / "seeds").glob("*/__snapshots__/*.md"))) == 4
