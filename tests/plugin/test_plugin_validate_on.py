"""`--validate-on` through pytest: option, ini key and seed.toml key with their precedence, the comparison row,
usage errors, and against a loopback provider: the plan's bound per model, the extra cost, offline replay."""

from __future__ import annotations

import json
import re
import shutil

import pytest
from fake_provider import FakeProvider
from plugin_support import copy_project_seed, loopback_project, make_seed, project

from pytest_skilltransfer.evidence.item_record import ItemRecord
from pytest_skilltransfer.reports.result_json import IN_SAMPLE

PORTABLE_HEADING = "portable skills (--validate-on)*"


def _portable(pytester: pytest.Pytester) -> list[dict]:
    report = json.loads((pytester.path / "r.json").read_text())
    return [r.get("portable") for r in report["results"]]


def test_the_harmed_target_listed_keeps_the_harmful_edit_out(pytester: pytest.Pytester) -> None:
    root = project(pytester, seeds=())
    make_seed(root, "alpha", tasks=12)
    result = pytester.runpytest("--pair=toy-small:toy-contrary", "--validate-on=toy-contrary", "-v",
                                "--skilltransfer-json=r.json", "--no-snapshots", "-p", "no:randomly",
                                "--transfer-harm-tolerance=off", "--skilltransfer-md=r.md")
    assert result.ret == 0, result.stdout.str()
    markdown = (pytester.path / "r.md").read_text()
    # the target itself is the validation model: the comparison is in sample, and the run says so instead of a claim
    assert "## Portable skills (--validate-on)" in markdown and f"| {IN_SAMPLE} |" in markdown
    assert "--validate-on names the target toy-contrary" in result.stdout.str()
    result.stdout.fnmatch_lines([
        "*validated on toy-contrary: night 1: val 0.25 -> 1.00, toy-contrary 1.00 -> *, 1 edit(s) rejected "
        "(blocked by toy-contrary (max_chars 1.00 -> 0.00))",
        PORTABLE_HEADING,
        "seed*pair*validated on*base*single*multi*single - base*multi - base*multi - single*p (Holm)*extra cost*outcome",
        "alpha*toy-small -> toy-contrary*toy-contrary*1.00*0.00*1.00*-1.00 *+0.00 *+1.00 [[]+0.* at 9*%*" + IN_SAMPLE,
        "alpha (toy-small -> toy-contrary): edits blocked: night 1 by toy-contrary (max_chars 1.00 -> 0.00); "
        "night 2 by toy-contrary (max_chars 1.00 -> 0.00)",
    ])
    (portable,) = _portable(pytester)
    assert portable["outcome"] == IN_SAMPLE and portable["in_sample"] and portable["validate_on"] == ["toy-contrary"]
    from pytest_skilltransfer.plugin.item_hooks import junit_properties

    report = json.loads((pytester.path / "r.json").read_text())["results"][0]
    properties = dict(junit_properties(ItemRecord.from_json(report)))
    assert properties["skilltransfer_portable_outcome"] == IN_SAMPLE
    assert properties["skilltransfer_validate_on"] == "toy-contrary" and properties["skilltransfer_portable"] == 1.0
    from pytest_skilltransfer.reports.html_item import item_section

    night = report["portable"]["optimization"]["nights"][0]
    assert night["validation"][0]["dropped_checks"] == ["max_chars"]
    assert "(blocked by toy-contrary (max_chars 1.00 -&gt; 0.00))" in item_section(ItemRecord.from_json(report))


def test_without_the_option_nothing_changes(pytester: pytest.Pytester) -> None:
    project(pytester, seeds=("alpha",))
    result = pytester.runpytest("--pair=toy-small:toy-contrary", "--skilltransfer-json=r.json", "--no-snapshots")
    assert "portable skills" not in result.stdout.str()
    assert _portable(pytester) == [None]


def test_ini_then_seed_then_command_line(pytester: pytest.Pytester) -> None:
    root = project(pytester, ini="skilltransfer_validate_on = toy-half\nskilltransfer_validate_tolerance = 0.5\n",
                   seeds=("alpha", "beta"))
    (root / "beta" / "seed.toml").write_text('validate_on = ["toy-contrary", "toy-stubborn"]\nvalidate_tolerance = 0.1\n')
    pytester.runpytest("--pair=toy-small:toy-large", "--skilltransfer-json=r.json", "--no-snapshots")
    alpha, beta = _portable(pytester)
    assert alpha["validate_on"] == ["toy-half"] and alpha["tolerance"] == 0.5  # the ini's
    assert beta["validate_on"] == ["toy-contrary", "toy-stubborn"] and beta["tolerance"] == 0.5  # ini tolerance wins
    pytester.runpytest("--pair=toy-small:toy-large", "--skilltransfer-json=r.json", "--no-snapshots",
                       "--transfer-validate-on=toy-stubborn", "--validate-on", "toy-half",
                       "--validate-tolerance=0")
    alpha, beta = _portable(pytester)
    assert alpha["validate_on"] == beta["validate_on"] == ["toy-stubborn", "toy-half"]
    assert alpha["tolerance"] == beta["tolerance"] == 0.0
    pytester.runpytest("--pair=toy-small:toy-large", "--skilltransfer-json=r.json", "--no-snapshots",
                       "--validate-on=off")
    assert _portable(pytester) == [None, None]


def test_bad_values_are_usage_errors_naming_the_option(pytester: pytest.Pytester) -> None:
    project(pytester, seeds=("alpha",))
    unknown = pytester.runpytest("--pair=toy-small:toy-large", "--validate-on=nosuch-model")
    assert unknown.ret == pytest.ExitCode.USAGE_ERROR
    unknown.stderr.fnmatch_lines(["*--validate-on: *nosuch-model*"])
    mixed = pytester.runpytest("--pair=toy-small:toy-large", "--validate-on=off,toy-half")
    mixed.stderr.fnmatch_lines(["*--validate-on: 'off' cannot be combined with model names*"])
    tolerance = pytester.runpytest("--pair=toy-small:toy-large", "--validate-on=toy-half", "--validate-tolerance=2")
    tolerance.stderr.fnmatch_lines(["*--validate-tolerance: must be within [[]0, 1[]]*"])
    (pytester.path / "seeds" / "alpha" / "seed.toml").write_text('validate_on = "nosuch-model"\n')
    in_seed = pytester.runpytest("--pair=toy-small:toy-large")
    assert in_seed.ret == pytest.ExitCode.USAGE_ERROR
    in_seed.stderr.fnmatch_lines(["*seeds/alpha/seed.toml validate_on: *nosuch-model*"])
    assert pytester.runpytest("--pair=toy-small:toy-large", "--validate-on=off", "--no-snapshots").ret == 0


# -- against a loopback provider -------------------------------------------------------------------------

PRICES = '"fake-*" = { input = 1.0, output = 5.0, cache_write = 1.25, cache_read = 0.1 }\n"toy-*" = { input = 0.5, output = 1.0 }'


def _validation_rows(lines: list[str]) -> dict[str, tuple[int, float]]:
    rows, inside = {}, False
    for line in lines:
        if line.startswith("--validate-on arm, per model"):
            inside = True
        elif inside and line.strip() and not line.startswith("-"):
            cells = re.split(r"\s{2,}", line.strip())
            rows[cells[0]] = (int(cells[1]), float(cells[4]))
        elif inside and not line.strip():
            break
    return rows


def test_the_plan_bounds_and_prices_the_listed_models_and_replay_is_offline(pytester: pytest.Pytester) -> None:
    options = ["--pair=small:large", "--optimizer=toy-opt", "--validate-on=listed", "--nights=2",
               "--limit-test=6", "-p", "no:randomly"]
    with FakeProvider() as fake:
        loopback_project(pytester, fake, PRICES, listed="fake-listed")
        copy_project_seed(pytester.path / "seeds", "ticket-router")
        planned = pytester.runpytest_subprocess("--plan", *options)
        assert planned.ret == 0, planned.stdout.str()
        bound = _validation_rows(planned.stdout.lines)
        assert set(bound) == {"fake-large", "fake-listed", "fake-small", "toy-opt"}, planned.stdout.str()
        assert fake.received == []

        run = pytester.runpytest_subprocess("--record-mode=once", "--snapshot-update", "--max-cost=100000",
                                            "--skilltransfer-json=r.json", *options)
        assert run.ret == 0, run.stdout.str()
        (result,) = json.loads((pytester.path / "r.json").read_text())["results"]
        listed_calls = sum(1 for r in fake.received if "fake-listed" in json.dumps(r))
        sent = len(fake.received)

        replay = pytester.runpytest_subprocess("--record-mode=none", "--skilltransfer-json=r2.json", *options)
        assert replay.ret == 0, replay.stdout.str()
        assert len(fake.received) == sent, "the replay sent a request"
    portable = result["portable"]
    extra = {m["model"]: m for m in portable["extra_cost"]["per_model"]}
    assert extra["fake-listed"]["calls"] == listed_calls > 0  # every call to the listed model is the arm's
    for model, (calls, usd) in bound.items():
        assert extra.get(model, {"calls": 0})["calls"] <= calls
        assert (extra.get(model, {"usd": 0.0})["usd"] or 0.0) <= usd + 1e-9
    phases = result["cost"]["phases"]
    arm_usd = sum(row["usd"] for phase in ("optimize-portable", "portable") for row in phases[phase])
    assert portable["extra_cost"]["usd"] == pytest.approx(arm_usd, abs=1e-6)
    replayed = json.loads((pytester.path / "r2.json").read_text())["results"][0]["portable"]
    assert replayed["family"] == portable["family"] and replayed["learned_skill"] == portable["learned_skill"]


def test_rerun_commands_keep_the_validation_set() -> None:
    from plugin_support import item_record
    from pytest_skilltransfer.reports.rerun import rerun_commands

    result = item_record(item="seeds/a/SKILL.md::transfer[s->t]", source="s", target="t",
                         portable={"validate_on": ["t", "u"], "tolerance": 0.05})
    assert rerun_commands(result)[0][1] == ("pytest 'seeds/a/SKILL.md::transfer[s->t]' --transfer-pair 's->t' "
                                            "--transfer-validate-on t,u --transfer-validate-tolerance 0.05")


def test_xdist_gives_the_same_portable_arm(pytester: pytest.Pytester) -> None:
    root = project(pytester, seeds=("alpha", "beta"))
    (root / "beta" / "seed.toml").write_text('validate_on = "toy-contrary"\n')
    options = ["--pair=toy-small:toy-half", "--pair=toy-small:toy-contrary", "--validate-on=toy-half",
               "--no-snapshots", "--transfer-harm-tolerance=off", "-p", "no:randomly"]
    pytester.runpytest(*options, "--skilltransfer-json=r.json")
    serial = {r["item"]: r["portable"] for r in json.loads((pytester.path / "r.json").read_text())["results"]}
    pytester.runpytest_subprocess(*options, "-n", "2", "--skilltransfer-json=r.json")
    parallel = {r["item"]: r["portable"] for r in json.loads((pytester.path / "r.json").read_text())["results"]}
    assert len(serial) == 4 and serial == parallel


def test_the_batch_lane_records_the_listed_models_as_a_synchronous_run_does(pytester: pytest.Pytester) -> None:
    from batch_provider import BatchProvider
    from test_batch_mode import FAST, interactions

    with BatchProvider() as fake:
        project(pytester, ini="skilltransfer_pair = small:large\nskilltransfer_nights = 2\n"
                "skilltransfer_validate_on = listed\nskilltransfer_optimizer = toy-opt\n", seeds=("alpha",))
        pytester.makepyprojecttoml(f'''
            [tool.skilltransfer.models]
            small = "anthropic:fake-small@{fake.anthropic_url}"
            large = "openai:fake-large@{fake.openai_url}"
            listed = "openai:fake-listed@{fake.openai_url}"
        ''')
        sync = pytester.runpytest_subprocess("--record-mode=once", "--snapshot-update", "--skilltransfer-json=sync.json")
        sync.assert_outcomes(passed=1)
        sent_sync = fake.served_sync
        shutil.move(pytester.path / "cassettes", pytester.path / "cassettes-sync")
        batch = pytester.runpytest_subprocess("--record-mode=once", "--transfer-batch", *FAST,
                                              "--skilltransfer-json=batch.json")
        batch.assert_outcomes(passed=1)
        assert fake.served_sync == sent_sync and fake.total_paid == sent_sync and not fake.paid_twice()
    listed = [p for p in (pytester.path / "cassettes").rglob("*.yaml") if "fake-listed" in p.name]
    assert listed, "the listed model's calls were recorded in its own cassette"
    assert interactions(pytester.path / "cassettes") == interactions(pytester.path / "cassettes-sync")
    arm = lambda name: json.loads((pytester.path / name).read_text())["results"][0]["portable"]  # noqa: E731
    sync_arm, batch_arm = arm("sync.json"), arm("batch.json")
    for key in ("family", "learned_skill", "optimization", "outcome", "transferred"):
        assert batch_arm[key] == sync_arm[key], key
    assert batch_arm["extra_cost"]["calls"] == sync_arm["extra_cost"]["calls"] > 0


def test_status_report_small_to_large_validated_on_large_is_not_hurt_offline(pytester: pytest.Pytester,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The issue's command on the project seed, in CI mode (the simulator is in-process: no cassette, no
    request leaves): the comparison row shows the multi-model skill not hurting sim-large."""
    monkeypatch.setenv("CI", "true")
    pytester.makeini("[pytest]\n")
    copy_project_seed(pytester.path / "seeds", "status-report")
    result = pytester.runpytest("seeds/status-report", "--pair=sim-small:sim-large", "--validate-on=sim-large",
                                "--skilltransfer-json=r.json", "--no-snapshots", "-p", "no:randomly")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines([
        PORTABLE_HEADING,
        "status-report*sim-small -> sim-large*sim-large*0.88*0.25*0.88*-0.62 *+0.00 [[]-0.14, +0.14]*+0.62 *" + IN_SAMPLE,
        "status-report (sim-small -> sim-large): edits blocked: night 1 by sim-large (section_present 1.00 -> 0.75); "
        "night 2 by sim-large (section_present 1.00 -> 0.75)",
    ])
    (portable,) = _portable(pytester)
    multi = next(c for c in portable["family"]["comparisons"] if c["name"] == "multi")
    assert multi["ci_low"] < 0 < multi["ci_high"] and multi["outcome"] != "hurts"
    assert not (pytester.path / "seeds" / "status-report" / "cassettes").exists()
