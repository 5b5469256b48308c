"""The plan is an upper bound: for many configurations, recorded against a loopback provider, the requests
sent and the dollars spent never exceed what `--plan` printed, per item and in total.

Each configuration prints its ratios actual / planned (run with -s to see them).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from fake_provider import FakeProvider
from plugin_support import PROJECT_SEEDS, TOY_CONFTEST, copy_project_seed, loopback_project, make_seed

PRICES = '"fake-*" = { input = 1.0, output = 5.0, cache_write = 1.25, cache_read = 0.1 }'

CONFIGURATIONS = {
    # name: (seeds, command-line options)
    "plain": (("alpha",), ["--pair=small:large", "--nights=1"]),
    "corpus-samples": (("corpus",), ["--pair=large:small", "--nights=2", "--samples=2"]),
    "project-seed-restarts": (("alert-intake",), ["--pair=small:large", "--restarts=2"]),
    "rubric-judge-calibration": (("change-review",), ["--pair=large:small", "--judge=judge", "--judge-samples=3", "--judge-min-accuracy=0",
                                                      "--limit-test=6", "--limit-holdout=4", "--limit-replay=4"]),
    "fixed-context": (("context",), ["--pair=small:large", "--nights=1"]),
    "pairs-no-direct-xdist": (("alpha", "beta"), ["--pair=small:large", "--pair=large:small", "--no-direct",
                                                 "-n", "2"]),
    # a seed lowering the agent's reply limit, every reply billed at its whole max_tokens (the worst case)
    "seed-max-tokens-full-replies": (("short",), ["--pair=small:large", "--nights=1"]),
}
SHORT_MAX_TOKENS = 64


def _seeds(root: Path, names: tuple[str, ...]) -> None:
    for name in names:
        if (PROJECT_SEEDS / name).is_dir():
            copy_project_seed(root, name)
        elif name == "corpus":
            seed = make_seed(root, name, tasks=3)
            (seed / "brain").mkdir()
            for i in range(4):
                (seed / "brain" / f"ticket-{i}.md").write_text(f"# Ticket {i}\n\nRoute ticket {i} to team {i}.\n")
        elif name == "context":  # a context far longer than the tasks: the bound holds only if it counts it
            seed = make_seed(root, name)
            turns = [{"role": "user", "content": "Route ticket 99 " + "with details " * 3000},
                     {"role": "assistant", "content": "Team: billing\n" + "because of the invoice. " * 3000}]
            (seed / "context.jsonl").write_text("".join(json.dumps(t) + "\n" for t in turns))
        elif name == "short":
            seed = make_seed(root, name)
            (seed / "seed.toml").write_text(f"max_tokens = {SHORT_MAX_TOKENS}\n")
        else:
            make_seed(root, name)


def _rows(stdout: list[str]) -> tuple[dict[str, tuple[int, float]], tuple[int, float, float]]:
    items, total = {}, None
    for line in stdout:
        cells = re.split(r"\s{2,}", line.strip())
        if line.startswith("seeds/"):
            items[cells[0]] = (int(cells[1]), float(cells[4]))
        elif line.startswith("total (shared phases once)"):
            total = (int(cells[1]), float(cells[4]), float(cells[5]))
    assert items and total is not None, "\n".join(stdout)
    return items, total


@pytest.mark.parametrize("name", list(CONFIGURATIONS))
def test_requests_and_dollars_never_exceed_the_plan(pytester: pytest.Pytester, name: str) -> None:
    seeds, options = CONFIGURATIONS[name]
    with FakeProvider() as fake:
        fake.prompt_cache = True
        fake.report_max_output = name == "seed-max-tokens-full-replies"
        loopback_project(pytester, fake, PRICES, judge="fake-judge")
        _seeds(pytester.path / "seeds", seeds)
        planned = pytester.runpytest_subprocess("--plan", *options)
        assert planned.ret == 0, planned.stdout.str()
        assert fake.received == []
        items, (total_calls, total_usd, expected_usd) = _rows(planned.stdout.lines)

        run = pytester.runpytest_subprocess("--record-mode=once", "--snapshot-update", "--max-cost=100000",
                                            "--skilltransfer-json=r.json", "-p", "no:randomly", *options)
        report = json.loads((pytester.path / "r.json").read_text())
        assert len(report["results"]) == len(items), run.stdout.str()
        sent, spent = len(fake.received), report["budget"]["charged_usd"]
        if "short" in seeds:
            agent = [r["body"]["max_tokens"] for r in fake.received if "Route ticket" in json.dumps(r["body"])
                     and "verdict" not in json.dumps(r["body"]).lower() and r["body"].get("max_tokens", 0) < 1000]
            assert agent and set(agent) == {SHORT_MAX_TOKENS}, "every attempt is sent the seed's max_tokens"

    lines = [f"{name}: total requests {sent}/{total_calls} = {sent / total_calls:.3f}, "
             f"dollars {spent:.4f}/{total_usd:.4f} = {spent / total_usd:.3f} (expected ${expected_usd:.4f}: "
             f"actual/expected {spent / expected_usd:.2f})"]
    assert sent <= total_calls
    assert spent <= total_usd
    for result in report["results"]:
        calls_bound, usd_bound = items[result["item"]]
        calls, usd = result["cost"]["calls"], result["cost"]["total_usd"]
        lines.append(f"  {result['item']}: calls {calls}/{calls_bound} = {calls / calls_bound:.3f}, "
                     f"dollars {usd:.4f}/{usd_bound:.4f} = {usd / usd_bound:.3f}")
        assert calls <= calls_bound
        assert usd <= usd_bound
    print("\n".join(lines))


AA_TEST = '''
import pytest

@pytest.mark.skilltransfer(seed="seeds/alpha", source="small", target="large")
def test_aa(transfer_result, transfer_aa):
    pass
'''


def test_an_aa_check_is_counted_by_the_plan(pytester: pytest.Pytester) -> None:
    """A hand-written test's A/A check scores the transferred skill again: the plan counts those calls too."""
    with FakeProvider() as fake:
        pytester.makeconftest(TOY_CONFTEST)
        pytester.makeini("[pytest]\ntestpaths = seeds test_hand_aa.py\n")
        make_seed(pytester.path / "seeds", "alpha")
        pytester.makepyfile(test_hand_aa=AA_TEST)  # not test_aa: the suite has a module of that name, which an in-process run has imported
        pytester.makepyprojecttoml(f'''
            [tool.skilltransfer.models]
            small = "anthropic:fake-small@{fake.anthropic_url}"
            large = "openai:fake-large@{fake.openai_url}"
            [tool.skilltransfer.prices]
            {PRICES}
        ''')
        planned = pytester.runpytest_subprocess("--plan", "--nights=1", "--pair=small:large")
        assert planned.ret == 0, planned.stdout.str()
        rows = {re.split(r"\s{2,}", line.strip())[0]: re.split(r"\s{2,}", line.strip())
                for line in planned.stdout.lines if line.startswith(("seeds/", "test_hand_aa.py", "total "))}
        matrix = int(next(cells[1] for key, cells in rows.items() if key.startswith("seeds/")))
        assert int(rows["test_hand_aa.py::test_aa"][1]) == matrix + 4  # the second scoring of the 4 held-out tasks
        total = int(next(cells[1] for key, cells in rows.items() if key.startswith("total ")))
        run = pytester.runpytest_subprocess("--record-mode=once", "--snapshot-update", "--nights=1", "--pair=small:large")
        run.assert_outcomes(passed=2)
        assert 0 < len(fake.received) <= total
        replayed = pytester.runpytest_subprocess("--plan", "--nights=1", "--pair=small:large")
        assert any(line.startswith("test_hand_aa.py::test_aa") and "all recorded" in line for line in replayed.stdout.lines)
        # sampled at a temperature, neither scoring of the A/A check is recorded: the plan's replay finds the miss
        pytester.makepyfile(test_hand_aa=AA_TEST.replace("def test_aa", "@pytest.mark.skilltransfer_aa(temperature=0.8)\ndef test_aa"))
        sampled = pytester.runpytest_subprocess("--plan", "--nights=1", "--pair=small:large")
        row = next(line for line in sampled.stdout.lines if line.startswith("test_hand_aa.py::test_aa"))
        assert "then a miss in aa-check" in row and int(re.split(r"\s{2,}", row.strip())[1]) == matrix + 8, row
