"""Gates and the failure diagnosis, for auto-collected items and hand-written tests alike."""

from __future__ import annotations

import json

import pytest

from plugin_support import make_seed, project

MATRIX = "skilltransfer_source = toy-a\nskilltransfer_target = toy-b toy-half\n"


def test_seed_threshold_fails_one_pair_with_a_diagnosis(pytester: pytest.Pytester) -> None:
    project(pytester, ini=MATRIX, seeds=("alpha",))
    make_seed(pytester.path / "seeds", "beta", thresholds={"min_gain": 0.8}, tasks=40)
    result = pytester.runpytest_subprocess("--snapshot-update")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines([
        "*_ beta::transfer?toy-a->toy-half? _*",
        "skill transfer failed for beta (toy-a -> toy-half):",
        "  FAILED gain +0.500 ?+0.*, +0.6*? (95% CI, 40 task(s), p = 2.53e-06) is below min_gain +0.800",
        "  note: at a true gain of +0.90, passing min_gain +0.80 with 80% power needs 106 held-out tasks *",
        "scores on toy-half (held-out):",
        "                hard  95% CI         soft",
        "  baseline      0.00  ?0.00, 0.09?   0.50",
        "  transferred   0.50  ?0.34, 0.66?   0.75",
        "  gain +0.50 ?+0.*, +0.6*? over 40 task(s), p = <.001 (20 improved, 0 worse, 20 tied), "
        "minimal detectable gain 0.13; efficiency 1.00 ?0.46, 2.17?",
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
        "    night 1: val 0.25 -> 0.62, accepted",
        "      + add: OWNER-LINE*",
    ])


def test_command_line_overrides_and_disables_seed_thresholds(pytester: pytest.Pytester) -> None:
    project(pytester, ini=MATRIX, seeds=())
    make_seed(pytester.path / "seeds", "beta", thresholds={"min_gain": 0.8}, tasks=40)
    pytester.runpytest_subprocess("--snapshot-update", "--transfer-min-gain=off").assert_outcomes(passed=2)
    strict = pytester.runpytest_subprocess("--transfer-min-score=0.9", "--transfer-min-efficiency=2")
    strict.assert_outcomes(passed=0, failed=2)
    strict.stdout.fnmatch_lines([
        "*FAILED efficiency 1.000 ?0.*, 1.*? is below min_efficiency 2.000",
        "*FAILED transferred score 0.500 ?0.338, 0.662? (95% CI, 40 task(s)) is below min_score 0.900",
        "*INCONCLUSIVE efficiency 1.000 ?0.460, 2.175? neither shows min_efficiency 2.000 nor rules it out",
    ], consecutive=False)


@pytest.mark.subprocess  # the warnings a process prints once
def test_an_inconclusive_gate_fails_by_default_and_says_what_would_decide_it(pytester: pytest.Pytester) -> None:
    project(pytester, ini="skilltransfer_pair = toy-a:toy-b\n", seeds=())
    make_seed(pytester.path / "seeds", "small", thresholds={"min_gain": 0.5}, tasks=3)
    result = pytester.runpytest_subprocess("--snapshot-update", "--skilltransfer-json=r.json")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "skill transfer inconclusive for small (toy-a -> toy-b):",
        "  INCONCLUSIVE gain +1.000 ?-0.415, +1.000? (95% CI, 3 task(s), p = 0.25) neither shows min_gain +0.500 "
        "nor rules it out; the same per-task result over 13 held-out task(s) (now 3) would decide it; "
        "more samples per task narrow it only by averaging out noisy tasks' sampling noise, never past what the "
        "units themselves show",
    ])
    gate = json.loads((pytester.path / "r.json").read_text())["results"][0]["gate"]
    assert gate["verdict"] == "inconclusive" and gate["gates"][0]["tasks_to_decide"] == 13
    xfailed = pytester.runpytest_subprocess("--transfer-inconclusive=xfail")
    xfailed.assert_outcomes(xfailed=1)
    pytester.makeini("[pytest]\nskilltransfer_limit_replay = 0\nskilltransfer_limit_holdout = 0\n"
                     "skilltransfer_pair = toy-a:toy-b\nskilltransfer_inconclusive = pass\n"
                     "skilltransfer_correction = none\nskilltransfer_design = fixed\n")  # the same settings
    passed = pytester.runpytest_subprocess()
    # (and: 3 held-out tasks can never decide; the same format-only checks on every task)
    passed.assert_outcomes(passed=1, warnings=3)
    passed.stdout.fnmatch_lines(["*PytestWarning: *inconclusive: gain +1.000*"])
    bad = pytester.runpytest_subprocess("--transfer-inconclusive=maybe")
    bad.stderr.fnmatch_lines(["*--transfer-inconclusive: expected one of fail, xfail, pass, got 'maybe'*"])


def test_more_samples_with_unchanged_outcomes_keep_every_verdict(pytester: pytest.Pytester) -> None:
    project(pytester, ini=MATRIX, seeds=())
    make_seed(pytester.path / "seeds", "beta", tasks=12)
    verdicts = {}
    for samples in ("1", "3"):
        pytester.runpytest_subprocess("--snapshot-update", f"--samples={samples}", "--transfer-min-gain=0.25",
                                      "--transfer-min-score=0.5", f"--skilltransfer-json={samples}.json")
        report = json.loads((pytester.path / f"{samples}.json").read_text())
        verdicts[samples] = [(r["target"], [(g["gate"], g["verdict"], g["ci_low"], g["ci_high"])
                                            for g in r["gate"]["gates"]]) for r in report["results"]]
    assert verdicts["1"] == verdicts["3"]
    assert {v for _, gates in verdicts["1"] for _, v, _, _ in gates} == {"pass", "inconclusive"}


def test_hand_written_test_runs_per_pair_through_the_same_fixture(pytester: pytest.Pytester) -> None:
    project(pytester, ini=MATRIX, seeds=())
    make_seed(pytester.path / "seeds", "alpha", tasks=40)
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
        "*FAILED transferred score 0.500 ?0.338, 0.662? (95% CI, 40 task(s)) is below min_score 0.900",
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


def test_short_summary_has_one_line_per_failure_reason_first(pytester: pytest.Pytester,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")  # pytest prints the whole message on CI: it must be one line anyway
    project(pytester, ini="skilltransfer_source = toy-a\nskilltransfer_target = toy-half toy-stubborn\n", seeds=())
    for name in ("alpha", "beta", "gamma"):
        make_seed(pytester.path / "seeds", name, thresholds={"min_gain": 0.8}, tasks=40)
    result = pytester.runpytest_subprocess("--snapshot-update", "-rf")
    result.assert_outcomes(failed=6)
    lines = result.stdout.lines
    start = next(i for i, line in enumerate(lines) if "short test summary info" in line)
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("="))
    summary = lines[start + 1:end]
    assert len(summary) == 6, summary
    assert all(line.startswith("FAILED seeds/") and " - gain +" in line and "below min_gain +0.80" in line
               for line in summary), summary
    assert summary[0].startswith("FAILED seeds/alpha/SKILL.md::transfer[toy-a->toy-half] - gain +0.50 [")
    result.stdout.fnmatch_lines(["  FAILED gain +0.500 *is below min_gain +0.800", "learned skill vs seed skill:"])


HARM = "skilltransfer_source = toy-a\nskilltransfer_target = toy-contrary\n"


def test_harm_fails_by_default_naming_the_tasks_the_checks_and_the_learned_lines(pytester: pytest.Pytester) -> None:
    project(pytester, ini=HARM, seeds=())
    make_seed(pytester.path / "seeds", "harmful", tasks=12)
    result = pytester.runpytest_subprocess("--snapshot-update", "--skilltransfer-json=out.json")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "skill transfer failed for harmful (toy-a -> toy-contrary):",
        "  FAILED harm: the learned skill makes toy-contrary worse than its own baseline: gain -1.000 *"
        "12 of 12 held-out task(s) got worse*",
        "held-out tasks worse on toy-contrary with the learned skill than with the seed's (12), "
        "and the checks they now miss:",
        "  hd-00 (hard 1.00 -> 0.00): Route ticket 0",
        "      now misses: max_chars=80",
        "learned lines accepted on toy-a (the nights that added them):",
        "  night 1: add: OWNER-LINE*",
    ])
    result.stdout.fnmatch_lines(["*harmful*-1.00 ?-1.00, -0.*?*hurts*fail*"])
    report = json.loads((pytester.path / "out.json").read_text())["results"][0]
    assert report["outcome"] == "hurts"
    assert report["gate"]["verdict"] == "fail" and report["gate"]["label"] == "fail"
    assert [g["gate"] for g in report["gate"]["gates"]] == ["harm_tolerance"]


@pytest.mark.parametrize("off", [("--transfer-harm-tolerance=off",), ()])
def test_the_harm_gate_turns_off_from_the_command_line_or_seed_toml(pytester: pytest.Pytester, off: tuple) -> None:
    project(pytester, ini=HARM, seeds=())
    make_seed(pytester.path / "seeds", "harmful", tasks=12,
              thresholds=None if off else {"harm_tolerance": "off"})
    result = pytester.runpytest_subprocess("--snapshot-update", *off)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*harmful*-1.00 ?-1.00, -0.*?*hurts*no gate*"])


def test_a_declared_harm_passes_and_a_changed_outcome_fails(pytester: pytest.Pytester,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "400")  # the short summary line is cut at the terminal's width
    project(pytester, ini="skilltransfer_source = toy-a\nskilltransfer_target = toy-contrary toy-b\n", seeds=())
    make_seed(pytester.path / "seeds", "harmful", tasks=12, expect="hurts")
    result = pytester.runpytest_subprocess("--snapshot-update")
    result.assert_outcomes(passed=1, failed=1)  # toy-b is helped, not hurt: the declared outcome fails there
    result.stdout.fnmatch_lines([
        "*FAILED seed.toml declares 'hurts' for toy-a -> toy-b but the run shows 'transfers': *",
    ])
    result.stdout.fnmatch_lines([  # the short summary line names the declared and the measured outcome
        "FAILED seeds/harmful/SKILL.md::transfer?toy-a->toy-b? - seed.toml declares 'hurts' for toy-a -> toy-b "
        "but the run shows 'transfers': gain +* (95% CI, 12 task(s))"])
    result.stdout.fnmatch_lines(["*harmful*-1.00 ?-1.00, -0.*?*hurts*pass*"])
    per_pair = pytester.path / "seeds" / "harmful" / "seed.toml"
    per_pair.write_text('[expect]\n"toy-a->toy-contrary" = "hurts"\n"*" = "transfers"\n')
    pytester.runpytest_subprocess().assert_outcomes(passed=2)


def test_a_bad_declared_outcome_is_a_seed_error(pytester: pytest.Pytester) -> None:
    project(pytester, ini=HARM, seeds=())
    make_seed(pytester.path / "seeds", "harmful", expect={"toy-a->toy-contrary": "harms"})
    result = pytester.runpytest_subprocess("--co")
    result.stdout.fnmatch_lines(["*seed.toml expect*'toy-a->toy-contrary': the outcome must be one of "
                                 "'transfers', 'hurts', 'no effect shown', got 'harms'*"])


def test_a_noninferiority_margin_puts_the_burden_of_proof_on_safety(pytester: pytest.Pytester) -> None:
    project(pytester, ini="skilltransfer_source = toy-a\nskilltransfer_target = toy-stubborn toy-b\n", seeds=())
    make_seed(pytester.path / "seeds", "alpha", tasks=6, thresholds={"noninferiority_margin": 0.1})
    result = pytester.runpytest_subprocess("--snapshot-update")
    result.assert_outcomes(passed=1, failed=1)  # 6 tied tasks cannot show the gain is above -0.1
    result.stdout.fnmatch_lines(["*INCONCLUSIVE gain +0.000 * does not show non-inferiority within 0.100*"])
