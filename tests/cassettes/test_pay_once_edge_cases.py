"""The smaller pay-once items, against the loopback batch server: truncated tokens redacted, no traceback from
`check`, bounded durations, the right fix named for batch prices, item errors retried by the printed command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from batch_provider import BatchProvider
from plugin_support import project
from pytest_skilltransfer.cassettes import recording
from pytest_skilltransfer.models.base import Message, Request
from pytest_skilltransfer.models.batch import BatchSettings, configure_batch
from pytest_skilltransfer.models.providers import build_model

FAST = ("--transfer-batch", "--transfer-batch-gather=0.3", "--transfer-batch-poll=0.05")
TRUNCATED = "ghp_" + "Zq3vK8mW2xR7tY5nB1cD9fG4hJ"  # 26 of a GitHub token's 36 characters


@pytest.mark.parametrize("cut", [8, 26])
def test_a_reply_that_cuts_a_known_token_short_is_stored_redacted(tmp_path: Path, cut: int) -> None:
    token = TRUNCATED[:4 + cut]
    configure_batch(BatchSettings(gather_s=0.05, poll_s=0.02), tmp_path)
    try:
        with BatchProvider() as fake:
            model = build_model(f"anthropic:echo@{fake.anthropic_url}")
            with recording(tmp_path, "seed", "new_episodes"):
                reply = model.complete(Request(system="s", messages=(Message("user", f"echo: the token is {token}"),),
                                               max_tokens=64))
            assert fake.created  # answered through a batch
    finally:
        configure_batch(None)
    stored = (tmp_path / "seed" / "echo.yaml").read_text()
    assert token not in reply.text and "[redacted: GitHub token]" in reply.text
    assert token[4:] not in stored and "[redacted: GitHub token]" in stored


def test_check_with_a_catastrophic_pattern_prints_no_traceback(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_skilltransfer.commands.cli import main
    from plugin_support import make_seed

    seed = make_seed(tmp_path, "alpha")
    line = json.dumps({"task_id": "hd-00", "task": "Route ticket 0",
                       "judge": {"kind": "rule", "checks": [{"op": "regex", "arg": "(a|aa)+$"}]}})
    rest = (seed / "held-out.jsonl").read_text().splitlines()[1:]
    (seed / "held-out.jsonl").write_text("\n".join([line, *rest]) + "\n")
    answer = tmp_path / "answer.txt"
    answer.write_text("a" * 60 + "!")
    code = main(["check", str(seed), "hd-00", str(answer)])
    out = capsys.readouterr()
    assert code == 1 and "Traceback" not in out.out + out.err
    assert "FAIL" in out.out and "ran past its 1 s limit" in out.out and "held-out.jsonl:1" in out.out


def _project(pytester: pytest.Pytester, fake: BatchProvider, prices: str = "") -> None:
    project(pytester, ini="skilltransfer_pair = small:large\nskilltransfer_nights = 1\n", seeds=("alpha",))
    _models(pytester, fake, prices)


def _models(pytester: pytest.Pytester, fake: BatchProvider, prices: str = "") -> None:
    pytester.makepyprojecttoml(f'''
        [tool.skilltransfer.models]
        small = "anthropic:fake-small@{fake.anthropic_url}"
        large = "openai:fake-large@{fake.openai_url}"
        {prices}
    ''')


def test_max_cost_in_the_batch_lane_names_the_fix_that_works(pytester: pytest.Pytester) -> None:
    standard = '[tool.skilltransfer.prices]\n"fake-small" = { input = 1.0, output = 2.0 }\n' \
               '"fake-large" = { input = 1.0, output = 2.0 }'
    with BatchProvider() as fake:
        _project(pytester, fake, standard)
        refused = pytester.runpytest_subprocess("--record-mode=once", "--snapshot-update", "--max-cost=5", *FAST,
                                                "--limit-replay=2", "--limit-holdout=2")
        out = refused.stdout.str() + refused.stderr.str()
        assert "has no price in the batch lane" in out and fake.total_paid == 0 and not fake.created
        assert ('give its entry batch rates (the [lanes.batch] table of prices.toml does not name it): '
                '[tool.skilltransfer.prices] "fake-large" = { input = 1, output = 2, batch = { input = <$/Mtok>, '
                'output = <$/Mtok> } }') in out, out
        fixed = standard.replace("output = 2.0 }", "output = 2.0, batch = { input = 0.5, output = 1.0 } }")
        _models(pytester, fake, fixed)  # the fix as the message words it
        pytester.runpytest_subprocess("--record-mode=once", "--snapshot-update", "--max-cost=5", *FAST,
                                      "--limit-replay=2", "--limit-holdout=2").assert_outcomes(passed=1)


def test_a_batch_item_error_is_retried_by_the_command_its_message_prints(pytester: pytest.Pytester) -> None:
    with BatchProvider() as fake:
        _project(pytester, fake)
        fake.unlucky = 3  # the first request fails in all of its 3 batches
        first = pytester.runpytest_subprocess("--record-mode=once", "--snapshot-update", *FAST)
        first.assert_outcomes(errors=1)
        out = first.stdout.str()
        assert "failed in 3 batch(es)" in out and "run the same command with --record-mode=new_episodes" in out, out
        paid = fake.total_paid
        again = pytester.runpytest_subprocess("--record-mode=new_episodes", "--snapshot-update", *FAST)
        again.assert_outcomes(passed=1)
        assert not fake.paid_twice() and fake.total_paid > paid
        fake.stop()
        pytester.runpytest_subprocess("--record-mode=none").assert_outcomes(passed=1)
