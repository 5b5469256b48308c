"""Record through the real SDKs against a loopback fake, then replay offline with the network guarded."""

from __future__ import annotations

import json
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml
from fake_provider import FakeProvider

from pytest_skilltransfer import cassettes
from pytest_skilltransfer.cassettes import CassetteMiss, recording, scan_for_secrets
from pytest_skilltransfer.cassettes import store as cassette_store
from pytest_skilltransfer.cassettes.netguard import NetworkBlocked, network_guard
from pytest_skilltransfer.guards import whole_file
from pytest_skilltransfer.models.base import Message, ModelCallError, ModelError, Request, ToolSpec
from pytest_skilltransfer.models.providers import build_model

SEARCH = ToolSpec("search", "Search the notes.", {"type": "object", "properties": {"query": {"type": "string"}}})


def ask(text: str, system: str = "You are terse.", sample_id: int = 0, tools: tuple = ()) -> Request:
    return Request(system=system, messages=(Message("user", text),), tools=tools, max_tokens=64, sample_id=sample_id)


def models_for(fake: FakeProvider) -> list:
    return [
        build_model(f"anthropic:fake-claude@{fake.anthropic_url}"),
        build_model(f"openai:fake-gpt@{fake.openai_url}"),
    ]


def interactions(path: Path) -> list[dict]:
    return yaml.safe_load(path.read_text())["interactions"]


def test_record_then_replay_offline_gives_identical_replies(tmp_path: Path) -> None:
    fake = FakeProvider().start()
    models = models_for(fake)
    requests = [ask("What is a bridge round?"), ask("Summarise the burn.", sample_id=1)]
    with recording(tmp_path, "seed-a", "once") as rec:
        recorded = [m.complete(r) for m in models for r in requests]
        assert not rec.replay_only("fake-claude")
    fake.stop()
    served = len(fake.received)

    with recording(tmp_path, "seed-a", "none") as rec:
        assert rec.replay_only("fake-claude")
        replayed = [m.complete(r) for m in models for r in requests]

    assert replayed == recorded
    assert len(fake.received) == served == 4
    assert sorted(p.name for p in (tmp_path / "seed-a").iterdir()) == [
        ".lock", "fake-claude.yaml", "fake-claude.yaml.index", "fake-gpt.yaml", "fake-gpt.yaml.index"]
    assert all(r.usage.input_tokens > 0 and r.usage.output_tokens > 0 for r in replayed)


def test_cassette_files_are_readable_yaml_with_decoded_bodies(tmp_path: Path, fake_provider: FakeProvider) -> None:
    fake_provider.gzip_bodies = True  # the server compresses anyway: the cassette must still be text
    model = models_for(fake_provider)[0]
    system = "You write briefs.\nAlways end with a line 'Confidence: <low|medium|high>'."
    with recording(tmp_path, "seed-r", "once"):
        model.complete(ask("Brief me.", system=system))
    text = (tmp_path / "seed-r" / "fake-claude.yaml").read_text()
    assert "!!binary" not in text and "Always end with a line" in text
    entry = interactions(tmp_path / "seed-r" / "fake-claude.yaml")[0]
    assert entry["request"]["body"]["json"]["system"] == system
    assert entry["response"]["body"]["json"]["content"][0]["text"].startswith("fake answer")
    assert "content-encoding" not in entry["response"]["headers"]
    with recording(tmp_path, "seed-r", "none"):
        assert model.complete(ask("Brief me.", system=system)).text.startswith("fake answer")


def test_sample_ids_replay_distinctly_in_any_order(tmp_path: Path) -> None:
    fake = FakeProvider().start()
    model = models_for(fake)[1]
    with recording(tmp_path, "seed-s", "once"):
        first = {i: model.complete(ask("Same task", sample_id=i)).text for i in range(4)}
    fake.stop()
    assert len(set(first.values())) == 4
    with recording(tmp_path, "seed-s", "none"):
        again = {i: model.complete(ask("Same task", sample_id=i)).text for i in (3, 1, 0, 2)}
    assert again == first


def test_changed_system_prompt_is_a_clear_miss_with_diff_and_command(tmp_path: Path) -> None:
    fake = FakeProvider().start()
    model = models_for(fake)[0]
    skill = "Line one of the skill.\nAlways cite the slug.\nLine three."
    with recording(tmp_path, "seed-m", "once"):
        model.complete(ask("Task", system=skill))
    fake.stop()
    changed = skill.replace("Always cite the slug.", "Never cite anything.")
    started = time.monotonic()
    with recording(tmp_path, "seed-m", "none"), cassettes.phase("transferred"):
        with pytest.raises(CassetteMiss) as caught:
            model.complete(ask("Task", system=changed))
    assert time.monotonic() - started < 2.0  # no SDK retries on a miss
    miss = caught.value
    message = str(miss)
    assert (miss.seed, miss.model, miss.phase) == ("seed-m", "fake-claude", "transferred")
    assert isinstance(miss, ModelCallError)
    assert "-  Always cite the slug." in message and "+  Never cite anything." in message
    assert "pytest --record-mode=new_episodes --snapshot-update -k seed-m" in message
    assert "fake-claude.yaml" in message
    assert "phase 'baseline'" in str(miss.with_phase("baseline"))


def test_miss_reasons_for_extra_samples_and_unrecorded_models(tmp_path: Path) -> None:
    fake = FakeProvider().start()
    claude, gpt = models_for(fake)
    request = ask("Task")
    with recording(tmp_path, "seed-x", "once"):
        claude.complete(request)
    fake.stop()
    with recording(tmp_path, "seed-x", "none"):
        claude.complete(request)
        with pytest.raises(CassetteMiss, match="already been replayed"):
            claude.complete(request)
        with pytest.raises(CassetteMiss, match="holds no calls to fake-gpt"):
            gpt.complete(request)
    with recording(tmp_path, "never-recorded", "none"):
        with pytest.raises(CassetteMiss, match="No cassette has been recorded"):
            claude.complete(request)


def test_secrets_never_reach_the_cassette(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-" + "Q" * 40)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-proj-" + "Z" * 40)
    with FakeProvider() as fake:
        with recording(tmp_path, "seed-k", "once"):
            for model in models_for(fake):
                model.complete(ask("Hello"))
        sent = fake.received[0]["headers"]
    assert any("Q" * 40 in v for v in sent.values())  # the key really was sent...
    assert scan_for_secrets(tmp_path) == []  # ...but never stored
    text = "".join(p.read_text() for p in (tmp_path / "seed-k").glob("*.yaml"))
    for leaked in ("cookie-value", "org-fake", "fake-org", "req_", "authorization", "x-api-key", "x-stainless"):
        assert leaked not in text


def test_secret_scan_finds_a_planted_key(tmp_path: Path) -> None:
    folder = tmp_path / "seed-p"
    folder.mkdir()
    (folder / "m.yaml").write_text("interactions:\n- note: sk-ant-api03-" + "A" * 30 + "\n")
    (folder / "n.yaml").write_text("headers:\n  authorization:\n  - Bearer abcdefghijklmnopqrstuvwxyz\n")
    findings = scan_for_secrets(tmp_path)
    assert any("m.yaml:2: Anthropic API key" in f for f in findings)
    assert any("n.yaml:2: secret header" in f for f in findings)
    assert any("bearer token" in f for f in findings)


def test_committed_cassettes_hold_no_secrets() -> None:
    root = Path(__file__).resolve().parents[2] / "cassettes"
    assert scan_for_secrets(root) == []


@pytest.mark.parametrize("statuses", [(429, 529), (500,)])
def test_retried_error_responses_are_not_saved(tmp_path: Path, statuses: tuple[int, ...]) -> None:
    fake = FakeProvider().start()
    claude, gpt = models_for(fake)
    with recording(tmp_path, "seed-e", "once"):
        fake.fail_next(*statuses)
        a = claude.complete(ask("Retry me"))
        fake.fail_next(*statuses)
        o = gpt.complete(ask("Retry me"))
    fake.stop()
    assert len(fake.received) == 2 * (len(statuses) + 1)
    for name in ("fake-claude.yaml", "fake-gpt.yaml"):
        saved = interactions(tmp_path / "seed-e" / name)
        assert [e["response"]["status"]["code"] for e in saved] == [200]
    with recording(tmp_path, "seed-e", "none"):
        assert claude.complete(ask("Retry me")) == a and gpt.complete(ask("Retry me")) == o


def test_interrupted_write_leaves_previous_cassette_intact_and_the_journal_for_the_next_open(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeProvider().start()
    model = models_for(fake)[0]
    with recording(tmp_path, "seed-w", "once"):
        first = model.complete(ask("First"))
    path = tmp_path / "seed-w" / "fake-claude.yaml"
    before = path.read_text()

    def crash(src: str, dst: str) -> None:
        raise KeyboardInterrupt("power cut during save")

    monkeypatch.setattr(whole_file.os, "replace", crash)
    with pytest.raises(KeyboardInterrupt):
        with recording(tmp_path, "seed-w", "new_episodes"):
            second = model.complete(ask("Second"))
    fake.stop()
    assert path.read_text() == before
    left = sorted(p.name for p in path.parent.iterdir())
    assert not [name for name in left if name.endswith(".tmp")]  # no temp files left
    assert [name for name in left if name.endswith(".jsonl")]  # the answered call is in the journal
    import httpx2

    assert httpx2.HTTPTransport.handle_request.__module__.startswith("httpx2")  # vcrpy unpatched
    monkeypatch.undo()
    with recording(tmp_path, "seed-w", "none"):  # replay reads the journal as it is
        assert model.complete(ask("First")) == first and model.complete(ask("Second")) == second
    with recording(tmp_path, "seed-w", "new_episodes"):  # recording folds it into the file
        pass
    assert sorted(p.name for p in path.parent.iterdir()) == [".lock", "fake-claude.yaml", "fake-claude.yaml.index"]
    assert len(interactions(path)) == 2


def test_concurrent_calls_in_one_recording_are_all_recorded_and_replay(tmp_path: Path) -> None:
    fake = FakeProvider().start()
    fake.delay = 0.02
    claude, gpt = models_for(fake)
    jobs = [(m, ask(f"task {i}", sample_id=i % 3)) for i in range(12) for m in (claude, gpt)]
    with recording(tmp_path, "seed-c", "once"):
        with ThreadPoolExecutor(max_workers=8) as pool:
            recorded = list(pool.map(lambda job: job[0].complete(job[1]), jobs))
    fake.stop()
    assert len(interactions(tmp_path / "seed-c" / "fake-claude.yaml")) == 12
    assert len(interactions(tmp_path / "seed-c" / "fake-gpt.yaml")) == 12
    with recording(tmp_path, "seed-c", "none"):
        with ThreadPoolExecutor(max_workers=8) as pool:
            replayed = list(pool.map(lambda job: job[0].complete(job[1]), reversed(jobs)))
    assert list(reversed(replayed)) == recorded


def test_once_records_new_models_and_replays_recorded_ones(tmp_path: Path, fake_provider: FakeProvider) -> None:
    claude, gpt = models_for(fake_provider)
    with recording(tmp_path, "seed-o", "once"):
        first = claude.complete(ask("Task"))
    count = len(fake_provider.received)
    with recording(tmp_path, "seed-o", "once") as rec:
        assert rec.replay_only("fake-claude") and not rec.replay_only("fake-gpt")
        assert claude.complete(ask("Task")) == first
        gpt.complete(ask("Task"))
        with pytest.raises(CassetteMiss):  # a recorded model is frozen under `once`
            claude.complete(ask("Another task"))
    assert [r["body"]["model"] for r in fake_provider.received[count:]] == ["fake-gpt"]


def test_new_episodes_appends_and_all_rerecords(tmp_path: Path, fake_provider: FakeProvider) -> None:
    model = models_for(fake_provider)[1]
    with recording(tmp_path, "seed-n", "once"):
        model.complete(ask("One"))
    with recording(tmp_path, "seed-n", "new_episodes"):
        model.complete(ask("One"))
        model.complete(ask("Two"))
    assert len(fake_provider.received) == 2
    assert len(interactions(tmp_path / "seed-n" / "fake-gpt.yaml")) == 2
    with recording(tmp_path, "seed-n", "all"):
        model.complete(ask("One"))
    assert len(fake_provider.received) == 3
    assert len(interactions(tmp_path / "seed-n" / "fake-gpt.yaml")) == 2  # replaced, not duplicated


def test_folding_merges_with_what_another_process_wrote(tmp_path: Path, fake_provider: FakeProvider) -> None:
    model = models_for(fake_provider)[0]
    with recording(tmp_path, "seed-j", "once"):
        model.complete(ask("From worker one"))
    path = tmp_path / "seed-j" / "fake-claude.yaml"
    ours = interactions(path)
    path.unlink()
    with recording(tmp_path, "seed-j", "once"):  # "worker two" recorded while worker one was still open
        model.complete(ask("From worker two"))
    with cassette_store.folder_lock(path.parent):  # worker one folds its journal now
        assert cassette_store.write_model_file(path, ours)
    assert len(interactions(path)) == 2


def test_replay_guard_blocks_every_connect(tmp_path: Path) -> None:
    with recording(tmp_path, "seed-g", "none"):
        for address in (("127.0.0.1", 9), ("203.0.113.7", 443)):
            with socket.socket() as sock, pytest.raises(NetworkBlocked, match="network guard"):
                sock.connect(address)
        with pytest.raises(NetworkBlocked):
            socket.getaddrinfo("api.anthropic.com", 443)
    assert socket.socket.connect.__name__ == "connect"  # restored


def test_loopback_guard_allows_local_servers_only(fake_provider: FakeProvider) -> None:
    with network_guard(allow_loopback=True):
        with socket.create_connection(("127.0.0.1", fake_provider.port), timeout=2):
            pass
        with socket.socket() as sock, pytest.raises(NetworkBlocked):
            sock.connect(("198.51.100.1", 443))


def test_replay_of_an_official_endpoint_needs_no_key_and_never_connects(tmp_path: Path) -> None:
    model = build_model("haiku")
    with recording(tmp_path, "seed-z", "none"):
        with pytest.raises(CassetteMiss) as caught:
            model.complete(ask("Hi"))
    assert caught.value.model == "claude-haiku-5-5"


def test_recording_contexts_cannot_overlap(tmp_path: Path) -> None:
    with recording(tmp_path, "seed-1", "none"):
        with pytest.raises(ModelCallError, match="cannot overlap"):
            with recording(tmp_path, "seed-2", "none"):
                pass
    with recording(tmp_path, "seed-2", "none"):
        pass


def test_unknown_record_mode_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="none, once, new_episodes, all"):
        with recording(tmp_path, "seed", "rewind"):
            pass


def test_default_record_mode_follows_ci() -> None:
    assert cassettes.default_record_mode({"CI": "true"}) == "none"
    assert cassettes.default_record_mode({"CI": "1"}) == "none"
    assert cassettes.default_record_mode({"CI": "false"}) == "once"
    assert cassettes.default_record_mode({}) == "once"


def test_unreadable_cassette_file_is_an_error_not_an_overwrite(tmp_path: Path) -> None:
    folder = tmp_path / "seed-b"
    folder.mkdir()
    (folder / "m.yaml").write_text("interactions: [unclosed\n")
    with pytest.raises(ModelCallError, match="cannot be read"):
        with recording(tmp_path, "seed-b", "once"):
            pass
    assert (folder / "m.yaml").read_text() == "interactions: [unclosed\n"


def test_tool_loop_through_the_agent_records_and_replays(tmp_path: Path) -> None:
    from pytest_skilltransfer.engine.agent import AgentContext, run_task
    from pytest_skilltransfer.engine.ledger import CallCache, Meter
    from pytest_skilltransfer.engine.seed_data import Task
    from pytest_skilltransfer.engine.tools import Page

    corpus = (Page("topics/bridge-round", "Bridge round", "When to raise a bridge round."),)
    task = Task(id="t1", text="bridge round advice", judge=None)  # type: ignore[arg-type]
    fake = FakeProvider().start()
    models = models_for(fake)
    attempts: dict[tuple[str, str], object] = {}
    for mode in ("once", "none"):
        if mode == "none":
            fake.stop()
        with recording(tmp_path, "seed-t", mode):
            for model in models:
                ctx = AgentContext(model=model, cache=CallCache(), meter=Meter(), role="target", corpus=corpus)
                attempts[(mode, model.model_id)] = run_task(ctx, "Search first.", task, sample_id=0)
    for model_id in ("fake-claude", "fake-gpt"):
        attempt = attempts[("once", model_id)]
        assert attempt.tools_called == ("search",)  # type: ignore[attr-defined]
        assert attempt.retrieved_slugs == ("topics/bridge-round",)  # type: ignore[attr-defined]
        assert attempts[("none", model_id)] == attempt


_WORKER = """
import sys, time
from pathlib import Path
from pytest_skilltransfer.cassettes import recording
from pytest_skilltransfer.models.base import Message, Request
from pytest_skilltransfer.models.providers import build_model

root, url, name = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
model = build_model(f"anthropic:fake-claude@{url}")
with recording(root, "shared-seed", "new_episodes"):
    model.complete(Request(system="s", messages=(Message("user", f"from {name}"),), max_tokens=16))
    (root / f"ready-{name}").touch()
    deadline = time.monotonic() + 60
    while len(list(root.glob("ready-*"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
"""


def test_two_processes_recording_one_seed_keep_both_recordings(tmp_path: Path, fake_provider: FakeProvider) -> None:
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    workers = [
        subprocess.Popen([sys.executable, "-c", _WORKER, str(tmp_path), fake_provider.anthropic_url, name], cwd=root)
        for name in ("gw0", "gw1")
    ]
    assert [w.wait(timeout=120) for w in workers] == [0, 0]
    saved = interactions(tmp_path / "shared-seed" / "fake-claude.yaml")
    assert sorted(e["request"]["body"]["json"]["messages"][0]["content"] for e in saved) == ["from gw0", "from gw1"]


@pytest.mark.parametrize(
    "text",
    ["plain", "two\nlines", "trailing space \nx", "  indented\nfirst", "crlf\r\nx", "nel\x85x\ny", "ls\u2028x\ny",
     "yes", "null", "1.5", "- dash\n- list", "tab\tand\nnew", "emoji 🎉\n", "\x00nul\n", ""],
)
def test_stored_bodies_round_trip_exactly(text: str) -> None:
    from vcr.request import Request as VcrRequest

    from pytest_skilltransfer.cassettes.match import body_digest

    body = {"model": "m", "system": text, "messages": [{"role": "user", "content": text}]}
    request = VcrRequest("POST", "http://127.0.0.1:1/v1/messages", json.dumps(body).encode(), {})
    response = {"status": {"code": 200, "message": "OK"}, "headers": {}, "body": {"string": json.dumps(body).encode()}}
    plain = yaml.load(cassette_store.render([cassette_store.to_plain(request, response)]), Loader=cassette_store._Loader)
    loaded_request, loaded_response = cassette_store.from_plain(plain["interactions"][0])
    assert body_digest(loaded_request.body) == body_digest(request.body)
    assert json.loads(loaded_response["body"]["string"]) == body


def test_only_model_calls_are_recorded() -> None:
    from vcr.request import Request as VcrRequest

    from pytest_skilltransfer.cassettes.scrub import filter_request

    assert filter_request(VcrRequest("GET", "http://127.0.0.1:8080/health", b"", {})) is None
    kept = filter_request(VcrRequest("POST", "http://127.0.0.1:8080/v1/messages", b"{}", {"x-api-key": "k", "content-type": "application/json"}))
    assert kept is not None and "x-api-key" not in {k.lower() for k in kept.headers}
