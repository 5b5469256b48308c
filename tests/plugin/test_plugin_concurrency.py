"""Concurrent calls inside a seed: any --max-concurrency gives the same results, cassettes and snapshots."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
from fake_provider import FakeProvider
from plugin_support import project


def _setup(pytester: pytest.Pytester, fake: FakeProvider) -> None:
    project(pytester, ini="skilltransfer_pair = small:large\nskilltransfer_nights = 1\n", seeds=("alpha",))
    pytester.makepyprojecttoml(f'''
        [tool.skilltransfer.models]
        small = "anthropic:fake-small@{fake.anthropic_url}"
        large = "openai:fake-large@{fake.openai_url}"
    ''')


def _files(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


def test_any_concurrency_records_the_same_results_cassettes_and_snapshots(pytester: pytest.Pytester) -> None:
    runs = {}
    fake = FakeProvider().start()
    fake.delay = 0.01
    _setup(pytester, fake)
    for workers in (1, 6):
        for folder in ("cassettes", "seeds/alpha/__snapshots__"):
            shutil.rmtree(pytester.path / folder, ignore_errors=True)
        fake.received.clear()
        result = pytester.runpytest_subprocess("--samples=2", "--record-mode=once", "--snapshot-update",
                                               f"--max-concurrency={workers}", "--skilltransfer-json=r.json")
        bodies = Counter(json.dumps(r["body"], sort_keys=True) for r in fake.received)
        assert max(bodies.values()) == 1, "a request was sent twice"
        report = json.loads((pytester.path / "r.json").read_text())
        runs[workers] = (outcomes_of(result), report, len(fake.received), _files(pytester.path / "cassettes"),
                         _files(pytester.path / "seeds" / "alpha" / "__snapshots__"))
    fake.stop()
    assert runs[1] == runs[6]
    assert runs[1][2] > 10


def outcomes_of(result: pytest.RunResult) -> dict[str, int]:
    return result.parseoutcomes()


def test_rate_limits_show_with_verbose_and_the_run_still_records(pytester: pytest.Pytester) -> None:
    fake = FakeProvider().start()
    _setup(pytester, fake)
    fake.fail_next(429, retry_after_ms=10)
    result = pytester.runpytest_subprocess("-v", "--record-mode=once", "--snapshot-update", "--max-concurrency=4",
                                           "--max-concurrency=small=2")
    fake.stop()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*HTTP 429 (rate limited), concurrency * -> *; new calls wait 0.01s (retry-after)*"])


@pytest.mark.parametrize("bad", ["0", "many", "=3", "small=0"])
def test_bad_concurrency_is_a_usage_error(pytester: pytest.Pytester, bad: str) -> None:
    project(pytester, seeds=("alpha",))
    result = pytester.runpytest_subprocess(f"--max-concurrency={bad}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--max-concurrency*"])
