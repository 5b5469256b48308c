"""The group-sequential design in the batch lane: a later wave (look) of held-out tasks is one batch per target
holding every arm's requests for it; the stops replay exactly offline, and a recording under `-n 2` stops where one
process does; the plan counts every wave on the critical path.

The loopback Batch APIs answer as the toy models do (`plugin_support`), over the wire: the optimizer proposes the
OWNER-LINE rule, and an agent whose skill holds it ends its answer with the owner line, so every held-out task
improves and each item is decided at its second look (12 of 24 tasks); a run that writes snapshots then scores the
transferred skill alone on the other 12 (the regression gate's reference)."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any, Callable

import batch_provider
import pytest
from batch_provider import BatchProvider
from fake_provider import _last_user_text
from plugin_support import CHECKS, DEFAULT_DESIGN, project

FAST = ("--transfer-batch", "--transfer-batch-gather=0.3", "--transfer-batch-poll=0.05")
EDIT = '[{"op": "add", "content": "OWNER-LINE: end every answer with `Owner: @team`."}]'
HELD_OUT = 24


def _system(body: dict[str, Any]) -> str:
    system = body.get("system")
    if system is None:  # the OpenAI wire: the system turn
        system = next((m.get("content") for m in body.get("messages") or [] if m.get("role") == "system"), "")
    if isinstance(system, list):
        return "".join(block.get("text", "") for block in system)
    return str(system or "")


def toy_text(body: dict[str, Any]) -> str:
    """What a toy model answers to a request body (the toy conftest's rules)."""
    user = _last_user_text(body.get("messages") or [])
    if "# Failing criteria (training tasks)" in user:
        return EDIT
    return "Routed: " + user.split()[-1] + (" Owner: @team" if "OWNER-LINE" in _system(body) else "")


def _toy(reply: Callable[..., dict[str, Any]], anthropic: bool) -> Callable[..., dict[str, Any]]:
    def answer(body: dict[str, Any], cache: Any = None) -> dict[str, Any]:
        found = reply(body, cache)
        text = toy_text(body)
        if anthropic:
            found["content"] = [{"type": "text", "text": text}]
            found["usage"]["output_tokens"] = max(1, len(text) // 4)
        else:
            found["choices"][0]["message"]["content"] = text
            found["usage"]["completion_tokens"] = max(1, len(text) // 4)
        return found
    return answer


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> BatchProvider:
    monkeypatch.setattr(batch_provider, "anthropic_reply", _toy(batch_provider.anthropic_reply, True))
    monkeypatch.setattr(batch_provider, "openai_reply", _toy(batch_provider.openai_reply, False))
    with BatchProvider() as server:
        server.shuffle = False
        yield server


def _project(pytester: pytest.Pytester, fake: BatchProvider) -> None:
    root = project(pytester, ini="skilltransfer_pair = small:large large:small\nskilltransfer_nights = 1\n"
                                 f"skilltransfer_correction = bonferroni\n{DEFAULT_DESIGN}", seeds=())
    seed = root / "route"
    seed.mkdir(parents=True)
    (seed / "SKILL.md").write_text("# route\n\nRoute the ticket to a team.\n")
    line = lambda kind, i: json.dumps({"task_id": f"{kind}-{i:02d}", "task": f"Route {kind} ticket {i}",  # noqa: E731
                                       "judge": CHECKS})
    (seed / "benchmark.jsonl").write_text("".join(line("training", i) + "\n" for i in range(8)))
    (seed / "held-out.jsonl").write_text("".join(line("held-out", i) + "\n" for i in range(HELD_OUT)))
    pytester.makepyprojecttoml(f'''
        [tool.skilltransfer.models]
        small = "anthropic:fake-small@{fake.anthropic_url}"
        large = "openai:fake-large@{fake.openai_url}"
    ''')


def _results(path: Any) -> dict[str, dict[str, Any]]:
    """Per pair, what a verdict is made of: the stop, the gain and the scores (the gate and costs aside)."""
    report = json.loads(path.read_text())
    assert not report["errors"], report["errors"]
    return {f"{r['source']}->{r['target']}": {k: r[k] for k in ("sequential", "gain", "scores", "outcome", "family")}
            for r in report["results"]}


def _held_out_waves(fake: BatchProvider) -> list[tuple[str, dict[int, set[bool]]]]:
    """Per batch with held-out requests: its model, and per held-out task the arms asked (True: the learned skill)."""
    found = []
    for batch in fake.created:
        tasks: dict[int, set[bool]] = {}
        for item in batch.items:
            user = _last_user_text(item["body"].get("messages") or [])
            if user.startswith("Route held-out ticket"):
                tasks.setdefault(int(user.split()[-1]), set()).add("OWNER-LINE" in _system(item["body"]))
        if tasks:
            found.append((item["body"]["model"], tasks))
    return found


def test_each_later_wave_is_one_batch_and_the_stops_replay_exactly(pytester: pytest.Pytester,
                                                                  fake: BatchProvider) -> None:
    _project(pytester, fake)
    recorded = pytester.runpytest_subprocess("--record-mode=once", "--snapshot-update", *FAST,
                                             "--skilltransfer-json=batch.json")
    recorded.assert_outcomes(passed=2)
    assert fake.served_sync == 0 and not fake.paid_twice()
    results = _results(pytester.path / "batch.json")
    for pair, result in results.items():  # every task improves: decided at look 2 of 4, 12 of 24 tasks
        stop = result["sequential"]
        assert (stop["look"], stop["tasks"], stop["of"], stop["reason"]) == (2, 12, HELD_OUT, "decided"), pair
        assert result["outcome"] == "transfers" and result["gain"]["n"] == 12
    waves = _held_out_waves(fake)
    for model in ("fake-small", "fake-large"):  # each item's target
        second = [tasks for name, tasks in waves if name == model and set(tasks) & set(range(6, 12))]
        assert len(second) == 1, f"{model}: the second wave went out in {len(second)} batches"
        assert second[0] == {task: {False, True} for task in range(6, 12)}  # baseline and transferred, both arms
        # a run that writes snapshots scores the transferred skill alone on the rest, in one batch: the reference
        past = [tasks for name, tasks in waves if name == model and set(tasks) & set(range(12, HELD_OUT))]
        assert past == [{task: {True} for task in range(12, HELD_OUT)}], past

    fake.stop()  # offline from here on
    replay = pytester.runpytest_subprocess("--record-mode=none", "--skilltransfer-json=replay.json")
    replay.assert_outcomes(passed=2)
    for result in results.values():  # a plain replay writes no snapshot, so it keeps no reference past the stop
        del result["sequential"]["reference"]
    assert _results(pytester.path / "replay.json") == results


def test_a_recording_under_n_2_stops_where_one_process_does(pytester: pytest.Pytester, fake: BatchProvider) -> None:
    _project(pytester, fake)
    pytester.runpytest_subprocess("--record-mode=once", "--snapshot-update", *FAST,
                                  "--skilltransfer-json=one.json").assert_outcomes(passed=2)
    (pytester.path / "cassettes").rename(pytester.path / "cassettes-one")
    pytester.runpytest_subprocess("--record-mode=once", "--snapshot-update", *FAST, "-n", "2",
                                  "--skilltransfer-json=two.json").assert_outcomes(passed=2)
    assert _results(pytester.path / "two.json") == _results(pytester.path / "one.json")
    assert set(fake.paid.values()) == {2}  # the same requests, each once per recording


def test_the_plan_counts_every_wave_on_the_critical_path() -> None:
    """The critical path (the progress line's round trips) counts the design's later looks as taken: one
    evaluation round trip per wave after the first, per item; the fixed design and restarts have none."""
    from pytest_skilltransfer.engine.results import ProtocolConfig
    from pytest_skilltransfer.plugin.planning import critical_path

    seed = SimpleNamespace(test=tuple(range(HELD_OUT)), corpus_dir=None, rubric_origin=None)
    specs = [SimpleNamespace(seed_path="route", source=s, target=t, validate_on=()) for s, t in
             (("small", "large"), ("large", "small"))]

    def path(**config: Any) -> int:
        runner = SimpleNamespace(settings=SimpleNamespace(protocol=ProtocolConfig(nights=1, **config)),
                                 seed=lambda _: seed)
        return critical_path(runner, specs, lambda spec: spec)  # type: ignore[arg-type]

    looks = 4  # 6 / 12 / 18 / 24 tasks
    assert path() == path(design="fixed") + (looks - 1) * len(specs)
    assert path(restarts=2) == path(design="fixed", restarts=2)
