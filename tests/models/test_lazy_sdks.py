"""A run imports only the SDKs its models need: none for the simulator, one for one provider."""

from __future__ import annotations

import json

import pytest
from fake_provider import FakeProvider
from plugin_support import make_seed

REPORT_MODULES = '''
import json, sys
def pytest_sessionfinish(session):
    with open("modules.json", "w") as handle:
        json.dump({name: name in sys.modules for name in ("anthropic", "openai")}, handle)
'''


@pytest.mark.parametrize(("pair", "expected"), [
    ("sim-small:sim-large", {"anthropic": False, "openai": False}),
    ("claude:claude", {"anthropic": True, "openai": False}),
    ("gpt:gpt", {"anthropic": False, "openai": True}),
])
def test_only_the_needed_sdks_are_imported(pytester: pytest.Pytester, pair: str, expected: dict) -> None:
    with FakeProvider() as fake:
        pytester.makeconftest(REPORT_MODULES)
        pytester.makeini(f"[pytest]\nskilltransfer_pair = {pair}\nskilltransfer_nights = 1\n"
                         "skilltransfer_limit_replay = 2\nskilltransfer_limit_holdout = 2\n")
        pytester.makepyprojecttoml(f'''
            [tool.skilltransfer.models]
            claude = "anthropic:fake-claude@{fake.anthropic_url}"
            gpt = "openai:fake-gpt@{fake.openai_url}"
        ''')
        make_seed(pytester.path / "seeds", "alpha")
        pytester.runpytest_subprocess("seeds", "--record-mode=once", "--snapshot-update", "-p", "no:randomly")
    assert json.loads((pytester.path / "modules.json").read_text()) == expected
