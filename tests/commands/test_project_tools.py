"""The first hour: `init` (repository entries, every op, a [judge] stanza), `check`, `models` with
the pinned ids of `models.lock`, `doctor`, and the warning for a seed too small to ever decide."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

from plugin_support import make_seed, project
from pytest_skilltransfer.models import local
from pytest_skilltransfer.commands.doctor import check_local
from pytest_skilltransfer.cassettes.model_lock import LOCK_FILE, apply_lock, pin, read_lock
from pytest_skilltransfer.reports.inventory import rows
from pytest_skilltransfer.engine.judges import RULE_OPS
from pytest_skilltransfer.models.aliases import sdk_aliases
from pytest_skilltransfer.models.registry import resolve_model
from pytest_skilltransfer.models.providers import configure_aliases
from pytest_skilltransfer.commands.scaffold import project_files

ROOT = Path(__file__).resolve().parents[2]


def cli(*args: str, cwd: Path = ROOT, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")}
    return subprocess.run([sys.executable, "-m", "pytest_skilltransfer", *args], cwd=cwd, capture_output=True,
                          text=True, input=stdin, env=env, timeout=300)


@pytest.fixture
def _aliases_reset() -> Iterator[None]:
    yield
    configure_aliases({})


def test_init_adds_the_repository_entries_once_and_names_every_op(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("build/\n")
    done = cli("init", "seeds/new", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    ignore = (tmp_path / ".gitignore").read_text()
    assert ignore.startswith("build/\n") and "cassettes/**/.lock" in ignore and "cassettes/**/.journal-*" in ignore
    assert "cassettes/**/*.yaml.index linguist-generated=true -diff" in (tmp_path / ".gitattributes").read_text()
    assert project_files(tmp_path) == []  # a second time changes nothing
    config = (tmp_path / "seeds" / "new" / "seed.toml").read_text()
    assert all(op in config for op in RULE_OPS) and "rubric" in config
    assert "# [judge]" in config and "# model = " in config and "# min_accuracy = " in config


def test_check_shows_which_checks_an_answer_passes(tmp_path: Path) -> None:
    seed = ROOT / "seeds" / "ticket-router"
    good = cli("check", str(seed), "held-001", "-", stdin="Team: Payments\nPriority: P2")
    assert good.returncode == 0 and "  pass  regex=" in good.stdout and "1/1 checks pass" in good.stdout
    assert ("as a fixed answer on every held-out task: a constant answer passes 24/24: these checks cannot tell a "
            "right answer from a wrong one") in good.stdout
    bad = cli("check", str(seed), "held-001", "-", stdin="Payments, urgent")
    assert bad.returncode == 1 and "  FAIL  regex=" in bad.stdout and "0/1 checks pass" in bad.stdout
    unknown = cli("check", str(seed), "nope", "-", stdin="")
    assert unknown.returncode == 2 and "has no task 'nope'; its tasks: held-001" in unknown.stderr
    assert "  regex checks: multiline (^ and $ match at every line), case-sensitive" in good.stdout


def test_check_grades_rubric_checks_through_the_judge_model(capsys: pytest.CaptureFixture[str],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from pytest_skilltransfer.commands.answer_check import main

    seed = str(ROOT / "seeds" / "change-review")  # [judge] model = "sim-judge", 3 votes
    with_verdict = "## Summary\nMoves uploads to object storage.\nVerdict: safe to merge once the bucket policy lands.\n"
    without = "## Summary\nMoves uploads to object storage.\n"
    for text, code, word in ((with_verdict, 0, "pass"), (without, 1, "FAIL")):
        monkeypatch.setattr("sys.stdin", io.StringIO(text))
        assert main([seed, "test-001", "-"]) == code
        out = capsys.readouterr().out
        assert f"  {word}  rubric=" in out and "(judge sim-judge, 3 vote(s): " in out, out
    monkeypatch.setattr("sys.stdin", io.StringIO(with_verdict))
    main([seed, "test-001", "-", "--judge", "no-such-model"])
    assert "  not checked  rubric=" in capsys.readouterr().out


def test_models_lists_aliases_ids_prices_and_recordings() -> None:
    done = cli("models")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["alias", "resolves", "to", "price", "per", "Mtok", "recordings"]
    haiku = next(line for line in lines if line.startswith("haiku "))
    assert sdk_aliases()["haiku"] in haiku and "$" in haiku
    local = next(line for line in lines if line.startswith("smollm2-135m "))
    recorded = {p.parent.name for p in (ROOT / "cassettes").glob("*/smollm2-135m*.yaml")}
    assert f"{len(recorded)} seed(s)" in local  # the repository's recordings
    assert any("sim-small, sim-large" in line for line in lines)


def test_a_pinned_alias_survives_an_sdk_that_knows_a_newer_id(tmp_path: Path, _aliases_reset: None) -> None:
    assert pin(tmp_path, ["haiku", "sim-small"]) == ["haiku"]  # only built-in SDK aliases are pinned
    assert read_lock(tmp_path) == {"haiku": sdk_aliases()["haiku"]}
    assert pin(tmp_path, ["haiku"]) == []  # kept as it is
    (tmp_path / LOCK_FILE).write_text('haiku = "anthropic:claude-haiku-4-0"\n')  # recorded under an older SDK
    apply_lock(tmp_path, {})
    assert resolve_model("haiku").model_id == "claude-haiku-4-0"
    row = next(r for r in rows(tmp_path) if r[0] == "haiku")
    assert row[1] == "anthropic:claude-haiku-4-0" and row[4] == f"pinned (the SDK's newest is {sdk_aliases()['haiku'].split(':')[1]})"
    apply_lock(tmp_path, {"haiku": "anthropic:claude-haiku-9-9"})  # the project's table still wins
    assert resolve_model("haiku").model_id == "claude-haiku-9-9"


def test_a_damaged_lock_is_an_error_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / LOCK_FILE).write_text("haiku = \n")
    with pytest.raises(ValueError, match=f"{LOCK_FILE}: not valid TOML"):
        read_lock(tmp_path)


def test_doctor_names_each_problem_and_what_to_do(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.pytest.ini_options]\nskilltransfer_pair = ["haiku:sonnet", '
                                             '"mystery:sonnet"]\n')
    done = cli("doctor", cwd=tmp_path)
    assert done.returncode == 1
    out = done.stdout
    assert "problem  model 'mystery': unknown model 'mystery'" in out
    assert "problem  ANTHROPIC_API_KEY is not set: replay (CI=true) works without it; to record haiku, sonnet" in out
    assert "problem  no seeds under seeds/: python -m pytest_skilltransfer init seeds/my-skill writes one" in out
    ready = cli("doctor")  # this repository: its real-model seeds name the local model in their own pairs
    if local.server_available():
        assert ready.returncode == 0, ready.stdout
        assert ready.stdout.splitlines()[-1] == "everything is ready"
    else:
        problems = [line for line in ready.stdout.splitlines() if line.startswith("problem")]
        assert ready.returncode == 1 and len(problems) == 1, ready.stdout
        assert problems[0].startswith("problem  smollm2-135m, smollm2-135m-anthropic is configured but its server "
                                      "is not installed: replay (CI=true) works without it; to record, run "
                                      "`python -m pytest_skilltransfer.local build` once")


def test_doctor_reports_a_local_model_a_seed_names_whose_server_is_missing(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.pytest.ini_options]\nskilltransfer_pair = ["sim-small:sim-large"]\n')
    seed = make_seed(tmp_path / "seeds", "real")
    (seed / "seed.toml").write_text('pairs = ["sim-small:smollm2-135m-anthropic"]\n')
    port = local.free_port()  # nothing listens there
    monkeypatch.setenv(local.URL_ENV, f"http://127.0.0.1:{port}")
    done = cli("doctor", cwd=tmp_path)
    assert f"problem  {local.URL_ENV}=http://127.0.0.1:{port} does not answer /health (None): start that server, " \
           "or unset the variable so --local-server=auto starts one" in done.stdout
    monkeypatch.setattr(local, "server_available", lambda: False)
    monkeypatch.delenv(local.URL_ENV)
    lines: list[tuple[bool, str]] = []
    check_local([resolve_model("smollm2-135m-anthropic")], lambda ok, text: lines.append((ok, text)))
    assert lines == [(False, "smollm2-135m-anthropic is configured but its server is not installed: replay (CI=true) "
                      "works without it; to record, run `python -m pytest_skilltransfer.local build` once (it compiles "
                      f"llama.cpp: {local.build_estimate()})")]


def test_doctor_reports_the_unpriced_models_a_pair_optimizer_or_judge_would_call(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\nskilltransfer_pair = ["gateway:sim-small"]\n'
        'skilltransfer_optimizer = "openai:opt@http://127.0.0.1:9/v1"\n'
        '[tool.skilltransfer.models]\ngateway = "openai:gw@http://127.0.0.1:9/v1"\n'
        'home = { provider = "openai", model = "home-llm", base_url = "http://127.0.0.1:9/v1", free = true }\n')
    (tmp_path / "seeds" / "s").mkdir(parents=True)
    (tmp_path / "seeds" / "s" / "seed.toml").write_text('[judge]\nmodel = "home"\n')
    out = cli("doctor", cwd=tmp_path).stdout
    assert 'problem  model gateway (gw) has no price: --plan cannot count it and --max-cost refuses it; add ' \
           '[tool.skilltransfer.prices] "gw" = { input = <$/Mtok>, output = <$/Mtok> }' in out
    assert "problem  model openai:opt@http://127.0.0.1:9/v1 (opt) (skilltransfer_optimizer) has no price" in out
    assert f"ok       model home -> home-llm ({Path('seeds/s/seed.toml')} [judge] model)" in out  # declared free
    assert "ok       model sim-small -> sim-small" in out


def test_a_seed_too_small_to_ever_decide_says_so(pytester: pytest.Pytester) -> None:
    project(pytester, ini="skilltransfer_pair = toy-a:toy-b\n", seeds=())
    make_seed(pytester.path / "seeds", "tiny", tasks=2)
    result = pytester.runpytest("--snapshot-update")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*seed tiny: 2 held-out task(s) can never show a significant gain (the smallest "
                                 "possible p-value is 0.500); add tasks to *held-out.jsonl (at least 6)*"])


def test_k_source_to_target_selects_hand_written_tests_too(pytester: pytest.Pytester) -> None:
    project(pytester, ini="skilltransfer_pair = toy-a:toy-b toy-b:toy-a\n", seeds=("alpha",))
    pytester.makepyfile(test_gates='''
        import pytest

        @pytest.mark.skilltransfer(seed="seeds/alpha")
        def test_alpha(transfer_result):
            pass
    ''')
    result = pytester.runpytest("--co", "-q", "-k", "toy-a_to_toy-b")
    assert result.outlines[:2] == ["seeds/alpha/SKILL.md::transfer[toy-a->toy-b]", "test_gates.py::test_alpha[toy-a->toy-b]"]


def test_doctor_warns_but_passes_on_a_plugin_known_to_coexist(monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_skilltransfer.commands import doctor

    helped = ("  --shard-id=SHARD_ID  (--shard-id is another plugin's here; ini: skilltransfer_shard_id)\n"
              "  --frob=X  (--frob is another plugin's here; ini: skilltransfer_frob)\n")
    monkeypatch.setattr(doctor.subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(a, 0, stdout=helped))
    lines: list[tuple[bool | None, str]] = []
    doctor.check_plugins(lambda ok, text: lines.append((ok, text)))
    assert lines == [(None, "--shard-id belong to pytest-shard, which coexists with this plugin: use this plugin's "
                            "--transfer-shard-id (the short spelling reaches pytest-shard)"),
                     (False, "--frob belong to another installed plugin: use this plugin's --transfer-frob (the short "
                             "spelling reaches the other plugin)")]


def test_the_free_models_table_line_keeps_the_models_key_variable(_aliases_reset: None) -> None:
    from pytest_skilltransfer.models.providers import configure_aliases
    from pytest_skilltransfer.plugin.budget import unpriced

    configure_aliases({"gw": {"provider": "openai", "model": "gw-1", "base_url": "http://127.0.0.1:9/v1",
                              "api_key_env": "GATEWAY_KEY"}})
    (line,) = unpriced([resolve_model("gw")])
    assert ('"gw" = { provider = "openai", model = "gw-1", base_url = "http://127.0.0.1:9/v1", '
            'api_key_env = "GATEWAY_KEY", free = true }') in line
