"""A run's scope ends what the run opened: its SDK clients are closed when it leaves, and the next run builds its own."""

from __future__ import annotations

from pytest_skilltransfer.guards import run_scope
from pytest_skilltransfer.models import sdk_common


class _Client:
    closed = False

    def close(self) -> None:
        self.closed = True


def test_a_runs_clients_are_closed_when_it_ends_and_the_next_run_builds_its_own() -> None:
    first, second = run_scope.RunScope("first"), run_scope.RunScope("second")
    run_scope.enter(first)
    try:
        client = sdk_common.cached_client(("wire", "url"), _Client)
        assert sdk_common.cached_client(("wire", "url"), _Client) is client  # shared within the run
    finally:
        run_scope.leave(first)
    assert client.closed
    run_scope.enter(second)
    try:
        assert sdk_common.cached_client(("wire", "url"), _Client) is not client
    finally:
        run_scope.leave(second)


def test_leave_callbacks_run_once_newest_first_and_a_failing_one_stops_none() -> None:
    scope, calls = run_scope.RunScope(), []
    scope.on_leave(lambda: calls.append("first"))
    scope.on_leave(lambda: 1 / 0)
    scope.on_leave(lambda: calls.append("last"))
    run_scope.enter(scope)
    run_scope.leave(scope)
    run_scope.leave(scope)
    assert calls == ["last", "first"]
