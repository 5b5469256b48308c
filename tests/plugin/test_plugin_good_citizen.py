"""The plugin in runs that are not its own, and hints that work when followed.

A run with no seed and no transfer test imports only the option table, installs no scheduler,
writes and prints nothing. Snapshots record the protocol settings, so a changed setting is named
rather than called a regression. The Markdown report's rerun and accept commands are executed here
as printed.
"""

from __future__ import annotations

import html
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from plugin_support import project

FOREIGN = '''
import pytest

@pytest.mark.parametrize("n", range(4))
def test_numbers(n):
    assert n >= 0
'''
LIGHT_MODULES = {  # all the plugin imports in a run that is not its own
    "pytest_skilltransfer", "pytest_skilltransfer.engine.seed_layout", "pytest_skilltransfer.plugin",
    "pytest_skilltransfer.plugin.options", "pytest_skilltransfer.plugin.collect",
    "pytest_skilltransfer.plugin.engagement", "pytest_skilltransfer.plugin.reporting",
    "pytest_skilltransfer.plugin.hookspecs", "pytest_skilltransfer.plugin.markers",
    "pytest_skilltransfer.plugin.compare_to", "pytest_skilltransfer.plugin.shards", "pytest_skilltransfer.plugin.batch_setup",
    "pytest_skilltransfer.plugin.aa_fixture",
    "pytest_skilltransfer.plugin.spellings", "pytest_skilltransfer.plugin.values", "pytest_skilltransfer.plugin.state",
    "pytest_skilltransfer.guards.bounds", "pytest_skilltransfer.guards.terminal",
    "pytest_skilltransfer.reports.comparison",
    "pytest_skilltransfer.engine.gate_specs", "pytest_skilltransfer.guards.run_scope",  # the gates' options
    # the folders holding those (their __init__ modules hold a docstring and nothing else)
    "pytest_skilltransfer.guards", "pytest_skilltransfer.engine", "pytest_skilltransfer.reports",
}
REPORT_PLUGIN = '''
import os

def pytest_unconfigure(config):
    print("REPORTING", config.pluginmanager.get_plugin("skilltransfer-reporting") is not None)
    worker = getattr(config, "workerinput", {}).get("workerid", "controller")
    hooks = config.pluginmanager.get_plugin("skilltransfer-items") is not None
    with open(os.path.join(str(config.rootpath), f"hooks-{worker}.txt"), "w") as out:
        out.write(str(hooks))
'''


def _run(cwd: Path, code: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


def _foreign_project(root: Path) -> Path:
    (root / "pyproject.toml").write_text("[project]\nname = 'foreign'\n")
    (root / "test_foreign.py").write_text(FOREIGN)
    return root


def test_a_foreign_run_imports_only_the_option_table_and_writes_nothing(tmp_path: Path) -> None:
    project = _foreign_project(tmp_path)
    before = sorted(p.name for p in project.iterdir())
    code = ("import sys, pytest; code = pytest.main(sys.argv[1:]); "
            "print('MODULES', sorted(m for m in sys.modules if m.startswith('pytest_skilltransfer'))); sys.exit(code)")
    run = _run(project, code, "-q", "-p", "no:cacheprovider", "-p", "no:randomly")
    assert run.returncode == 0, run.stdout + run.stderr
    modules = set(eval(run.stdout.split("MODULES ", 1)[1]))
    assert modules <= LIGHT_MODULES, modules - LIGHT_MODULES
    assert sorted(p.name for p in project.iterdir() if p.name != "__pycache__") == before
    assert "skill transfer" not in run.stdout and run.stderr == ""


def test_a_foreign_run_under_xdist_keeps_xdists_scheduler(tmp_path: Path) -> None:
    project = _foreign_project(tmp_path)
    (project / "conftest.py").write_text(REPORT_PLUGIN)
    run = _run(project, "import sys, pytest; sys.exit(pytest.main(sys.argv[1:]))", "-n", "2", "-v", "-s",
               "-p", "no:cacheprovider", "-p", "no:randomly")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "scheduling tests via LoadScheduling" in run.stdout
    assert "REPORTING False" in run.stdout
    # no process of the run, workers included, registers the per-test hooks
    assert {p.name: p.read_text() for p in project.glob("hooks-*.txt")} == {
        "hooks-controller.txt": "False", "hooks-gw0.txt": "False", "hooks-gw1.txt": "False"}


def test_a_run_with_seeds_engages(pytester: pytest.Pytester) -> None:
    project(pytester, ini="skilltransfer_pair = toy-a:toy-b\n", seeds=("alpha",))
    pytester.makeconftest(pytester.path.joinpath("conftest.py").read_text() + REPORT_PLUGIN)
    result = pytester.runpytest_subprocess("-n", "2", "-v", "-s", "--snapshot-update")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*scheduling tests via SeedScheduling*", "*REPORTING True*"])


def test_a_changed_setting_is_named_instead_of_called_a_regression(pytester: pytest.Pytester) -> None:
    project(pytester, ini="skilltransfer_pair = toy-a:toy-b\n", seeds=("alpha",))
    pytester.runpytest("--snapshot-update").assert_outcomes(passed=1)
    changed = pytester.runpytest("--nights=1", "--edit-budget=2", "-vv")  # (-vv: summary lines uncut)
    changed.assert_outcomes(failed=1)
    summary = next(line for line in changed.outlines if line.startswith("FAILED "))
    assert "protocol settings changed (nights 2 -> 1, edit_budget 4 -> 2)" in summary, summary
    assert "regression" not in summary
    pytester.runpytest("--nights=1", "--edit-budget=2", "--snapshot-update").assert_outcomes(passed=1)
    snapshot = pytester.path / "seeds" / "alpha" / "__snapshots__" / "transfer[toy-a_to_toy-b].md"
    assert "- protocol settings: `nights=1 edit_budget=2 " in snapshot.read_text()


def test_rerun_and_accept_commands_work_as_printed_in_every_report(pytester: pytest.Pytester) -> None:
    project(pytester, ini="skilltransfer_source = toy-a\nskilltransfer_target = toy-b\n", seeds=("alpha",))
    pytester.runpytest("--snapshot-update").assert_outcomes(passed=1)
    skill = pytester.path / "seeds" / "alpha" / "SKILL.md"
    skill.write_text(skill.read_text() + "Keep answers short.\n")  # the learned skill changes with it
    failed = pytester.runpytest_subprocess("--source=toy-a", "--target=toy-b", "--skilltransfer-md=report.md",
                                           "--skilltransfer-html=report.html")
    failed.assert_outcomes(failed=1)
    markdown = (pytester.path / "report.md").read_text()
    commands = dict(re.findall(r"^- (rerun|accept the new result once reviewed): `(.*)`$", markdown, re.M))
    assert set(commands) == {"rerun", "accept the new result once reviewed"}, markdown
    page = html.unescape((pytester.path / "report.html").read_text())
    assert dict(re.findall(r"<p>(rerun|accept the new result once reviewed): <code>(.*?)</code></p>", page)) == commands
    terminal = next(line for line in failed.outlines if line.startswith("snapshot mismatch (accept once reviewed: "))
    assert terminal == f"snapshot mismatch (accept once reviewed: {commands['accept the new result once reviewed']}):"
    rerun = pytester.runpytest_subprocess(*shlex.split(commands["rerun"])[1:])
    rerun.assert_outcomes(failed=1)  # the same failure, reproduced
    accept = pytester.runpytest_subprocess(*shlex.split(commands["accept the new result once reviewed"])[1:])
    accept.assert_outcomes(passed=1)
    pytester.runpytest_subprocess(*shlex.split(commands["rerun"])[1:]).assert_outcomes(passed=1)
