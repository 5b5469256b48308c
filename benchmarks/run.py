"""Performance ratios of pytest-skilltransfer, side by side in one run (a benchmark, not a test).

    .venv/bin/python benchmarks/run.py            # everything, a few minutes on 2 cores
    .venv/bin/python benchmarks/run.py --quick    # smaller sizes, for a smoke run

Every provider call goes to a loopback server: the easy fake in `tests/fake_provider.py`, or the realistic
provider in `benchmarks/realistic_provider.py` (working-length answers and edits that apply); nothing
leaves the machine.
See benchmarks/README.md for what each figure means and the figures measured.
"""

from __future__ import annotations

import argparse
import contextvars
import gc
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections import Counter
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from fake_provider import FakeProvider  # noqa: E402

from pytest_skilltransfer import cassettes  # noqa: E402

try:
    from pytest_skilltransfer.engine import phases  # noqa: E402
except ImportError:  # an older checkout: no critical path to report
    phases = None  # type: ignore[assignment]
from pytest_skilltransfer.cassettes import index as cassette_index  # noqa: E402
from pytest_skilltransfer.cassettes import store
from pytest_skilltransfer.engine.results import ProtocolConfig  # noqa: E402
from pytest_skilltransfer.models.base import Message, Request  # noqa: E402
from pytest_skilltransfer.models.limiter import LIMITERS  # noqa: E402
from pytest_skilltransfer.models.providers import DEFAULT_CONCURRENCY, build_model, configure_aliases  # noqa: E402
from pytest_skilltransfer.models.registry import resolve_model
from pytest_skilltransfer.plugin.options import Settings  # noqa: E402
from pytest_skilltransfer.plugin.runner import Runner  # noqa: E402
from pytest_skilltransfer.reports.result_json import result_to_json  # noqa: E402
from report_size import report_size  # noqa: E402
from user_recording import ProviderProcess, user_recording  # noqa: E402

LATENCY_S = 0.3
REPLAY_CALLS = 30
Row = tuple[str, str, str]  # (measure, figures, ratio)


@contextmanager
def fake_provider(delay: float = 0.0) -> Iterator[FakeProvider]:
    with FakeProvider() as fake:
        fake.delay = delay
        fake.require_key = False
        yield fake


FAKE_SERVER = """
import json, sys
from collections import Counter
sys.path.insert(0, sys.argv[1])
import fake_provider
from fake_provider import FakeProvider
fake_provider._Server.request_queue_size = 1024  # as deep as a provider's (see realistic_provider._Server)
fake = FakeProvider()
fake.delay, fake.require_key = float(sys.argv[2]), False
fake.start()
print(fake.port, flush=True)
for line in sys.stdin:  # each line asks for the requests per model since the last one
    with fake._lock:
        seen, fake.received[:] = list(fake.received), []
    print(json.dumps(Counter(r["body"].get("model", "?") for r in seen)), flush=True)
"""


class FakeProcess:
    """The loopback fake in a process of its own, so its CPU is not the recorder's (recording sections)."""

    def __init__(self, delay: float) -> None:
        self._process = subprocess.Popen([sys.executable, "-c", FAKE_SERVER, str(ROOT / "tests"), str(delay)],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        port = int(self._process.stdout.readline())  # type: ignore[union-attr]
        self.anthropic_url, self.openai_url = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{port}/v1"

    def requests_per_model(self) -> Counter:
        """Requests received per model since the last call."""
        self._process.stdin.write("\n")  # type: ignore[union-attr]
        self._process.stdin.flush()  # type: ignore[union-attr]
        return Counter(json.loads(self._process.stdout.readline()))  # type: ignore[union-attr]

    def __enter__(self) -> "FakeProcess":
        return self

    def __exit__(self, *exc: Any) -> None:
        self._process.stdin.close()  # type: ignore[union-attr]
        self._process.wait(timeout=30)


def _files(folder: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(folder.rglob("*.yaml"))}


# -- 1. recording: wall against the floor --------------------------------------------------------

RECORD_SEEDS = (ROOT / "seeds" / "changelog-writer", ROOT / "seeds" / "ticket-router")
RECORD_PAIRS = (("bench-small", "bench-large"), ("bench-large", "bench-small"))
RECORD_CONFIG = ProtocolConfig(samples=3, limit_holdout=0)  # the rate's workload: many calls, a steadier rate
# the recording section's workloads: what `pytest --source --target` runs (the protocol's defaults), and
# a wide one whose fan-outs (24 tasks x 3 samples on one model) are wider than a cap of 64
# (label, settings, caps, whether the 1.15x goal applies: not where whole rounds alone exceed it)
# (answers: "easy", the fake of tests/fake_provider.py, whose optimizer never returns a usable edit, or
# "realistic", benchmarks/realistic_provider.py: edits that apply, so nights try candidates)
WORKLOADS = (("default protocol", ProtocolConfig(), (1, 8, 64), True, "easy"),
             ("--samples 3 --limit-holdout 0", RECORD_CONFIG, (8, 64), False, "easy"),  # (cap 1 alone: 2 minutes)
             ("default protocol, realistic answers", ProtocolConfig(), (8, 64), False, "realistic"))


@dataclass
class Recorded:
    """One recording of every seed and pair: wall, floor, calls, and what it produced."""

    wall_s: float  # the items, from the first call to the last answer of each
    save_s: float  # folding the journal into the readable files at the end
    cpu_s: float  # this process's CPU over the items
    floor_s: float
    path_s: float  # the critical paths (calls on the longest dependency path x latency), item by item
    throughput_s: float  # the busiest model's calls x latency / cap, item by item
    rounds_s: float  # max(critical path in rounds of the cap, the busiest model's calls in whole rounds) x latency, item by item
    calls: int
    results: list[dict[str, Any]]
    files: dict[str, str]


def _record(fake: FakeProcess, cap: int, folder: Path, latency: float, together: bool = True,
            config: ProtocolConfig = RECORD_CONFIG) -> Recorded:
    """Record every seed and pair with `cap` calls per model; the floor is summed item by item (the items
    of one process run one after another): max(critical path, busiest model's calls x latency / cap)."""
    LIMITERS.configure(lambda _model_id: cap)
    settings = Settings(protocol=config, record_mode="all", cassette_dir=folder)
    try:
        runner = Runner(settings, lambda _line: None, concurrent_phases=together)
    except TypeError:  # a version without concurrent phases (figures of an older checkout)
        runner = Runner(settings, lambda _line: None)
    wall = floor = path = throughput = rounds = cpu = save = 0.0
    calls, results = 0, []
    for seed in RECORD_SEEDS:
        runner.record(seed.name)  # opening the seed's cassette is not part of the items
        for source, target in RECORD_PAIRS:
            fake.requests_per_model()
            context = contextvars.copy_context()  # its path clock starts at 0
            start, start_cpu = time.perf_counter(), time.process_time()
            result = context.run(runner.transfer, seed, source, target, None)
            wall += time.perf_counter() - start
            cpu += time.process_time() - start_cpu
            per_model = fake.requests_per_model()
            item_path = context.run(phases.calls_on_path) * latency if phases else 0.0
            item_throughput = max(per_model.values(), default=0) * latency / cap
            path, throughput = path + item_path, throughput + item_throughput
            floor += max(item_path, item_throughput)
            # no schedule beats this either: a model serves at most `cap` calls per latency, on the path
            # (the engine's round clock) and over the item (the busiest model's calls)
            item_rounds = context.run(phases.rounds_on_path) if hasattr(phases, "rounds_on_path") else 0
            rounds += max(item_path, item_rounds * latency, max((-(-n // cap) for n in per_model.values()), default=0) * latency)
            calls += sum(per_model.values())
            results.append(result_to_json(result))
        start = time.perf_counter()
        runner.stop_recording()
        save += time.perf_counter() - start
    LIMITERS.configure()
    return Recorded(wall, save, cpu, floor, path, throughput, rounds, calls, results, _files(folder))


def _aliases(fake: Any) -> None:
    configure_aliases({"bench-small": f"anthropic:bench-small@{fake.anthropic_url}",
                       "bench-large": f"openai:bench-large@{fake.openai_url}"})


_warm_s: list[float] = []  # what warming the SDKs took, once per process


def _warm_sdks() -> float:
    """One unrecorded call to each bench model before any timed item (seconds, measured once per
    process): importing the SDKs and what they import on a client's first call (resources, response
    models) is a fixed cost of the process (see "main job"), not of the calls; without this, whichever
    section runs first would carry it in its first item."""
    if not _warm_s:
        start = time.perf_counter()
        for name in ("bench-small", "bench-large"):  # resolved as the runner resolves them (the model registry too)
            resolve_model(name).complete(Request(system="warm-up", messages=(Message("user", "warm-up"),), max_tokens=8))
        _warm_s.append(time.perf_counter() - start)
    return _warm_s[0]


REPEATS = 3  # each timed recording runs this often; rows give the median and the range (a shared machine)


def _median_run(runs: list[Recorded]) -> Recorded:
    return sorted(runs, key=lambda r: r.wall_s)[len(runs) // 2]


def _spread(runs: list[Recorded], value: Callable[[Recorded], float], digits: int = 2) -> str:
    values = sorted(value(r) for r in runs)
    return f"{values[0]:.{digits}f}-{values[-1]:.{digits}f}" if len(values) > 1 else f"{values[0]:.{digits}f}"


def recording_floor(work: Path, quick: bool = False) -> list[Row]:
    """Each workload at each cap, the phases together (`REPEATS` times) and (cap > 1) once in order;
    every recording of a workload must give the same results and cassette files."""
    rows = []
    repeats = 1 if quick else REPEATS
    for label, config, caps, goal, answers in WORKLOADS:
        server = FakeProcess(LATENCY_S) if answers == "easy" else ProviderProcess(LATENCY_S, answers)
        with server as fake:
            _aliases(fake)
            warm = _warm_sdks()
            caps = tuple(cap for cap in caps if cap > 1) if quick else caps
            together: dict[int, list[Recorded]] = {}
            in_order: dict[int, Recorded] = {}
            for cap in caps:
                times = repeats if cap > 1 else 1  # cap 1 is long and steady
                together[cap] = [_record(fake, cap, work / f"rec-{label}-{cap}-{n}", LATENCY_S, True, config)
                                 for n in range(times)]
                if cap > 1:
                    in_order[cap] = _record(fake, cap, work / f"rec-{label}-{cap}-in-order", LATENCY_S, False, config)
            everything = [r for runs in together.values() for r in runs] + list(in_order.values())
            same = all(r.results == everything[0].results and r.files == everything[0].files for r in everything)
            for cap in caps:
                runs = together[cap]
                run = _median_run(runs)
                before = in_order.get(cap)
                before_text = f"; phases in order {before.wall_s:.1f} s = {before.wall_s / run.floor_s:.2f}x" if before else ""
                of_runs = f"median of {len(runs)} recordings, range {_spread(runs, lambda r: r.wall_s / r.floor_s)}x; " \
                    if len(runs) > 1 else ""
                rows.append((f"recording {seeds_text()}, {label}: {run.calls} calls at {LATENCY_S * 1000:.0f} ms, "
                             f"cap {cap}/model",
                             f"wall {run.wall_s:.2f} s vs floor {run.floor_s:.2f} s (critical path {run.path_s:.1f} s, "
                             f"busiest model {run.throughput_s:.2f} s; in whole rounds of the cap {run.rounds_s:.2f} s), "
                             f"{of_runs}CPU {run.cpu_s:.2f} s{before_text}; then saving {run.save_s:.2f} s; "
                             f"identical results and cassettes: {'yes' if same else 'NO'}; SDKs warmed first ({warm:.1f} s)",
                             f"{run.wall_s / run.floor_s:.2f}x the floor" + (" (goal <= 1.15x)" if goal and cap > 1 else "")
                             + f"; {run.wall_s / run.rounds_s:.2f}x whole rounds"))
    return rows


def recording_rate(work: Path, quick: bool = False) -> list[Row]:
    """Calls per second recording through the protocol against a fake that answers at once."""
    with FakeProcess(0.0) as fake:
        _aliases(fake)
        warm = _warm_sdks()
        runs = [_record(fake, DEFAULT_CONCURRENCY, work / f"rec-rate-{n}", 0.0) for n in range(1 if quick else REPEATS)]
    run = _median_run(runs)
    of_runs = f"median of {len(runs)} recordings, range {_spread(runs, lambda r: r.calls / r.wall_s, 0)} calls/s; " \
        if len(runs) > 1 else ""
    return [(f"recording at zero latency, {seeds_text()}, cap {DEFAULT_CONCURRENCY}/model",
             f"{run.calls} calls in {run.wall_s:.2f} s ({run.cpu_s * 1000 / run.calls:.1f} ms CPU per call), "
             f"{of_runs}then saving {run.save_s:.2f} s; SDKs warmed first ({warm:.1f} s)",
             f"{run.calls / run.wall_s:.0f} calls/s (goal >= 200); {run.calls / (run.wall_s + run.save_s):.0f} with saving")]


def seeds_text() -> str:
    return f"{len(RECORD_SEEDS)} seeds x {len(RECORD_PAIRS)} pairs"


# -- 2. replay cost per call ---------------------------------------------------------------------


def _request(i: int) -> Request:
    return Request(system="You write release notes.", messages=(Message("user", f"Describe change {i}."),),
                   max_tokens=64, sample_id=0)


def _synthetic_cassette(fake: FakeProvider, folder: Path, size: int, realistic: list[dict[str, Any]]) -> None:
    """`size` interactions: the first is a real recording of `_request(0)` (answered by the fake), the
    others are the seed recording's interactions in turn, each with its first user turn made distinct, so
    bodies and answers have a real seed's sizes."""
    model = build_model(f"anthropic:bench-replay@{fake.anthropic_url}")
    with cassettes.recording(folder, "replay", "all"):
        model.complete(_request(0))
    path = store.model_files(folder / "replay")[0]
    template = store.read_file(path).entries[0]
    grown = []
    for i in range(size):
        first = i < calls_with_template(size) or not realistic
        entry = json.loads(json.dumps(template if first else realistic[i % len(realistic)]))
        body = entry["request"]["body"]["json"]
        body["model"] = "bench-replay"
        body["messages"][0]["content"] = f"Describe change {i}." if first else \
            f"{_first_text(body['messages'][0]['content'])} (#{i})"
        grown.append(entry)
    store.write_model_file(path, grown)  # the readable file and its index, as recording writes them


def calls_with_template(size: int) -> int:
    """How many interactions answer `_request(i)` (the ones the replay timing asks for)."""
    return min(size, REPLAY_CALLS)


def _first_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return " ".join(block.get("text", "") for block in content if isinstance(block, dict))


def _per_call_ms(call: Callable[[int], Any], count: int) -> float:
    start = time.perf_counter()
    for i in range(count):
        call(i)
    return (time.perf_counter() - start) * 1000 / count


def _seed_interactions(work: Path) -> list[dict[str, Any]]:
    """Interactions of real sizes: the repo's committed recordings of the local model (real answers),
    else what the recording section stored."""
    files = sorted((ROOT / "cassettes").rglob("*.yaml")) or store.model_files(work / "rec-8-together" / RECORD_SEEDS[0].name)
    return [e for p in files for e in store.read_file(p).entries
            if e["request"]["uri"].split("?")[0].endswith("/messages")]  # the wire the replay cassettes use


def _judged_tasks() -> list[Any]:
    """Held-out tasks of a project seed: the judging every replayed answer goes through in a run."""
    from pytest_skilltransfer.engine.seeds import load_seed

    return list(load_seed(ROOT / "seeds" / "release-advisor").test)


def _cpu_per_call_ms(run: Callable[[], tuple[float, int]], repeats: int = 5) -> float:
    """CPU milliseconds per call of `run()` (which returns the CPU seconds it timed and its call count),
    best of `repeats`."""
    best = float("inf")
    for _ in range(repeats):
        used, count = run()
        best = min(best, used * 1000 / count)
    return best


def replay_cost(work: Path, sizes: tuple[int, ...]) -> list[Row]:
    """Replay per call (the recorded answer read, checked and parsed into a reply, then judged) against
    its floor (the recorded reply's JSON parsed, then judged the same way), CPU time, best of 3
    recording contexts (each plays each interaction once); and the SDK call to a loopback server."""
    from pytest_skilltransfer.engine.judges import Attempt, score

    try:
        from pytest_skilltransfer.models.fidelity import fingerprint
    except ImportError:  # an older checkout: every replay goes through the SDK
        fingerprint = None  # type: ignore[assignment]

    rows = []
    calls = REPLAY_CALLS
    realistic = _seed_interactions(work)
    tasks = _judged_tasks()

    def judge(i: int, text: str) -> None:
        score(tasks[i % len(tasks)].judge, Attempt(text))

    with fake_provider(0.0) as fake:
        live = build_model(f"anthropic:bench-live@{fake.anthropic_url}")
        live.complete(_request(-1))  # warm the client
        live_ms = _per_call_ms(lambda i: live.complete(_request(10_000 + i)), calls)
        model = build_model(f"anthropic:bench-replay@{fake.anthropic_url}")
        for size in sizes:
            folder = work / f"replay-{size}"
            _synthetic_cassette(fake, folder, size, realistic)
            path = store.model_files(folder / "replay")[0]
            played = {json.dumps(_request(i).messages[0].content) for i in range(calls)}
            answers = [store.decode_body(e["response"]["body"]) for e in store.read_file(path).entries
                       if json.dumps(_first_text(e["request"]["body"]["json"]["messages"][0]["content"])) in played]
            stamped = fingerprint is not None and \
                json.loads(cassette_index.index_path(path).read_text()).get("sdk") == fingerprint("anthropic")

            opening: list[float] = []

            def replay() -> tuple[float, int]:
                start = time.process_time()
                with cassettes.recording(folder, "replay", "none"):
                    opened = time.process_time()
                    for i in range(calls):
                        judge(i, model.complete(_request(i)).text)
                    played = time.process_time()
                opening.append(opened - start + time.process_time() - played)
                return played - opened, calls

            def floor() -> tuple[float, int]:
                start = time.process_time()
                for i, raw in enumerate(answers):
                    message = json.loads(raw)
                    judge(i, "".join(b.get("text", "") for b in message["content"] if b.get("type") == "text"))
                return time.process_time() - start, len(answers)

            replay()  # warm up
            opening.clear()
            replay_ms, floor_ms = _cpu_per_call_ms(replay), _cpu_per_call_ms(floor)
            rows.append((f"replay, cassette of {size} interactions",
                         f"{replay_ms:.3f} ms CPU per call (the recorded answer read, checked, parsed and judged) vs "
                         f"floor {floor_ms:.3f} ms (the reply's JSON parsed, then judged); opening and closing the "
                         f"recording context {min(opening) * 1000:.1f} ms CPU; "
                         f"{live_ms:.2f} ms/call for an instantly answering loopback SDK call; "
                         f"{'replayed without the SDK' if stamped else 'through the SDK (index not verified)'}",
                         f"{replay_ms / floor_ms:.2f}x the floor (goal <= 5x); {replay_ms / live_ms:.2f}x the loopback call"))
    return rows


# -- 2b. replay of the committed recordings against its floors ------------------------------------


def _sdk_client(wire: str, base_url: str, transport: Any = None) -> Any:
    """An SDK client as the plugin builds it (`make_client`); `transport` replaces its HTTP transport."""
    from pytest_skilltransfer.models.sdk_common import make_client

    class_name = ("anthropic", "Anthropic") if wire == "anthropic" else ("openai", "OpenAI")
    client = make_client(class_name, "bench-key", base_url, 0, 30.0)
    if transport is not None:
        client._client._transport = transport
    return client


def _create(client: Any, wire: str, body: dict[str, Any]) -> Any:
    """The SDK call that sends `body` (the recorded request body as keyword arguments), parsed."""
    api = client.messages if wire == "anthropic" else client.chat.completions
    return api.with_raw_response.create(**body).parse()


def _in_memory_transport(entries: list[dict[str, Any]]) -> Any:
    """An httpx transport answering each recorded request with its recorded response, from memory."""
    import httpx2

    answers = {}
    for entry in entries:
        body = json.loads(store.decode_body(entry["request"]["body"]))
        resp = entry["response"]
        headers = [(k, v) for k, values in (resp.get("headers") or {}).items() for v in values]
        answers[json.dumps(body, sort_keys=True)] = (resp["status"]["code"], headers, store.decode_body(resp["body"]))

    def answer(request: Any) -> Any:
        status, headers, content = answers[json.dumps(json.loads(request.content), sort_keys=True)]
        return httpx2.Response(status, headers=headers, content=content)

    return httpx2.MockTransport(answer)


def replay_floor(work: Path) -> list[Row]:
    """Replay of the committed recordings through the SDK, per call, against the same SDK calls answered
    from memory (the floor) and by a loopback server answering at once."""
    rows = []
    source = ROOT / "cassettes"
    folder = work / "committed"
    shutil.copytree(source, folder)
    with fake_provider(0.0) as fake:
        for seed_folder in sorted(p for p in folder.iterdir() if p.is_dir()):
            for path in store.model_files(seed_folder):
                entries = store.read_file(path).entries
                wire = "anthropic" if request_path_of(entries[0]).endswith("/messages") else "openai"
                bodies = [json.loads(store.decode_body(e["request"]["body"])) for e in entries]
                base = fake.anthropic_url if wire == "anthropic" else fake.openai_url
                replay_ms = _replay_ms(folder, seed_folder.name, wire, base, bodies)
                memory = _sdk_client(wire, base, _in_memory_transport(entries))
                memory_ms = _best_ms(lambda: [_create(memory, wire, b) for b in bodies], len(bodies))
                live = _sdk_client(wire, base)
                live_ms = _best_ms(lambda: [_create(live, wire, b) for b in bodies], len(bodies))
                rows.append((f"replay {seed_folder.name}/{path.name}, {len(bodies)} calls",
                             f"{replay_ms:.2f} ms/call vs in memory {memory_ms:.2f} ms/call vs loopback "
                             f"{live_ms:.2f} ms/call (the same SDK calls)",
                             f"{replay_ms / memory_ms:.2f}x in memory (goal <= 3x), {replay_ms / live_ms:.2f}x loopback"))
    return rows


def request_path_of(entry: dict[str, Any]) -> str:
    return entry["request"]["uri"].split("?")[0]


def _best_ms(run: Callable[[], Any], count: int, repeats: int = 3) -> float:
    run()  # warm up
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best * 1000 / count


def _replay_ms(folder: Path, seed: str, wire: str, base: str, bodies: list[dict[str, Any]]) -> float:
    """ms per call replaying every body from the seed's cassette (best of 3 openings; each plays each once)."""
    client = _sdk_client(wire, base)
    best = float("inf")
    for attempt in range(4):
        with cassettes.recording(folder, seed, "none"):
            start = time.perf_counter()
            for body in bodies:
                _create(client, wire, body)
            if attempt:  # the first opening warms up
                best = min(best, time.perf_counter() - start)
    return best * 1000 / len(bodies)


# -- 3. cassette open ----------------------------------------------------------------------------


def _open_once(folder: Path) -> tuple[float, int, int]:
    """Seconds to open the seed's cassette (best of 3), and bytes held once open and at the peak of
    opening, per interaction."""
    best = float("inf")
    for _ in range(3):
        gc.collect()
        start = time.perf_counter()
        with cassettes.recording(folder, "replay", "none", guard="off"):
            best = min(best, time.perf_counter() - start)
    gc.collect()
    tracemalloc.start()
    with cassettes.recording(folder, "replay", "none", guard="off") as rec:
        held, peak = tracemalloc.get_traced_memory()
        size = max(1, rec.interactions)
    tracemalloc.stop()
    return best, held // size, peak // size


def _kib(value: float) -> str:
    return f"{value / 1024:.1f} KiB"


def _without_indexes(folder: Path) -> Callable[[], None]:
    """Remove the folder's cassette indexes; returns what puts them back."""
    saved = {p: p.read_bytes() for p in folder.rglob(f"*.yaml{cassette_index.SUFFIX}")}
    for path in saved:
        path.unlink()

    def restore() -> None:
        for path, data in saved.items():
            path.write_bytes(data)

    return restore


def _figures(seconds: float, held: int, peak: int, size: int) -> str:
    return f"{seconds * 1000 / size:.3f} ms, peak {_kib(peak)}, held {_kib(held)}"


def _ratios(old: tuple[float, int, int], new: tuple[float, int, int]) -> str:
    return (f"{old[0] / new[0]:.1f}x faster, {old[2] / max(1, new[2]):.1f}x leaner at peak, "
            f"{old[1] / max(1, new[1]):.1f}x held")


def cassette_open(work: Path, sizes: tuple[int, ...], reference: Callable[[Path], tuple[float, int, int]] | None
                  ) -> list[Row]:
    rows = []
    for size in sizes:
        folder = work / f"replay-{size}"
        indexed = _open_once(folder)
        restore = _without_indexes(folder)
        unindexed = _open_once(folder)
        restore()
        after = f"indexed {_figures(*indexed, size)}; no index {_figures(*unindexed, size)} per interaction"
        if reference is None:
            rows.append((f"cassette open, {size} interactions", after, "-"))
            continue
        old = reference(folder / "replay")
        rows.append((f"cassette open, {size} interactions", f"before {_figures(*old, size)}; after: {after}",
                     f"indexed {_ratios(old, indexed)} (no index: {_ratios(old, unindexed)})"))
    return rows


# -- 4. collection -------------------------------------------------------------------------------

def _make_seeds(root: Path, count: int) -> None:
    check = {"kind": "rule", "checks": [{"op": "contains", "arg": "Owner:"}]}
    for n in range(count):
        seed = root / f"seed-{n:03d}"
        seed.mkdir(parents=True)
        (seed / "SKILL.md").write_text(f"# Router {n}\n\nRoute the ticket to team {n}.\n")
        task = lambda prefix, i: json.dumps({"task_id": f"{prefix}-{i}", "task": f"Route ticket {n}.{i}", "judge": check})
        (seed / "benchmark.jsonl").write_text("\n".join(task("bm", i) for i in range(6)) + "\n")
        held = [task("hd", i) for i in range(3)]
        (seed / "held-out.jsonl").write_text("\n".join(held) + "\n")


COLLECT_SEED = "support-triage"  # a project seed: 50 tasks, rule judges, its own seed.toml


def _copy_project_seed(root: Path, count: int) -> None:
    """`count` copies of a project seed (its snapshot folder left out: collection does not read it)."""
    source = ROOT / "seeds" / COLLECT_SEED
    for n in range(count):
        shutil.copytree(source, root / f"{COLLECT_SEED}-{n:03d}", ignore=shutil.ignore_patterns("__snapshots__"))


def _pytest(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=cwd,
                          capture_output=True, text=True, env={**os.environ, **(env or {})})
    return time.perf_counter() - start, done


def _pytest_cpu(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[float, subprocess.CompletedProcess]:
    """CPU seconds (user + system) a pytest run used: steadier than wall time on a shared machine."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    _, done = _pytest(args, cwd, env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), done


def _plain_tests(root: Path, count: int) -> None:
    """`count` folders with two plain test functions each: what pytest itself costs per item."""
    for n in range(count):
        folder = root / f"case-{n:03d}"
        folder.mkdir(parents=True)
        (folder / f"test_case_{n:03d}.py").write_text("def test_a():\n    pass\n\n\ndef test_b():\n    pass\n")


SESSION_PROBE = """\
import os
import time

import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session):
    with open(os.environ["SKILLTRANSFER_BENCH_SESSION_START"], "w") as out:
        out.write(repr(time.process_time()))
"""


def _collect_cpu(folder: Path, probe: Path) -> tuple[float, float]:
    """(CPU of the whole `pytest --collect-only` process, CPU from its session start to its exit)."""
    mark = probe / "session-start"
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(probe), os.environ.get("PYTHONPATH")])),
           "SKILLTRANSFER_BENCH_SESSION_START": str(mark)}
    used, done = _pytest_cpu(["-p", "bench_session_probe", "--collect-only", "-q", "-p", "no:randomly"], folder, env)
    if done.returncode != 0:
        raise RuntimeError(done.stdout + done.stderr)
    return used, used - float(mark.read_text())


def collection(work: Path, counts: tuple[int, int], rounds: int = 7) -> list[Row]:
    """CPU per collected item: seeds (2 items each) against plain test files (2 tests each).

    Each run's CPU is taken whole and from its session start on (a probe plugin notes the CPU
    clock in `pytest_sessionstart`): start-up (imports, configuration) is the same work at both
    sizes, so it drops out of the per-item figure either way, but on a shared machine it moves
    by a tenth of a second from run to run, as much as the items themselves cost. The four
    projects run once per round, the large ones next to each other, and each keeps its best
    round: a busy spell slows one round of all four rather than every run of one of them."""
    probe = work / "collect-probe"
    probe.mkdir()
    (probe / "bench_session_probe.py").write_text(SESSION_PROBE)
    folders: dict[tuple[str, int], Path] = {}
    small, large = counts
    for count in counts:
        project = work / f"collect-{count}"
        _copy_project_seed(project / "seeds", count)
        (project / "pytest.ini").write_text("[pytest]\ntestpaths = seeds\n"
                                            "skilltransfer_pair = sim-small:sim-large sim-large:sim-small\n")
        plain = work / f"plain-{count}"
        _plain_tests(plain / "tests", count)
        (plain / "pytest.ini").write_text("[pytest]\ntestpaths = tests\n")
        folders[("seeds", count)], folders[("plain", count)] = project, plain
    order = [("seeds", small), ("seeds", large), ("plain", large), ("plain", small)]
    whole = {key: float("inf") for key in order}
    session = {key: float("inf") for key in order}
    for _ in range(rounds):
        for key in order:
            used, from_start = _collect_cpu(folders[key], probe)
            whole[key], session[key] = min(whole[key], used), min(session[key], from_start)
    items = 2 * (large - small)

    def per_item(cpu: dict[tuple[str, int], float], name: str) -> float:
        return (cpu[(name, large)] - cpu[(name, small)]) * 1000 / items

    seeds_ms, plain_ms = per_item(session, "seeds"), per_item(session, "plain")
    seeds_whole, plain_whole = per_item(whole, "seeds"), per_item(whole, "plain")
    return [(f"collection, {small} vs {large} copies of seeds/{COLLECT_SEED} (2 items each) against plain test files",
             f"{seeds_ms:.2f} ms CPU per item vs {plain_ms:.2f} ms for plain pytest items from session start "
             f"({session[('seeds', small)]:.2f}/{session[('seeds', large)]:.2f} s vs "
             f"{session[('plain', small)]:.2f}/{session[('plain', large)]:.2f} s); whole processes "
             f"{seeds_whole:.2f} vs {plain_whole:.2f} ms per item ({whole[('seeds', small)]:.2f}/"
             f"{whole[('seeds', large)]:.2f} s vs {whole[('plain', small)]:.2f}/{whole[('plain', large)]:.2f} s; "
             f"best of {rounds} rounds)",
             f"{seeds_ms / plain_ms:.2f}x plain pytest per item (goal <= 1.3x); whole processes "
             f"{seeds_whole / plain_whole:.2f}x")]


MAIN_JOB_WITHOUT_SDK = "not smollm2"  # the items whose target is a recorded real model (SDK cassettes)


def _main_job(work: Path, extra: list[str]) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one run of the README's main job (`CI=true pytest`, replay only),
    bytecode cached as in a user's environment."""
    env = {k: v for k, v in os.environ.items() if k not in FOREIGN_ENV_DROPPED}
    env["CI"] = "true"
    env["PYTHONSAFEPATH"] = "1"  # as the README's `pytest` script: the repo root off sys.path, so the package
    #                              loads through its editable install (`python -m` from the root would load
    #                              it from there, and pytest would rewrite its asserts: a slower start-up)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", *extra,
                           f"--skilltransfer-json={work / 'main-job.json'}"], cwd=ROOT, capture_output=True, text=True,
                          env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(done.stdout[-3000:] + done.stderr[-3000:])
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


def main_job_cpu(work: Path, rounds: int = 3) -> list[Row]:
    """The README's main job: its CPU against the same run without the SDK items (`-k "not smollm2"`),
    and its wall under `-n 2` against `-n 0`; the variants alternate, `rounds` runs each, after one
    unmeasured run that writes the bytecode caches."""
    variants = {"all": ["-n", "0"], "without": ["-n", "0", "-k", MAIN_JOB_WITHOUT_SDK], "n2": ["-n", "2"],
                "auto": ["-n", "auto"]}
    _main_job(work, variants["all"])
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in variants}
    for _ in range(rounds):
        for name, extra in variants.items():
            runs[name].append(_main_job(work, extra))

    def median(name: str, at: int) -> float:
        return sorted(run[at] for run in runs[name])[rounds // 2]

    def best(name: str, at: int) -> float:
        return min(run[at] for run in runs[name])

    cpu_ratio, cpu_best = median("all", 0) / median("without", 0), best("all", 0) / best("without", 0)
    wall_ratio, wall_best = median("n2", 1) / median("all", 1), best("n2", 1) / best("all", 1)
    load = os.getloadavg()[0]
    return [(f"main job (CI=true pytest -n 0), with vs without the SDK items (-k \"{MAIN_JOB_WITHOUT_SDK}\")",
             f"{median('all', 0):.2f} s CPU vs {median('without', 0):.2f} s CPU (medians of {rounds}, alternating; "
             f"best {best('all', 0):.2f} vs {best('without', 0):.2f} s = {cpu_best:.2f}x)",
             f"{cpu_ratio:.2f}x the job without SDK items (goal <= 1.15x)"),
            ("main job, -n 2 vs -n 0 (wall)",
             f"{median('n2', 1):.2f} s vs {median('all', 1):.2f} s wall (medians of {rounds}, alternating; best "
             f"{best('n2', 1):.2f} vs {best('all', 1):.2f} s = {wall_best:.2f}x); -n 2 CPU {median('n2', 0):.2f} s; "
             f"load average {load:.1f} at the end",
             f"{wall_ratio:.2f}x the wall of -n 0 (goal <= 0.8x)"),
            ("main job, -n auto vs -n 0 (wall)",
             f"{median('auto', 1):.2f} s vs {median('all', 1):.2f} s wall (medians of {rounds}, alternating); "
             f"-n auto CPU {median('auto', 0):.2f} s (workers: the idle cores, none below 2)",
             f"{median('auto', 1) / median('all', 1):.2f}x the wall of -n 0")]


# -- foreign project: a run without seeds, with and without the plugin -------------------------


FOREIGN_TEST = """
import pytest


@pytest.fixture
def numbers():
    return list(range(20))


@pytest.mark.parametrize("n", range(20))
def test_square(numbers, n):
    assert numbers[n] ** 2 >= numbers[n]
"""
COUNT_MODULES = ("import sys, pytest; code = pytest.main(sys.argv[1:]); "
                 "print(len([m for m in sys.modules if m.startswith('pytest_skilltransfer')]), file=sys.stderr); "
                 "raise SystemExit(code)")


FOREIGN_ENV_DROPPED = ("PYTEST_ADDOPTS", "PYTHONDONTWRITEBYTECODE")  # bytecode cached, as in a user's environment


FOREIGN_TESTS = 200


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _foreign_run(project: Path, args: list[str]) -> tuple[float, float, str, int]:
    """(wall, CPU of the run and its workers, output without the timing line, plugin modules imported)."""
    start, cpu = time.perf_counter(), _children_cpu()
    done = subprocess.run([sys.executable, "-c", COUNT_MODULES, "-q", "-p", "no:cacheprovider", *args], cwd=project,
                          capture_output=True, text=True,
                          env={k: v for k, v in os.environ.items() if k not in FOREIGN_ENV_DROPPED})
    elapsed, used = time.perf_counter() - start, _children_cpu() - cpu
    if done.returncode != 0:
        raise RuntimeError(done.stdout + done.stderr)
    output = "\n".join(line for line in done.stdout.splitlines() if " passed in " not in line)
    return elapsed, used, output, int(done.stderr.strip().splitlines()[-1])


def foreign_project(work: Path, rounds: int) -> list[Row]:
    """A project without seeds (10 files of 20 tests): CPU (the run and its workers) and wall time with and
    without the plugin, alternating, median of `rounds`, and the plugin's CPU per test; the outputs must be
    identical but for the timing line."""
    project = work / "foreign"
    project.mkdir()
    (project / "pyproject.toml").write_text("[project]\nname = 'foreign'\n")
    for n in range(10):
        (project / f"test_part{n}.py").write_text(FOREIGN_TEST)
    rows = []
    _foreign_run(project, [])  # writes the bytecode caches both variants then read
    for label, extra in (("in-process", []), ("-n 2", ["-n", "2"])):
        times: dict[bool, list[float]] = {True: [], False: []}
        cpus: dict[bool, list[float]] = {True: [], False: []}
        outputs: dict[bool, set[str]] = {True: set(), False: set()}
        modules: dict[bool, int] = {}
        for _ in range(rounds):
            for plugin in (True, False):
                elapsed, used, output, count = _foreign_run(project, extra + ([] if plugin else ["-p", "no:skilltransfer"]))
                times[plugin].append(elapsed)
                cpus[plugin].append(used)
                outputs[plugin].add(output)
                modules[plugin] = count
        median = lambda values: sorted(values)[rounds // 2]  # noqa: E731
        with_plugin, without = median(times[True]), median(times[False])
        cpu_with, cpu_without = median(cpus[True]), median(cpus[False])
        same = "identical output" if outputs[True] == outputs[False] and len(outputs[True]) == 1 else "OUTPUT DIFFERS"
        per_test = (cpu_with - cpu_without) * 1000 / FOREIGN_TESTS
        rows.append((f"foreign project, {FOREIGN_TESTS} tests, {label}",
                     f"CPU {cpu_with:.3f} s with the plugin vs {cpu_without:.3f} s without ({per_test:+.2f} ms per test); "
                     f"wall {with_plugin:.3f} s vs {without:.3f} s (medians of {rounds}); {same}; plugin modules "
                     f"imported: {modules[True]}",
                     f"{cpu_with / cpu_without:.3f}x CPU (goal <= 1.05x), {(with_plugin / without - 1) * 100:+.1f}% wall"))
    return rows


# -- 5. duplicate requests under xdist -----------------------------------------------------------


LAYOUTS = {  # name -> (seeds outside the rootdir?, how to say so)
    "inside": (False, "inside the rootdir (testpaths)"),
    "seeds-dir": (True, "outside the rootdir (--seeds-dir)"),
    "path": (True, "outside the rootdir (seed folders given as paths)"),
}


def _duplicate_project(work: Path, fake: FakeProvider, name: str, layout: str) -> tuple[Path, list[str]]:
    outside = LAYOUTS[layout][0]
    project = work / name
    seeds_root = (work / f"{name}-elsewhere" / "seeds") if outside else (project / "seeds")
    project.mkdir(parents=True)
    _make_seeds(seeds_root, 4)
    (project / "pytest.ini").write_text(
        "[pytest]\nskilltransfer_pair = dup-a:dup-b dup-c:dup-b\nskilltransfer_nights = 1\n"
        + ("" if outside else "testpaths = seeds\n"))
    (project / "pyproject.toml").write_text(
        "[tool.skilltransfer.models]\n"
        f'dup-a = "anthropic:dup-a@{fake.anthropic_url}"\n'
        f'dup-b = "openai:dup-b@{fake.openai_url}"\n'
        f'dup-c = "anthropic:dup-c@{fake.anthropic_url}"\n')
    if layout == "seeds-dir":
        return project, [f"--seeds-dir={seeds_root}"]
    if layout == "path":
        return project, [f"--rootdir={project}", f"--config-file={project / 'pytest.ini'}",
                         *sorted(str(p) for p in seeds_root.iterdir())]
    return project, []


def duplicates(work: Path) -> list[Row]:
    rows = []
    with fake_provider(0.0) as fake:
        for layout, (_, where) in LAYOUTS.items():
            project, extra = _duplicate_project(work, fake, f"dup-{layout}", layout)
            sent: dict[str, int] = {}
            reports = {}
            for workers in ("0", "2"):
                fake.received.clear()
                shutil.rmtree(project / "cassettes", ignore_errors=True)
                _, done = _pytest(["-n", workers, "--record-mode=all", "--snapshot-update", "-q",
                                   f"--skilltransfer-json={project / f'report-{workers}.json'}", *extra], project,
                                  {"CI": ""})
                bodies = Counter(json.dumps(r["body"], sort_keys=True) for r in fake.received)
                sent[workers] = len(fake.received)
                reports[workers] = sum(count - 1 for count in bodies.values())
                if not fake.received or not (project / f"report-{workers}.json").exists():
                    raise RuntimeError(f"the {layout} layout did not run:\n{done.stdout}{done.stderr}")
            same = _scores(project / "report-0.json") == _scores(project / "report-2.json")
            rows.append((f"duplicate requests, -n 2, 4 seeds {where}",
                         f"{reports['2']} duplicate(s) in {sent['2']} requests (-n 0: {reports['0']} in {sent['0']}); "
                         f"same results as -n 0: {'yes' if same else 'NO'}",
                         f"{reports['2']} (goal 0)"))
    return rows


def _scores(path: Path) -> list[tuple[Any, ...]]:
    data = json.loads(path.read_text())["results"]
    return sorted((r["seed"], r["source"], r["target"], r["baseline_target"], r["transferred"], r["direct_target"])
                  for r in data)


# -- main ----------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (a smoke run, figures not comparable)")
    parser.add_argument("--only", action="append", metavar="SECTION",
                        help="run only these sections (recording, recording rate, user recording, replay, replay floor, cassette open, "
                             "collection, main job, duplicates, foreign project, report size); "
                             "cassette open needs replay")
    args = parser.parse_args()
    for var in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL"):
        os.environ.pop(var, None)
    sizes = (30, 300) if args.quick else (30, 300, 3000)
    reference = None
    try:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from legacy_open import open_before as reference  # type: ignore[no-redef]  # noqa: PLC0415
    except ImportError:
        pass
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="skilltransfer-bench-") as tmp:
        work = Path(tmp)
        sections: list[tuple[str, Callable[[], list[Row]]]] = [
            ("recording", lambda: recording_floor(work, args.quick)),
            ("recording rate", lambda: recording_rate(work, args.quick)),
            ("user recording", lambda: user_recording(work / "user-recording", repeats=1 if args.quick else 3)),
            ("replay", lambda: replay_cost(work, sizes)),
            ("replay floor", lambda: replay_floor(work)),
            ("cassette open", lambda: cassette_open(work, sizes, reference)),
            ("collection", lambda: collection(work, (20, 200) if not args.quick else (5, 50))),
            ("main job", lambda: main_job_cpu(work, 2 if args.quick else 3)),
            ("duplicates", lambda: duplicates(work)),
            ("foreign project", lambda: foreign_project(work, 3 if args.quick else 11)),
            ("report size", lambda: report_size(work, 20 if args.quick else 200)),
        ]
        for name, section in sections:
            if args.only and name not in args.only:
                continue
            start = time.perf_counter()
            found = section()
            rows += found
            print(f"[{name}: {time.perf_counter() - start:.1f} s] {found}", file=sys.stderr, flush=True)
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    for row in [("measure", "figures", "ratio"), *rows]:
        print("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip())


if __name__ == "__main__":
    main()
