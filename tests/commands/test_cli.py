"""`python -m pytest_skilltransfer`: the plugin's options, tables, gates and reports; exit codes; clear errors."""

import json
import shutil
import subprocess
import textwrap
from pathlib import Path
from typing import Callable

import pytest

ROOT = Path(__file__).resolve().parents[2]
SEEDS = str(ROOT / "seeds")
UPSTREAM_FIELDS = {"seed", "baseline_target", "direct_target", "transferred", "transfer_gain", "learned_skill_tail"}


@pytest.fixture
def cli(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> Callable[..., subprocess.CompletedProcess[str]]:
    """`python -m pytest_skilltransfer ...` run in this process: its `main`, with the pytest run it starts run as
    pytester runs pytest in-process (`inline_run`: the modules and paths the run adds are dropped after it)."""
    from pytest_skilltransfer.commands.cli import main

    monkeypatch.setattr(pytest, "main", lambda args, plugins=(): pytester.inline_run(*args, plugins=plugins).ret)

    def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        with monkeypatch.context() as patch:
            patch.chdir(cwd or ROOT)
            patch.setenv("PYTEST_ADDOPTS", "-p no:randomly")
            capsys.readouterr()
            try:
                code = main(list(args))
            except SystemExit as exit_:
                code = exit_.code if isinstance(exit_.code, int) else 2
            out, err = capsys.readouterr()
        return subprocess.CompletedProcess(["python", "-m", "pytest_skilltransfer", *args], code, out, err)

    return run


def test_text_mode_prints_the_plugin_table_and_summary(cli):
    proc = cli("--source", "sim-small", "--target", "sim-large", "--data-root", SEEDS,
               "--seeds", "incident-summary,ticket-router")
    assert proc.returncode == 0, proc.stderr
    # the evidence is the committed snapshots': each item keeps the family it was judged in (the main job's 40)
    assert ("=== transfer sim-small -> sim-large: of 2 (seed, pair), Bonferroni over 40 item(s) (FWER 5%): "
            "1 transfer, 0 hurt, 1 no effect shown") in proc.stdout
    rows = [line for line in proc.stdout.splitlines() if line.startswith(("incident-summary ", "ticket-router "))]
    assert len(rows) == 2


def test_json_mode_has_upstream_and_own_fields(cli):
    proc = cli("--source", "sim-small", "--target", "sim-large", "--data-root", SEEDS, "--seeds", "release-advisor",
               "--no-direct", "--json", "--samples", "2")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert {"experiment", "source", "target", "tokens_source", "tokens_target", "tokens_optimizer", "results"} <= set(report)
    assert report["source"] == ["sim-small"] and report["tokens_source"] > 0
    result = report["results"][0]
    assert UPSTREAM_FIELDS <= set(result)
    assert result["direct_target"] is None and result["efficiency"] is None
    assert result["learned_skill"].endswith(result["learned_skill_tail"])
    assert {"ci_low", "ci_high", "mean", "n"} <= set(result["gain"])
    assert all(len(t["samples"]) == 2 for t in result["scores"]["baseline"]["tasks"])
    assert result["cost"]["total_usd"] == 0.0 and result["config"]["samples"] == 2


def test_help_lists_every_option_and_no_hidden_ones(cli, tmp_path):
    proc = cli("--help")
    assert proc.returncode == 0
    for option in ("--source", "--target", "--pair", "--optimizer", "--data-root", "--seeds", "--json",
                   "--transfer-min-gain", "--record-mode", "--max-concurrency", "skilltransfer_nights)"):
        assert option in proc.stdout
    assert "--source-backend" not in proc.stdout
    shutil.copytree(ROOT / "seeds" / "docs-style", tmp_path / "docs-style")
    missing = cli("--data-root", str(tmp_path), cwd=tmp_path)  # no configuration: the error names the options
    assert missing.returncode == 2 and "--source and --target" in missing.stdout + missing.stderr


def test_cli_reads_the_project_tables_ini_keys_and_gates(cli, tmp_path):
    """The pyproject aliases, ini matrix (comma lists) and gates apply as in pytest; a failed gate exits 1."""
    shutil.copytree(ROOT / "seeds" / "docs-style", tmp_path / "seeds" / "docs-style", ignore=shutil.ignore_patterns("__snapshots__"))
    (tmp_path / "pyproject.toml").write_text(textwrap.dedent("""
        [tool.pytest.ini_options]
        skilltransfer_source = ["cheap,sim-large"]
        skilltransfer_target = ["sim-large"]
        skilltransfer_min_gain = "0.5"

        [tool.skilltransfer.models]
        cheap = "sim-small"
    """))
    proc = cli("--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    pairs = [(r["source"], r["target"]) for r in json.loads(proc.stdout)["results"]]
    # the alias cheap is sim-small; sim-large -> sim-large is the direct reference of the other pair, not an item
    assert pairs == [("sim-small", "sim-large")]
    gated = cli("--transfer-min-gain", "1.5", cwd=tmp_path)
    assert gated.returncode == 1
    assert "is below min_gain +1.500" in gated.stdout


def test_unknown_model_lists_known_names(cli):
    proc = cli("--source", "sim-smal", "--target", "sim-large", "--data-root", SEEDS)
    assert proc.returncode == 2
    assert "unknown model 'sim-smal'" in proc.stderr and "sim-small" in proc.stderr


def test_unknown_seed_and_missing_root(cli, tmp_path):
    unknown = cli("--source", "sim-small", "--target", "sim-large", "--data-root", SEEDS, "--seeds", "nope")
    assert unknown.returncode == 2 and "unknown seed(s) nope" in unknown.stderr
    empty = cli("--source", "sim-small", "--target", "sim-large", "--data-root", str(tmp_path))
    assert empty.returncode == 2 and "no seeds found under" in empty.stderr


def test_broken_seed_reports_file_and_line_without_traceback(cli, tmp_path):
    seed = tmp_path / "broken"
    seed.mkdir()
    (seed / "SKILL.md").write_text("# S\n")
    (seed / "benchmark.jsonl").write_text('{"task_id": "a", "task": "t", "judge": {"kind": "rule", "checks": [{"op": "nope"}]}}\n')
    (seed / "held-out.jsonl").write_text("{oops\n")
    proc = cli("--source", "sim-small", "--target", "sim-large", "--data-root", str(tmp_path))
    assert proc.returncode == 2
    assert f"{seed / 'benchmark.jsonl'}:1: task 'a': check 1: unknown op 'nope'" in proc.stderr
    assert f"{seed / 'held-out.jsonl'}:1: malformed JSON" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("flag, value, message", [("--nights", "0", "--nights: must be at least 1"),
                                                  ("--limit-holdout", "-1", "--limit-holdout: must be at least 0")])
def test_bad_numbers_are_refused(cli, flag, value, message):
    proc = cli("--source", "sim-small", "--target", "sim-large", "--data-root", SEEDS, flag, value)
    assert proc.returncode == 2
    assert message in proc.stderr


def test_table_labels_hand_written_tests():
    from plugin_support import item_record
    from pytest_skilltransfer.reports.report import table_rows

    base = {"seed": "s", "source": "a", "target": "b", "baseline_target": 0.0, "transferred": 1.0, "direct_target": None,
            "gain": {"mean": 1.0, "ci_low": 1.0, "ci_high": 1.0, "n": 1, "p_value": 1.0}, "efficiency": None,
            "cost": {"calls": 1, "tokens": 2, "total_usd": 0.0}}
    rows = table_rows([item_record(**base, item="seeds/s/SKILL.md::transfer[a->b]"),
                       item_record(**base, item="seeds/test_x.py::test_gate")])
    assert [r[0] for r in rows] == ["s", "s (test_gate)"]


def test_price_difference_compares_source_and_direct_optimization():
    from plugin_support import item_record
    from pytest_skilltransfer.reports.report import price_difference

    cost = lambda src, direct, seed="s", source="a", target="b": item_record(  # noqa: E731
        seed=seed, source=source, target=target, optimizer=source,
        cost={"optimize_source_usd": src, "optimize_direct_usd": direct})
    assert price_difference([cost(0.01, 0.08), cost(0.01, 0.12, seed="t")]) == (
        "optimization cost: on source $0.0200 vs direct on target $0.2000 (10.0x)")
    # one source optimization shared by two targets is counted once
    assert price_difference([cost(0.01, 0.08), cost(0.01, 0.12, target="c")]) == (
        "optimization cost: on source $0.0100 vs direct on target $0.2000 (20.0x)")
    assert price_difference([cost(None, 0.1)]) is None
    assert price_difference([cost(0.01, None)]) is None
