"""Collection: item ids and order, path and --seeds-dir selection, -k/-m/--lf, and a broken seed."""

from __future__ import annotations

import pytest

from plugin_support import break_seed, make_seed, project

MATRIX = "skilltransfer_source = toy-a\nskilltransfer_target = toy-b toy-half\n"


def test_ids_are_readable_and_sorted(pytester: pytest.Pytester) -> None:
    project(pytester, ini=MATRIX, seeds=("beta", "alpha"))
    result = pytester.runpytest("--co", "-q")
    assert result.outlines[:4] == [
        "seeds/alpha/SKILL.md::transfer[toy-a->toy-b]",
        "seeds/alpha/SKILL.md::transfer[toy-a->toy-half]",
        "seeds/beta/SKILL.md::transfer[toy-a->toy-b]",
        "seeds/beta/SKILL.md::transfer[toy-a->toy-half]",
    ]


def test_paths_select_seeds_like_test_files(pytester: pytest.Pytester) -> None:
    project(pytester, ini=MATRIX)
    result = pytester.runpytest("--co", "-q", "seeds/beta")
    assert result.outlines[:3] == ["seeds/beta/SKILL.md::transfer[toy-a->toy-b]", "seeds/beta/SKILL.md::transfer[toy-a->toy-half]", ""]


def test_seeds_dir_adds_a_gbrain_style_folder(pytester: pytest.Pytester) -> None:
    project(pytester, ini=MATRIX, seeds=("alpha",))
    make_seed(pytester.path / "eval" / "data" / "skillopt-v1", "seed-verbose")
    result = pytester.runpytest("--co", "-q", "seeds", "--seeds-dir", "eval/data/skillopt-v1", "--target", "toy-b")
    assert result.outlines[:2] == [
        "seeds/alpha/SKILL.md::transfer[toy-a->toy-b]",
        "eval/data/skillopt-v1/seed-verbose/SKILL.md::transfer[toy-a->toy-b]",
    ]


def test_keyword_and_marker_selection(pytester: pytest.Pytester) -> None:
    project(pytester, ini=MATRIX)
    pytester.makepyfile(test_unit="def test_plain(): pass")
    by_keyword = pytester.runpytest("--co", "-q", "-k", "beta and half")
    assert by_keyword.outlines[0] == "seeds/beta/SKILL.md::transfer[toy-a->toy-half]"
    by_marker = pytester.runpytest("--co", "-q", "-m", "not skilltransfer")
    assert by_marker.outlines[0] == "test_unit.py::test_plain"


def test_a_plain_skill_folder_is_not_a_seed(pytester: pytest.Pytester) -> None:
    project(pytester, ini=MATRIX, seeds=("alpha",))
    (pytester.path / "skills" / "writer").mkdir(parents=True)
    (pytester.path / "skills" / "writer" / "SKILL.md").write_text("# Writer\n")
    result = pytester.runpytest("--co", "-q")
    assert result.parseoutcomes() == {"tests": 2}


def test_no_models_configured_is_a_clear_collection_error(pytester: pytest.Pytester) -> None:
    project(pytester, seeds=("alpha",))
    result = pytester.runpytest("--co")
    result.stdout.fnmatch_lines(["*seed alpha: no models to run; pass --source and --target*"])


def test_broken_seed_errors_alone_and_the_others_run(pytester: pytest.Pytester) -> None:
    project(pytester, ini=MATRIX)
    break_seed(pytester.path / "seeds", "broken")
    result = pytester.runpytest_subprocess("--snapshot-update", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines([
        "*ERROR collecting seeds/broken*",
        "seed */seeds/broken is invalid (1 problem(s)):",
        "  */seeds/broken/held-out.jsonl:5: malformed JSON*",
    ])
    result.assert_outcomes(passed=4, errors=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    distributed = pytester.runpytest_subprocess("-n", "2", "-p", "no:cacheprovider")
    distributed.assert_outcomes(passed=4, errors=1)
    assert distributed.ret == pytest.ExitCode.TESTS_FAILED


def test_last_failed_reruns_only_the_failing_pair(pytester: pytest.Pytester) -> None:
    project(pytester, ini=MATRIX + "skilltransfer_min_score = 0.9\n", seeds=())
    make_seed(pytester.path / "seeds", "alpha", tasks=40)
    first = pytester.runpytest_subprocess("--snapshot-update")
    first.assert_outcomes(passed=1, failed=1)
    again = pytester.runpytest_subprocess("--lf", "-q", "--snapshot-warn-unused")
    again.assert_outcomes(failed=1)  # the passing pair is not even collected, as for a test file
    assert any(line.startswith("FAILED seeds/alpha/SKILL.md::transfer[toy-a->toy-half]") for line in again.outlines)


def test_seed_toml_pairs_join_the_configured_matrix_only(pytester: pytest.Pytester) -> None:
    project(pytester, ini="skilltransfer_pair = toy-a:toy-b\n", seeds=("alpha", "beta"))
    (pytester.path / "seeds" / "beta" / "seed.toml").write_text('pairs = ["toy-a->toy-half"]\n')
    configured = pytester.runpytest("--co", "-q")
    assert configured.outlines[:3] == [
        "seeds/alpha/SKILL.md::transfer[toy-a->toy-b]",
        "seeds/beta/SKILL.md::transfer[toy-a->toy-b]",
        "seeds/beta/SKILL.md::transfer[toy-a->toy-half]",
    ]
    named = pytester.runpytest("--co", "-q", "--pair", "toy-b:toy-a")
    assert named.outlines[:2] == ["seeds/alpha/SKILL.md::transfer[toy-b->toy-a]", "seeds/beta/SKILL.md::transfer[toy-b->toy-a]"]


def test_seed_toml_pair_with_unknown_model_is_that_seeds_collection_error(pytester: pytest.Pytester) -> None:
    project(pytester, ini="skilltransfer_pair = toy-a:toy-b\n", seeds=("alpha", "beta"))
    (pytester.path / "seeds" / "beta" / "seed.toml").write_text('pairs = ["toy-a:nope"]\n')
    result = pytester.runpytest("-q", "--snapshot-update")
    result.stdout.fnmatch_lines(["*seed.toml pairs: unknown model 'nope'*"])
    assert "1 passed" in result.stdout.str() and "1 error" in result.stdout.str()


def test_k_selects_one_direction_by_its_keyword(pytester: pytest.Pytester) -> None:
    project(pytester, ini="skilltransfer_pair = toy-a:toy-b toy-b:toy-a\n", seeds=("alpha",))
    result = pytester.runpytest("--co", "-q", "-k", "toy-b_to_toy-a")
    assert result.outlines[:2] == ["seeds/alpha/SKILL.md::transfer[toy-b->toy-a]", ""]


def test_items_carry_a_marker_per_model_kind(pytester: pytest.Pytester) -> None:
    project(pytester, ini="skilltransfer_pair = toy-a:toy-b toy-a:loop toy-a:haiku\n", seeds=("alpha",))
    pytester.makepyprojecttoml('''
        [tool.skilltransfer.models]
        loop = "anthropic:fake-model@http://127.0.0.1:9"
    ''')
    offline = pytester.runpytest("--co", "-q", "-m", "not cloud")
    assert offline.outlines[:3] == ["seeds/alpha/SKILL.md::transfer[toy-a->loop]",
                                    "seeds/alpha/SKILL.md::transfer[toy-a->toy-b]", ""]
    local = pytester.runpytest("--co", "-q", "-m", "local")
    assert local.outlines[:2] == ["seeds/alpha/SKILL.md::transfer[toy-a->loop]", ""]
    only_simulated = pytester.runpytest("--co", "-q", "-m", "simulated and not local and not cloud", "--strict-markers")
    assert only_simulated.outlines[:2] == ["seeds/alpha/SKILL.md::transfer[toy-a->toy-b]", ""]
