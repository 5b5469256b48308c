"""A wire format is one registration (`models.wire`): this module defines a third one — a small JSON API whose
model is named in the URL path, spoken by a loopback server started here — and runs a seed against it end to
end through a real pytest run whose `pytest_skilltransfer_configure` hook adds it: a model alias points at it,
its calls are recorded into a real vcrpy cassette filed under the model the URL names, its key is redacted,
its answers are priced (and reserved under a budget), the cassette replays offline, and the wire leaves with
its run. The wire sends through httpx2 directly (it has no SDK), so its calls always take the path of record."""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterator

import pytest

from plugin_support import TOY_CONFTEST, project
from pytest_skilltransfer.models import fidelity, stops, validity
from pytest_skilltransfer.models.base import Reply, Request, Usage
from pytest_skilltransfer.models.sdk_common import CallPolicy, event_hooks
from pytest_skilltransfer.models.spend_gate import OVERHEAD_TOKENS, worst_case
from pytest_skilltransfer.models.wire import model_of_request, register_wire, unregister_wire, wire_names, wire_of_path

SECRET_KEY = "jw-live-0123456789abcdef"
_CALL = re.compile(r"/models/(?P<model>[^/]+)/generate$")


class _JsonWireClient:
    """The wire's client: an httpx2 client under the run's event hooks (kept as `_client`, where the limiter
    and the spend gate look for it, as they do in the SDKs' clients)."""

    def __init__(self, http: Any) -> None:
        self._client = http

    def close(self) -> None:
        self._client.close()


class JsonWire:
    """`POST {base}/models/<model>/generate` with `{system, turns, max_output, sample}`; the answer is
    `{output: {text}, tokens: {in, out}, finish: done|cut}`; the key travels in `x-jsonwire-key`."""

    name = "jsonwire"
    sdk = None
    key_variables = ("JSONWIRE_API_KEY",)
    default_base_url = "https://jsonwire.invalid/api"
    secret_headers = frozenset({"x-jsonwire-key"})
    kept_request_headers: frozenset[str] = frozenset()
    stop_kinds = {"done": "complete", "cut": "truncated"}
    service_tiers: tuple[str, ...] = ()
    batch_api = None

    def call_path(self, base_path: str, model_id: str) -> str:
        return f"{base_path.rstrip('/')}/models/{model_id}/generate"

    def is_call_path(self, path: str) -> bool:
        return _CALL.search(path) is not None

    def listed_models(self) -> tuple[str, ...]:
        return ()

    def builtin_aliases(self, listed: tuple[str, ...]) -> dict[str, str]:
        return {}

    def serves_bare_id(self, name: str, listed: tuple[str, ...]) -> bool:
        return False

    def model_of(self, path: str, body: Any) -> str | None:
        found = _CALL.search(path)
        return found.group("model") if found else None

    def request_params(self, target: Any, request: Request, policy: CallPolicy) -> dict[str, Any]:
        return {"system": request.system, "turns": [{"role": m.role, "text": m.content} for m in request.messages],
                "max_output": request.max_tokens, "sample": request.sample_id}

    def max_output(self, body: dict[str, Any]) -> int | None:
        return body.get("max_output")

    def make_client(self, api_key: str, base_url: str | None, max_retries: int, timeout: float, policy: CallPolicy,
                    transport: Any = None, on_request: Callable[[Any], None] | None = None) -> Any:
        import httpx2

        extra = {"transport": transport} if transport is not None else {}
        return _JsonWireClient(httpx2.Client(base_url=base_url or self.default_base_url, timeout=timeout,
                                             headers={"x-jsonwire-key": api_key}, event_hooks=event_hooks(on_request),
                                             **extra))

    def send_body(self, client: Any, model_id: str, params: dict[str, Any], policy: CallPolicy) -> Any:
        return client._client.post(f"models/{model_id}/generate", json=params)

    def answer_problem(self, answer: dict[str, Any]) -> str | None:
        output = answer.get("output")
        if not isinstance(output, dict) or not isinstance(output.get("text"), str):
            return "the answer has no output text"
        return None if answer.get("finish") else "the answer has no finish reason"

    def parse_reply(self, answer: dict[str, Any], model_id: str) -> Reply:
        tokens = answer.get("tokens") or {}
        return Reply(text=answer["output"]["text"], usage=Usage(tokens.get("in", 0), tokens.get("out", 0)),
                     model=model_id, stop_reason=answer.get("finish", ""))

    def service_tier(self, target: Any, run_tier: str | None) -> str | None:
        return None


class _Handler(BaseHTTPRequestHandler):
    """Answers like the toy models of `plugin_support`: the owner line when the skill holds the rule; echoes
    the key it was sent in a debug field, which the cassette must not keep."""

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:  # noqa: N802 - http.server naming
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        found = _CALL.search(self.path)
        self.server.received.append((self.path, dict(self.headers), body))  # type: ignore[attr-defined]
        if found is None or not self.path.startswith("/api/"):
            self.send_response(404)
            self.end_headers()
            return
        user = body["turns"][-1]["text"]
        text = "Routed: " + user.split()[-1] + (" Owner: @team" if "OWNER-LINE" in body["system"] else "")
        payload = json.dumps({"output": {"text": text}, "tokens": {"in": len(user) // 4 + 1, "out": len(text) // 4},
                              "finish": "done", "debug": {"key": self.headers.get("x-jsonwire-key")}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


@pytest.fixture
def json_wire() -> Iterator[JsonWire]:
    wire = register_wire(JsonWire())
    yield wire
    unregister_wire(wire.name)


@pytest.fixture
def server() -> Iterator[ThreadingHTTPServer]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.received = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def test_the_registry_answers_what_modules_asked_of_names(json_wire: JsonWire) -> None:
    path = "/api/models/jw-small/generate"
    assert wire_of_path(path) is json_wire and wire_of_path("/v1/messages").name == "anthropic"
    assert model_of_request(path, {"system": "no model field"}) == "jw-small"
    assert model_of_request("/v1/chat/completions", {"model": "gpt-x"}) == "gpt-x"
    assert stops.stop_kind("cut", "text") == "truncated" and stops.stop_kind("end_turn", "text") == "complete"
    assert validity.response_problem(path, 200, b'{"output": {}}') == "the answer has no output text"
    assert fidelity.fingerprint("jsonwire") is None  # no SDK: every call takes the path of record
    assert worst_case({"max_output": 64}, 10, path)[:3] == ("jw-small", 10 + OVERHEAD_TOKENS, 64)  # a budget's bound


HOOK = """
from test_wire_registry import JsonWire


def pytest_skilltransfer_configure(config, registry):
    registry.add_wire(JsonWire())
    registry.add_alias("fast", {{"provider": "jsonwire", "model": "jw-small", "base_url": "{base}"}})
"""


def test_a_wire_a_run_registers_runs_a_seed_end_to_end(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
                                                      server: ThreadingHTTPServer) -> None:
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("JSONWIRE_API_KEY", SECRET_KEY)
    base = f"http://127.0.0.1:{server.server_address[1]}/api"
    project(pytester, ini="skilltransfer_nights = 1\nskilltransfer_no_direct = true\n", seeds=("alpha",))
    pytester.makeconftest(TOY_CONFTEST + HOOK.format(base=base))
    pytester.makepyprojecttoml('''
        [tool.skilltransfer.prices]
        "jw-small" = [1.0, 4.0]
        "toy-*" = [0.0, 0.0]
    ''')
    args = ("--pair", "toy-a:fast", "--limit-replay=2", "--limit-holdout=2", "-p", "no:cacheprovider")
    recorded = pytester.runpytest(*args, "--record-mode=once", "--snapshot-update", "--skilltransfer-json=a.json",
                                  "--max-cost=5")  # each call reserves its worst case: the URL's model, priced
    recorded.assert_outcomes(passed=1)
    calls = len(server.received)
    assert calls > 0 and {h["x-jsonwire-key"] for _, h, _ in server.received} == {SECRET_KEY}
    assert all("model" not in body for _, _, body in server.received)  # the URL names the model

    files = sorted((pytester.path / "cassettes" / "alpha").glob("*.yaml"))
    assert [f.name for f in files] == ["jw-small.yaml"]  # filed by the URL's model, not as unknown-model
    text = files[0].read_text()
    assert "/api/models/jw-small/generate" in text and SECRET_KEY not in text and "x-jsonwire-key" not in text
    assert "[redacted" in text
    first = json.loads((pytester.path / "a.json").read_text())["results"][0]
    assert (first["target"], first["target_name"]) == ("jw-small", "fast")
    assert first["cost"]["total_usd"] > 0  # jw-small priced by the table, from the usage the wire read (toys free)

    monkeypatch.setenv("CI", "true")
    monkeypatch.delenv("JSONWIRE_API_KEY")
    server.shutdown()  # offline: a replay miss would fail, never reach the server
    replayed = pytester.runpytest(*args, "--record-mode=none", "--skilltransfer-json=b.json")
    replayed.assert_outcomes(passed=1)
    assert len(server.received) == calls
    assert "jsonwire" not in wire_names()  # the run's wire left with its run
    second = json.loads((pytester.path / "b.json").read_text())["results"][0]
    for result in (first, second):
        result.pop("gate")
    assert second["scores"] == first["scores"] and second["cost"]["tokens"] == first["cost"]["tokens"]
    assert second["cost"]["total_usd"] == first["cost"]["total_usd"]
