"""A replay without the SDK answers exactly what the path of record (the SDK through vcrpy) answers,
and only while the installed SDK is verified to build the recorded request bytes."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fake_provider import FakeProvider

from pytest_skilltransfer.cassettes import CassetteMiss, recording
from pytest_skilltransfer.cassettes import index as cassette_index
from pytest_skilltransfer.cassettes import store
from pytest_skilltransfer.cassettes.reindex import run as reindex
from pytest_skilltransfer.models import fidelity, sdk_common
from pytest_skilltransfer.models.base import Message, Request, ToolCall, ToolSpec
from pytest_skilltransfer.models.providers import build_model
from pytest_skilltransfer.models.wire import wire_named

ROOT = Path(__file__).resolve().parents[2]
SEARCH = ToolSpec("search", "Search the notes.", {"type": "object", "properties": {"query": {"type": "string"}}})


def ask(i: int) -> Request:
    return Request(system="You are terse.", messages=(Message("user", f"Question {i}? Grüße ✓"),), max_tokens=32,
                   sample_id=i)


def tool_turn(i: int) -> Request:
    return Request(system="Use the tools.", tools=(SEARCH,), sample_id=i, messages=(
        Message("user", "find x"),
        Message("assistant", "Looking.", tool_calls=(ToolCall("c1", "search", {"query": "x", "n": i}),)),
        Message("tool", "found: x", tool_call_id="c1")))


REQUESTS = [ask(0), ask(1), tool_turn(2)]


@pytest.fixture(params=["anthropic", "openai"])
def recorded(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, list[Any], Any]:
    """A seed recorded against the loopback fake: (model file, replies, model)."""
    with FakeProvider() as fake:
        fake.require_key = False
        url = fake.anthropic_url if request.param == "anthropic" else fake.openai_url
        model = build_model(f"{request.param}:fidelity@{url}")
        with recording(tmp_path, "seed", "once"):
            replies = [model.complete(r) for r in REQUESTS]
    return tmp_path / "seed" / "fidelity.yaml", replies, model


def _count_clients(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The SDK clients built from now on (none are cached), as a list that grows."""
    built: list[Any] = []
    real = sdk_common.make_client
    monkeypatch.setattr(sdk_common, "_clients", lambda store={}: store)  # a store of its own
    for wire in ("anthropic_wire", "openai_wire"):
        monkeypatch.setattr(f"pytest_skilltransfer.models.{wire}.make_client",
                            lambda *a, **k: built.append(a) or real(*a, **k))
    return built


def test_recording_stamps_the_index_with_the_installed_sdk(recorded: tuple[Path, list[Any], Any]) -> None:
    path, _, model = recorded
    head = json.loads(cassette_index.index_path(path).read_text())
    assert head["sdk"] == fidelity.fingerprint(model.target.provider)
    assert head["sdk"].startswith(f"{model.target.provider}==") and "pydantic==" in head["sdk"]


def test_a_verified_cassette_replays_without_the_sdk_as_the_path_of_record_does(
        recorded: tuple[Path, list[Any], Any], monkeypatch: pytest.MonkeyPatch) -> None:
    path, replies, model = recorded
    with recording(path.parents[1], "seed", "none"):
        through_sdk = [model.complete(r) for r in REQUESTS]
        with pytest.raises(CassetteMiss):  # each recording is played once per context
            model.complete(ask(1))
    assert through_sdk == replies
    clients = _count_clients(monkeypatch)
    with recording(path.parents[1], "seed", "none") as rec:
        assert [model.complete(r) for r in REQUESTS] == replies
        assert clients == []  # no SDK client was built, so no SDK call was made
        assert rec.cassette.used_keys() == {s.key for s in cassette_index.read(
            path, *_digest_and_size(path)).slots}  # type: ignore[union-attr]
        with pytest.raises(CassetteMiss):  # played already: the path of record decides, and misses
            model.complete(ask(1))
        assert len(clients) == 1


def _digest_and_size(path: Path) -> tuple[str, int]:
    import hashlib

    raw = path.read_bytes()
    return hashlib.sha256(raw).hexdigest(), len(raw)


def test_an_upgraded_sdk_replays_through_the_sdk_and_a_changed_body_is_a_miss(
        recorded: tuple[Path, list[Any], Any], monkeypatch: pytest.MonkeyPatch) -> None:
    path, replies, model = recorded
    provider = model.target.provider
    upgraded = fidelity.fingerprint(provider).replace(f"{provider}==", f"{provider}==99.")
    monkeypatch.setattr(fidelity, "fingerprint", lambda name: upgraded)
    clients = _count_clients(monkeypatch)
    with recording(path.parents[1], "seed", "none"):
        assert model.complete(ask(0)) == replies[0]
    assert clients, "another SDK version must take the path of record"

    # the upgraded SDK adds a field to every body it sends: the recordings no longer match
    _sdk_adds_a_field(monkeypatch, provider)
    with recording(path.parents[1], "seed", "none"):
        with pytest.raises(CassetteMiss):
            model.complete(ask(1))
    entries = store.read_file(path).entries
    assert store.sdk_stamp(entries) is None  # nor does it verify


def _sdk_adds_a_field(monkeypatch: pytest.MonkeyPatch, provider: str) -> None:
    module = __import__(f"{provider}._base_client", fromlist=["BaseClient"])
    real = module.BaseClient._build_request

    def build(self: Any, options: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(options.json_data, dict):
            options.json_data = {**options.json_data, "added_by_the_new_sdk": True}
        return real(self, options, *args, **kwargs)

    monkeypatch.setattr(module.BaseClient, "_build_request", build)


def test_an_index_without_a_fingerprint_replays_through_the_sdk_and_the_index_command_verifies_it(
        recorded: tuple[Path, list[Any], Any], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    path, replies, model = recorded
    index_file = cassette_index.index_path(path)
    head, rest = index_file.read_text().split("\n", 1)
    index_file.write_text(head.replace(f', "sdk": {json.dumps(fidelity.fingerprint(model.target.provider))}', "")
                          + "\n" + rest)
    assert '"sdk"' not in index_file.read_text()
    assert reindex([path.parents[1]], check=True) == 0  # speed only: --check does not fail on it
    assert "unverified" in capsys.readouterr().out
    clients = _count_clients(monkeypatch)
    with recording(path.parents[1], "seed", "none"):
        assert model.complete(ask(0)) == replies[0]
    assert clients  # through the SDK
    assert reindex([path.parents[1]], check=False) == 0
    assert json.loads(index_file.read_text())["sdk"] == fidelity.fingerprint(model.target.provider)
    clients = _count_clients(monkeypatch)
    with recording(path.parents[1], "seed", "none"):
        assert model.complete(ask(0)) == replies[0]
    assert clients == []


@pytest.mark.parametrize("provider, base, path", [
    ("anthropic", None, "/v1/messages"),
    ("anthropic", "http://127.0.0.1:9", "/v1/messages"),
    ("anthropic", "http://127.0.0.1:9/", "/v1/messages"),
    ("anthropic", "http://127.0.0.1:9/proxy/anthropic", "/proxy/anthropic/v1/messages"),
    ("openai", None, "/v1/chat/completions"),
    ("openai", "http://127.0.0.1:9/v1", "/v1/chat/completions"),
    ("openai", "http://127.0.0.1:9/v1/", "/v1/chat/completions"),
    ("openai", "http://127.0.0.1:9", "/chat/completions"),
])
def test_the_request_path_is_the_one_the_sdk_sends_to(provider: str, base: str | None, path: str) -> None:
    assert fidelity.request_path(provider, base) == path
    client = fidelity._capturing_client(provider, base or wire_named(provider).default_base_url, sdk_common.REPLAY_KEY)
    sent = fidelity._build(client, provider, "m", {"model": "m", "max_tokens": 1, "messages": []})
    assert sent.url.path == path


def test_the_committed_cassettes_are_verified_under_the_installed_sdks() -> None:
    """The main job replays its SDK items without importing an SDK only while this holds: after an SDK
    upgrade run `python -m pytest_skilltransfer index` (or re-record what no longer rebuilds)."""
    files = sorted((ROOT / "cassettes").glob("*/*.yaml"))
    assert files
    for path in files:
        head = json.loads(cassette_index.index_path(path).read_text())
        entries = store.read_file(path).entries
        provider = fidelity.provider_of_path(store.request_path(entries[0]["request"]["uri"]))
        assert head.get("sdk") == fidelity.fingerprint(provider) == store.sdk_stamp(entries), (
            f"{path}: install with `pip install -e . -c constraints.txt`, or after changing a pin run "
            "`python -m pytest_skilltransfer index`")


def test_the_constraints_pin_what_the_cassettes_were_verified_under() -> None:
    """A fresh `pip install -c constraints.txt` gets the very versions the committed index records, so a
    new release of an SDK or of what it requires never turns the main job's replay into a verified one."""
    def norm(word: str) -> str:
        return re.sub(r"[-_.]+", "-", word.strip().lower())

    pins = {norm(line) for line in (ROOT / "constraints.txt").read_text().splitlines()
            if line.strip() and not line.startswith("#")}
    stamps = {json.loads(cassette_index.index_path(path).read_text()).get("sdk")
              for path in (ROOT / "cassettes").glob("*/*.yaml")}
    words = {norm(word) for stamp in stamps if stamp for word in stamp.split()}
    assert words and words <= pins, sorted(words - pins)


def test_the_main_jobs_sdk_items_replay_without_importing_an_sdk() -> None:
    code = ("import sys, pytest; code = pytest.main(['-q', '-p', 'no:cacheprovider', '-n', '0', '-k', 'smollm2']); "
            "print('SDKS', sorted(m for m in ('anthropic', 'openai') if m in sys.modules)); raise SystemExit(code)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          env={**__import__("os").environ, "CI": "true"}, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "SDKS []" in done.stdout
    assert " passed" in done.stdout and "failed" not in done.stdout


LAZY_REPLAY = """
import sys
from pathlib import Path
from pytest_skilltransfer.cassettes import CassetteMiss, recording
from pytest_skilltransfer.models import fidelity
from pytest_skilltransfer.models.base import Message, Request
from pytest_skilltransfer.models.providers import build_model

folder, spec, expected = Path(sys.argv[1]), sys.argv[2], sys.argv[3:]
model = build_model(spec)
ask = lambda i: Request(system="You are terse.", messages=(Message("user", f"Question {i}? Grüße ✓"),), max_tokens=32,
                        sample_id=i)
with recording(folder, "seed", "none"):
    assert model.complete(ask(0)).text == expected[0]
    assert not any(m in sys.modules for m in ("vcr", "anthropic", "openai")), "replayed without vcrpy or an SDK"
    fidelity.fingerprint = lambda provider: "another SDK version"  # the rest takes the path of record
    assert model.complete(ask(1)).text == expected[1]
    assert "vcr" in sys.modules
    try:
        model.complete(ask(0))  # played before the cassette opened: its play was carried over
    except CassetteMiss as miss:
        print("MISS", str(miss).splitlines()[0])
print("OK")
"""


def test_a_replay_only_context_opens_vcrpy_only_for_the_path_of_record(
        recorded: tuple[Path, list[Any], Any]) -> None:
    path, replies, model = recorded
    spec = f"{model.target.provider}:fidelity@{model.target.base_url}"
    done = subprocess.run([sys.executable, "-c", LAZY_REPLAY, str(path.parents[1]), spec, replies[0].text, replies[1].text],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "MISS cassette miss: seed 'seed', model 'fidelity'" in done.stdout and "OK" in done.stdout


def test_an_answer_is_read_from_the_index_only_while_its_seal_holds(
        recorded: tuple[Path, list[Any], Any]) -> None:
    """The index holds each answer's JSON, sealed with its request key and its item's bytes: a row whose
    answer was edited is read from the YAML item instead, so the file stays the source of truth."""
    path, replies, model = recorded
    index_file = cassette_index.index_path(path)
    data = json.loads(index_file.read_text())
    for row in data["rows"]:
        status, body = json.loads(row[8])
        _set_text(body, "an answer edited in the index")
        row[8] = json.dumps([status, body])
    index_file.write_text(json.dumps(data))
    with recording(path.parents[1], "seed", "none"):
        assert [model.complete(r) for r in REQUESTS] == replies


def _set_text(body: dict[str, Any], text: str) -> None:
    for block in body.get("content") or []:
        if block.get("type") == "text":
            block["text"] = text
    for choice in body.get("choices") or []:
        choice["message"]["content"] = text
