"""Every count a user sets has a documented maximum: beyond it a usage error, never a hang, traceback or MemoryError."""

from __future__ import annotations

import time

import pytest
from plugin_support import project

from pytest_skilltransfer.engine.results import ProtocolConfig
from pytest_skilltransfer.guards.bounds import MAXIMA

HUGE = "1000000000"


@pytest.mark.parametrize("args, message", [
    (("--samples", HUGE), f"--samples: must be at most {MAXIMA['samples']} (the documented maximum), got {HUGE}"),
    (("--nights", "1000"), f"--nights: must be at most {MAXIMA['nights']} (the documented maximum), got 1000"),
    (("--restarts", "1000000"), f"--restarts: must be at most {MAXIMA['restarts']}"),
    (("--edit-budget", HUGE), f"--edit-budget: must be at most {MAXIMA['edit_budget']}"),
    (("--judge-samples", HUGE), f"--judge-samples: must be at most {MAXIMA['judge_samples']}"),
    (("--provider-retries", HUGE), f"--provider-retries: must be at most {MAXIMA['provider_retries']}"),
    (("--max-concurrency", HUGE), f"--max-concurrency: must be at most {MAXIMA['max_concurrency']}"),
    (("--samples", "9" * 5000), "--samples: expected an integer, got a 5000-character value"),
    (("--samples", HUGE, "--plan"), f"--samples: must be at most {MAXIMA['samples']}"),
    (("--nights", "1000", "--plan"), f"--nights: must be at most {MAXIMA['nights']}"),
])
def test_an_oversize_option_is_a_usage_error(pytester: pytest.Pytester, args: tuple[str, ...], message: str) -> None:
    project(pytester, seeds=("alpha",))
    started = time.monotonic()
    result = pytester.runpytest_subprocess("--pair", "toy-a:toy-b", *args)
    assert time.monotonic() - started < 60
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    output = result.stdout.str() + result.stderr.str()
    assert message in output and "Traceback" not in output and "MemoryError" not in output


def test_an_oversize_ini_key_names_the_key(pytester: pytest.Pytester) -> None:
    project(pytester, ini=f"skilltransfer_samples = {HUGE}\n", seeds=("alpha",))
    result = pytester.runpytest_subprocess("--pair", "toy-a:toy-b", "--plan")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"skilltransfer_samples: must be at most {MAXIMA['samples']}" in result.stderr.str()


def test_oversize_judge_samples_in_seed_toml_is_a_seed_problem(pytester: pytest.Pytester) -> None:
    seeds = project(pytester, seeds=("alpha",))
    (seeds / "alpha" / "seed.toml").write_text(f"[judge]\nsamples = {HUGE}\n")
    started = time.monotonic()
    result = pytester.runpytest_subprocess("--pair", "toy-a:toy-b")
    assert time.monotonic() - started < 60
    assert result.ret != 0
    assert f"[judge]: 'samples' must be at most {MAXIMA['judge_samples']} (the documented maximum)" \
        in result.stdout.str()


def test_the_protocol_refuses_oversize_settings_too() -> None:
    with pytest.raises(ValueError, match=f"samples must be at most {MAXIMA['samples']}"):
        ProtocolConfig(samples=10**9).validate()
    ProtocolConfig(**{k: MAXIMA[k] for k in ("nights", "edit_budget", "samples", "restarts")}).validate()
