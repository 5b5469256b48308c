"""Seed scheduling under xdist: a worker starts on seeds as soon as its own collection is in, a later
worker gets the seeds still waiting, and a worker whose collection differs gets none and fails the run."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from pytest_skilltransfer.plugin.xdist_scheduling import SeedScheduling

COLLECTION = [f"seeds/{seed}/SKILL.md::transfer[{pair}]" for seed in ("a", "b", "c", "d")
              for pair in ("s->t", "t->s")]


class Node:
    """What the scheduler uses of xdist's WorkerController: its id, the items sent, a shutdown."""

    def __init__(self, name: str) -> None:
        self.gateway = SimpleNamespace(id=name)
        self.shutting_down = False
        self.sent: list[int] = []

    def send_runtest_some(self, indices: list[int]) -> None:
        self.sent.extend(indices)

    def shutdown(self) -> None:
        self.shutting_down = True


def _scheduler(workers: int) -> tuple[SeedScheduling, list[Any]]:
    reports: list[Any] = []
    config = SimpleNamespace(getvalue=lambda name: [f"{workers}*popen"],
                             option=SimpleNamespace(loadscopereorder=True), stash={},
                             hook=SimpleNamespace(pytest_collectreport=lambda report: reports.append(report)))
    return SeedScheduling(config), reports  # type: ignore[arg-type]


def _two_nodes(scheduler: SeedScheduling) -> tuple[Node, Node]:
    """Two workers added to the scheduler, neither with its collection in yet."""
    first, second = Node("gw0"), Node("gw1")
    scheduler.add_node(first)
    scheduler.add_node(second)
    return first, second


def _seeds(node: Node) -> set[str]:
    return {COLLECTION[i].split("/")[1] for i in node.sent}


def test_the_first_worker_starts_before_the_second_has_collected() -> None:
    scheduler, _ = _scheduler(2)
    first, second = _two_nodes(scheduler)
    scheduler.add_node_collection(first, COLLECTION)
    assert scheduler.collection_is_completed
    scheduler.schedule()
    assert first.sent and not second.sent  # the first worker is busy; the second is still collecting
    assert not scheduler.tests_finished
    scheduler.add_node_collection(second, COLLECTION)
    scheduler.schedule()
    assert second.sent and not second.shutting_down
    assert not _seeds(first) & _seeds(second)  # every seed's items on one worker
    done: set[int] = set()
    while len(done) < len(first.sent) + len(second.sent):  # the rest is handed out as items complete
        for node in (first, second):
            for index in [i for i in node.sent if i not in done]:
                done.add(index)
                scheduler.mark_test_complete(node, index)
    assert sorted(first.sent + second.sent) == list(range(len(COLLECTION)))
    assert not _seeds(first) & _seeds(second)


def test_a_late_worker_finds_no_seed_left_and_shuts_down() -> None:
    scheduler, _ = _scheduler(2)
    first, second = _two_nodes(scheduler)
    scheduler.add_node_collection(first, COLLECTION[:2])  # one seed: the first worker takes it
    scheduler.schedule()
    scheduler.add_node_collection(second, COLLECTION[:2])
    scheduler.schedule()
    assert first.sent == [0, 1] and second.sent == [] and second.shutting_down


def test_a_late_worker_with_another_collection_gets_nothing_and_fails_the_run() -> None:
    scheduler, reports = _scheduler(2)
    first, second = _two_nodes(scheduler)
    scheduler.add_node_collection(first, COLLECTION)
    scheduler.schedule()
    scheduler.add_node_collection(second, COLLECTION[:-1])
    scheduler.schedule()
    assert second.sent == [] and second.shutting_down
    assert [(r.nodeid, r.outcome) for r in reports] == [("gw1", "failed")]
    assert "Different tests were collected between gw0 and gw1" in str(reports[0].longrepr)
