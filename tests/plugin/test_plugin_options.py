"""Plugin options and ini keys: the help group, the model matrix, precedence, and usage errors."""

from __future__ import annotations

import pytest

from plugin_support import project
from pytest_skilltransfer.plugin.options import Settings
from pytest_skilltransfer.plugin.spellings import ini_name
from pytest_skilltransfer.engine.seed_data import Thresholds


def test_help_lists_the_group_with_ini_keys(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--help")
    result.stdout.fnmatch_lines([
        "skill transfer: optimize a skill on SOURCE, measure it on TARGET:",
        "*--transfer-source=MODEL*",
        "*(also --source; ini: skilltransfer_source)*",
        "*--transfer-min-gain=X*",
        "*(ini: skilltransfer_min_gain)*",
        "*--skilltransfer-json=PATH*",
        "*--transfer-record-mode=MODE*",
        "*--transfer-cassette-dir=DIR*",
    ])


def test_ini_names_follow_one_rule() -> None:
    assert ini_name("nights") == "skilltransfer_nights"
    assert ini_name("transfer-min-gain") == "skilltransfer_min_gain"
    assert ini_name("skilltransfer-json") == "skilltransfer_json"


def test_cli_matrix_is_source_times_target_plus_pairs(pytester: pytest.Pytester) -> None:
    project(pytester, seeds=("alpha",))
    result = pytester.runpytest("--co", "-q", "--source", "toy-c,toy-a", "--target", "toy-b",
                                "--pair", "toy-b:toy-a", "--pair", "toy-a:toy-b")
    assert result.ret == 0
    assert result.outlines[:3] == [
        "seeds/alpha/SKILL.md::transfer[toy-a->toy-b]",
        "seeds/alpha/SKILL.md::transfer[toy-b->toy-a]",
        "seeds/alpha/SKILL.md::transfer[toy-c->toy-b]",
    ]


def test_command_line_matrix_replaces_the_ini_matrix(pytester: pytest.Pytester) -> None:
    project(pytester, ini="skilltransfer_source = toy-a\nskilltransfer_target = toy-b toy-half\n", seeds=("alpha",))
    from_ini = pytester.runpytest("--co", "-q")
    assert from_ini.outlines[:2] == ["seeds/alpha/SKILL.md::transfer[toy-a->toy-b]", "seeds/alpha/SKILL.md::transfer[toy-a->toy-half]"]
    only_pair = pytester.runpytest("--co", "-q", "--pair", "toy-b:toy-a")
    assert only_pair.outlines[:2] == ["seeds/alpha/SKILL.md::transfer[toy-b->toy-a]", ""]
    other_source = pytester.runpytest("--co", "-q", "--source", "toy-c")  # targets still come from the ini
    assert other_source.outlines[:2] == ["seeds/alpha/SKILL.md::transfer[toy-c->toy-b]", "seeds/alpha/SKILL.md::transfer[toy-c->toy-half]"]


@pytest.mark.parametrize(("args", "ini", "message"), [
    (["--nights=0"], "", "*--nights: must be at least 1, got 0*"),
    (["--samples=two"], "", "*--samples: expected an integer, got 'two'*"),
    (["--limit-holdout=-1"], "", "*--limit-holdout: must be at least 0, got -1*"),
    (["--pair=toy-a"], "", "*--pair: expected SRC:TGT*"),
    (["--transfer-min-gain=lots"], "", "*--transfer-min-gain: expected a number or 'off', got 'lots'*"),
    (["--source=nope", "--target=toy-b"], "", "*--source/--target/--pair: unknown model 'nope'*"),
    (["--source=toy-a"], "", "*--source/--target: sources need targets*"),
    (["--record-mode=sometimes"], "", "*--record-mode: expected one of none, once, new_episodes, all*"),
    (["--local-server=maybe"], "", "*--local-server: expected auto or off, got 'maybe'*"),
    ([], "skilltransfer_edit_budget = many\n", "*skilltransfer_edit_budget: expected an integer, got 'many'*"),
    ([], "skilltransfer_no_direct = perhaps\n", "*skilltransfer_no_direct: expected true or false*"),
])
def test_bad_values_are_usage_errors_naming_the_option(pytester: pytest.Pytester, args: list[str], ini: str,
                                                       message: str) -> None:
    project(pytester, ini="skilltransfer_pair = toy-a:toy-b\n" + ini, seeds=())
    result = pytester.runpytest("--co", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_thresholds_seed_then_ini_then_marker_then_command_line() -> None:
    seed = Thresholds(min_gain=0.5, min_score=0.2, regression_tolerance=0.1)
    settings = Settings(ini_thresholds={"min_score": 0.4, "min_efficiency": 0.3, "regression_tolerance": 0.2},
                        cli_thresholds={"min_gain": None})
    merged = settings.thresholds(seed, {"min_score": 0.9, "min_gain": 0.7})
    assert merged == Thresholds(min_gain=None, min_score=0.9, min_efficiency=0.3, regression_tolerance=0.2,
                                harm_tolerance=0.0)
    off = Thresholds(harm_tolerance=None, off=("harm_tolerance",))
    assert Settings().thresholds(off).harm_tolerance is None


def test_pair_with_colon_names_uses_the_arrow() -> None:
    from pytest_skilltransfer.plugin.values import parse_pair

    assert parse_pair("openai:smollm2-135m@http://127.0.0.1:8080/v1->sim-large", "--pair") == (
        "openai:smollm2-135m@http://127.0.0.1:8080/v1", "sim-large")
    assert parse_pair("sim-small:sim-large", "--pair") == ("sim-small", "sim-large")
    with pytest.raises(pytest.UsageError, match="use -> when a name holds a colon"):
        parse_pair("anthropic:claude-haiku-5-5:sonnet", "--pair")
