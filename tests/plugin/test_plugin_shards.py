"""Shards: `--shard-id/--num-shards` keep every item of a seed together, cover all items, and balance."""

from __future__ import annotations

import json

import pytest

from plugin_support import project
from pytest_skilltransfer.plugin.shards import deal

MATRIX = "skilltransfer_source = toy-a\nskilltransfer_target = toy-b toy-half\n"
SEEDS = ("alpha", "beta", "gamma", "delta", "epsilon")
HAND_WRITTEN = '''
import pytest

@pytest.mark.skilltransfer(seed="seeds/gamma", source="toy-a", target="toy-b")
def test_gamma_by_hand(transfer_result):
    assert transfer_result.transferred.hard.mean == 1.0
'''


def _shard(pytester: pytest.Pytester, shard: int, count: int, *args: str) -> tuple[pytest.RunResult, dict]:
    path = pytester.path / f"shard-{shard}.json"
    result = pytester.runpytest_subprocess(".", f"--shard-id={shard}", f"--num-shards={count}",
                                           f"--skilltransfer-json={path}", *args)
    return result, json.loads(path.read_text())


def test_shards_keep_seeds_whole_cover_every_item_once_and_report_the_rest_deselected(pytester: pytest.Pytester) -> None:
    project(pytester, ini=MATRIX, seeds=SEEDS)
    pytester.makepyfile(test_by_hand=HAND_WRITTEN)
    pytester.runpytest_subprocess(".", "--snapshot-update").assert_outcomes(passed=11)
    records, ran = [], []
    for shard in range(3):
        result, report = _shard(pytester, shard, 3)
        record = report["shard"]
        records.append(record)
        ran += [r["item"] for r in report["results"]]
        result.assert_outcomes(passed=len(record["items"]), deselected=11 - len(record["items"]))
        result.stdout.fnmatch_lines([f"skilltransfer shard {shard} of 3 (ids 0-2): * seed(s), "
                                     f"{len(record['items'])} item(s) ({11 - len(record['items'])} of other shards "
                                     "deselected); loads by item count: [[]3, 4, 4[]]"])
        assert {r["seed"] for r in report["results"]} == {s.removeprefix("seeds/") for s in record["seeds"]}
    assert sorted(ran) == sorted(i for r in records for i in r["items"]) and len(ran) == len(set(ran)) == 11
    seeds = [s for r in records for s in r["seeds"]]
    assert sorted(seeds) == sorted(f"seeds/{s}" for s in SEEDS)  # each seed in exactly one shard
    gamma = next(r for r in records if "seeds/gamma" in r["seeds"])
    assert "test_by_hand.py::test_gamma_by_hand" in gamma["items"]  # the hand-written test stays with its seed
    again = _shard(pytester, 1, 3)[1]["shard"]
    assert again == records[1]  # deterministic


def test_xdist_runs_the_same_shard(pytester: pytest.Pytester) -> None:
    project(pytester, ini=MATRIX, seeds=SEEDS[:3])
    pytester.runpytest_subprocess("--snapshot-update").assert_outcomes(passed=6)
    serial = _shard(pytester, 0, 2)[1]
    result, parallel = _shard(pytester, 0, 2, "-n", "2")
    assert parallel["shard"] == serial["shard"] and parallel["results"] == serial["results"]
    result.stdout.fnmatch_lines(["skilltransfer shard 0 of 2 (ids 0-1): 2 seed(s), 4 item(s) (2 of other shards deselected)*"])


def test_a_durations_file_balances_by_recorded_seconds(pytester: pytest.Pytester) -> None:
    project(pytester, ini=MATRIX, seeds=SEEDS[:4])
    seconds = {"alpha": 100.0, "beta": 1.0, "delta": 1.0}  # gamma has no recorded duration
    ids = [line for line in pytester.runpytest_subprocess("--co", "-q").outlines if "::" in line]
    durations = {nodeid: value for nodeid in ids for seed, value in seconds.items() if seed in nodeid.split("::")[0]}
    assert len(durations) == 6
    (pytester.path / ".test_durations").write_text(json.dumps(durations))
    result, report = _shard(pytester, 0, 2, "--snapshot-update")
    assert report["shard"]["seeds"] == ["seeds/alpha"] and report["shard"]["weighed_by"] == "durations"
    # an unknown item counts as the mean known one (34 s): gamma 68 + beta 2 + delta 2 against alpha's 200
    result.stdout.fnmatch_lines(["*1 seed(s), 2 item(s) (6 of other shards deselected); loads by recorded seconds: [[]200, 72[]]"])


def test_dealing_is_heaviest_first_onto_the_lightest_shard() -> None:
    weights = {"seed:a": 3.0, "seed:b": 2.0, "seed:c": 2.0, "seed:d": 2.0, "file:t.py": 1.0}
    assert deal(weights, 2) == {"seed:a": 0, "seed:b": 1, "seed:c": 1, "seed:d": 0, "file:t.py": 1}
    assert deal(weights, 1) == dict.fromkeys(weights, 0)


@pytest.mark.parametrize("args, message", [
    (("--shard-id=0",), "--shard-id and --num-shards go together*"),
    (("--shard-id=3", "--num-shards=3"), "--shard-id: shard ids run from 0 to 2 for 3 shard(s), got 3"),
    (("--shard-id=0", "--num-shards=0"), "--num-shards: must be at least 1, got 0"),
    (("--shard-id=0", "--num-shards=2", "--shard-durations=nope.json"), "--shard-durations: *nope.json is not a file"),
])
def test_bad_shard_options_are_usage_errors(pytester: pytest.Pytester, args: tuple[str, ...], message: str) -> None:
    project(pytester, ini=MATRIX, seeds=("alpha",))
    result = pytester.runpytest_subprocess(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{message}"])
