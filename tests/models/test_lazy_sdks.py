"""A run imports only the SDKs its models need: none for the simulator, one for one provider."""

from __future__ import annotations

import json
import sys
import threading
import time
import types
from pathlib import Path

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


def test_a_call_waits_for_its_own_sdk_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One SDK is imported at a time, but a call that waited while its SDK was imported goes on when that import
    ends, not after the import of the other SDK queued behind it."""
    from pytest_skilltransfer.models import sdk_common

    gates = types.SimpleNamespace(**{name: threading.Event() for name in ("a", "b", "a_started", "b_started")})
    monkeypatch.setitem(sys.modules, "skilltransfer_import_gates", gates)
    for name in ("a", "b"):
        (tmp_path / f"sdk_{name}_under_test.py").write_text(
            f"import skilltransfer_import_gates as gates\ngates.{name}_started.set()\nassert gates.{name}.wait(10)\n")
        monkeypatch.delitem(sys.modules, f"sdk_{name}_under_test", raising=False)
    monkeypatch.syspath_prepend(tmp_path)
    monkeypatch.setattr(sdk_common.gc, "freeze", lambda: None)  # the test process's heap is left as it is
    done: dict[str, object] = {}

    def needs(module: str, key: str) -> threading.Thread:
        thread = threading.Thread(target=lambda: done.__setitem__(key, sdk_common.import_sdk(module)), daemon=True)
        thread.start()
        return thread

    importing_a = needs("sdk_a_under_test", "first")
    assert gates.a_started.wait(10)
    waiting_for_a = needs("sdk_a_under_test", "second")
    waiting_for_b = needs("sdk_b_under_test", "b")
    for _ in range(10_000):  # until the call needing b holds b's lock (it then waits for the one import lock)
        lock = sdk_common._module_locks.get("sdk_b_under_test")
        if lock is not None and lock.locked():
            break
        time.sleep(0.001)
    gates.a.set()
    importing_a.join(10)
    waiting_for_a.join(10)
    assert "second" in done and done["second"] is done["first"]  # while b's import may still be under way
    gates.b.set()
    waiting_for_b.join(10)
    assert "b" in done
