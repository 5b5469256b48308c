"""`pytest_skilltransfer_configure(config, registry)`: a conftest registers model backends and aliases,
judge ops and cassette scrubbers; the repository's own conftest.py is the worked example."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fake_provider import FakeProvider
from plugin_support import CHECKS, TOY_CONFTEST, make_seed
from pytest_skilltransfer.cassettes.scrub import USER_SCRUBBERS
from pytest_skilltransfer.evidence.item_record import ItemRecord
from pytest_skilltransfer.reports.rerun import rerun_commands

ROOT = Path(__file__).resolve().parents[2]
HOOK = '''
import json


def pytest_skilltransfer_configure(config, registry):
    registry.add_model_family("echo", lambda name: name == "echo", Toy, "echo: the toy model under another name")
    registry.add_alias("cheap", "toy-a")
    registry.add_judge_op("shouts", lambda text, arg: text.isupper(), arg="none", description="is all capitals")
    registry.add_judge_op("mentions", lambda text, arg: arg in text, description='mentions "{arg}"')

    def redact(request):
        body = json.loads(request.body)
        body["system"] = "[redacted]"
        request.body = json.dumps(body).encode()
        return request

    registry.add_scrubbers(request=redact)
'''


def hooked_project(pytester: pytest.Pytester, checks: list[dict[str, object]]) -> None:
    pytester.makeconftest(TOY_CONFTEST + HOOK)
    pytester.makeini("[pytest]\nskilltransfer_limit_replay = 0\nskilltransfer_limit_holdout = 0\n")
    seed = make_seed(pytester.path / "seeds", "alpha")
    judge = {"kind": "rule", "checks": CHECKS["checks"] + checks}
    for name in ("benchmark.jsonl", "held-out.jsonl"):
        lines = [json.loads(line) for line in (seed / name).read_text().splitlines()]
        (seed / name).write_text("".join(json.dumps({**line, "judge": judge}) + "\n" for line in lines))


def test_a_conftest_registers_models_aliases_and_judge_ops(pytester: pytest.Pytester) -> None:
    hooked_project(pytester, [{"op": "mentions", "arg": "Routed"}])
    result = pytester.runpytest("--pair", "cheap:echo", "--snapshot-update", "--skilltransfer-json", "r.json")
    result.assert_outcomes(passed=1)
    data = json.loads((pytester.path / "r.json").read_text())["results"][0]
    assert data["transferred"] == 1.0
    # an op nobody registered is refused, naming the known ones
    seed = pytester.path / "seeds" / "alpha" / "held-out.jsonl"
    seed.write_text(seed.read_text().replace('"mentions"', '"whispers"'))
    broken = pytester.runpytest("--pair", "cheap:echo")
    broken.stdout.fnmatch_lines(["*held-out.jsonl:1: task 'hd-00': check 3: unknown op 'whispers'; known ops: *"
                                 "tool_called, rubric, mentions, shouts*"])
    assert all(f.__name__ != "redact" for f in USER_SCRUBBERS()["request"])  # its run took its scrubber along


def test_two_runs_in_one_process_share_no_configuration(pytester: pytest.Pytester) -> None:
    """What one run's hook and pyproject configure (aliases, judge ops, model families, gates, scrubbers) lives
    on that run's scope: a second, differently configured run in the same process sees none of it."""
    from pytest_skilltransfer.engine.gate_specs import all_gates
    from pytest_skilltransfer.engine.judges import rule_ops
    from pytest_skilltransfer.models.aliases import all_aliases
    from pytest_skilltransfer.models.base import registered_names

    before = (all_aliases(), rule_ops(), set(all_gates()), USER_SCRUBBERS())
    hooked_project(pytester, [{"op": "mentions", "arg": "Routed"}])
    first = pytester.runpytest("--pair", "cheap:echo", "--snapshot-update")
    first.assert_outcomes(passed=1)
    (pytester.path / "conftest.py").write_text(TOY_CONFTEST)  # the second run: no hook, other checks
    make_seed(pytester.path / "seeds2", "beta")
    second = pytester.runpytest("--pair", "cheap:echo", "--seeds-dir", "seeds2", "-p", "no:cacheprovider",
                                "seeds2")
    second.stderr.fnmatch_lines(["*unknown model 'cheap'*"])
    assert "cheap (toy-a)" not in second.stderr.str()  # the first run's alias and family are gone
    # and the run that ran both (this one) has its own configuration as it was
    assert (all_aliases(), rule_ops(), set(all_gates()), USER_SCRUBBERS()) == before
    assert not any(name.startswith("echo:") for name in registered_names())  # the hook's family left too


def test_registered_scrubbers_run_on_recording(pytester: pytest.Pytester) -> None:
    with FakeProvider() as fake:
        hooked_project(pytester, [])
        pytester.makepyprojecttoml(f'[tool.skilltransfer.models]\nremote = "anthropic:fake-small@{fake.anthropic_url}"\n')
        result = pytester.runpytest_subprocess("--pair", "toy-a:remote", "--no-direct", "--nights", "1",
                                               "--record-mode=once", "--snapshot-update")
        result.assert_outcomes(passed=1)
    cassette = (pytester.path / "cassettes" / "alpha" / "fake-small.yaml").read_text()
    assert "[redacted]" in cassette and "Route the ticket" not in cassette


def test_a_bad_registration_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makeconftest('''
def pytest_skilltransfer_configure(config, registry):
    registry.add_judge_op("contains", lambda text, arg: True)
''')
    make_seed(pytester.path / "seeds", "alpha")  # without seeds the plugin stays inert and calls no hook
    result = pytester.runpytest("--co")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*pytest_skilltransfer_configure: judge op 'contains' is built in; choose another name"])
    result.stdout.no_fnmatch_line("*Traceback*")


def test_the_repositorys_conftest_is_the_worked_example() -> None:
    proc = subprocess.run([sys.executable, "-m", "pytest", "--co", "-q", "--source", "cheap", "--target", "expensive",
                           "seeds/docs-style"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "seeds/docs-style/SKILL.md::transfer[cheap->expensive]" in proc.stdout


def test_an_alias_is_the_model_it_names(tmp_path: Path) -> None:
    """`cheap`/`expensive` (this repository's aliases of sim-small/sim-large) give the verdict, snapshot and
    `expect` of the models they name, while node ids, rerun commands and the JSON keep the names given."""
    report = tmp_path / "report.json"
    proc = subprocess.run([sys.executable, "-m", "pytest", "seeds/status-report", "--source", "cheap", "--target",
                           "expensive", "-p", "no:randomly", "-p", "no:cacheprovider", "--skilltransfer-json",
                           str(report)], cwd=ROOT, capture_output=True, text=True,
                          env={**{k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}, "CI": "true"})
    assert proc.returncode == 0, proc.stdout + proc.stderr  # declared `expect = "hurts"` for sim-small->sim-large
    assert "cheap (sim-small) -> expensive (sim-large):" in proc.stdout
    assert "1 snapshot passed." in proc.stdout  # transfer[sim-small_to_sim-large].md, the unaliased run's
    result = json.loads(report.read_text())["results"][0]
    assert (result["source"], result["target"]) == ("sim-small", "sim-large")
    assert (result["source_name"], result["target_name"]) == ("cheap", "expensive")
    assert result["outcome"] == "hurts" and result["gate"]["verdict"] == "pass"
    assert rerun_commands(ItemRecord.from_json(result))[0][1].endswith("--transfer-pair 'cheap->expensive'")
