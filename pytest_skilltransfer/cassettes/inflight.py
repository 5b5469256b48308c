"""Claims on requests being sent, shared by every process recording a seed folder: each request is paid once.

Before a recorder sends a request that nothing recorded answers, it claims it: it holds
`<seed folder>/.inflight-<digest of the request key>.lock` (filelock, an OS lock the kernel releases
if the process dies). A second recorder, in any process or xdist worker whatever its `TMPDIR`,
waits on the same claim; once it gets it, the first recorder's answer is already fsync'd in that
recorder's journal, or folded into the model file if that recorder has closed since, where the
second finds it (`SeedStore.answers_from_others`) instead of sending.
A recorder killed mid-call frees its claim, and the waiter then sends the request itself.

Claims are held per thread and released when the thread's SDK call ends (`sdk_common.on_call_end`),
so a failed call never keeps others waiting. The lock files are empty; unheld ones are removed when
the folder is opened or closed for recording.
"""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path
from typing import Any

PREFIX = ".inflight-"
SUFFIX = ".lock"


def claim_path(folder: Path, key: tuple[str, str, str]) -> Path:
    """The claim file of a request key in a seed folder."""
    digest = hashlib.sha256("\0".join(key).encode("utf-8")).hexdigest()[:24]
    return folder / f"{PREFIX}{digest}{SUFFIX}"


class InFlight:
    """This process's claims on requests of one seed folder."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._held = threading.local()

    def _claims(self) -> dict[tuple[str, str, str], Any]:
        claims = getattr(self._held, "claims", None)
        if claims is None:
            claims = self._held.claims = {}
        return claims

    def holds(self, key: tuple[str, str, str]) -> bool:
        """Whether this thread holds the claim on `key` (an SDK retry of the call it is sending)."""
        return key in self._claims()

    def claim(self, key: tuple[str, str, str], timeout_s: float) -> bool:
        """Take the claim on `key`, waiting while another recorder holds it (at most `timeout_s`).

        True once held; False when the wait timed out (the caller then sends anyway: paying twice is
        better than hanging).
        """
        from filelock import FileLock, Timeout

        if self.holds(key):
            return True
        self.folder.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(claim_path(self.folder, key)), timeout=timeout_s, thread_local=False)
        try:
            lock.acquire()
        except Timeout:
            return False
        self._claims()[key] = lock
        return True

    def release(self, key: tuple[str, str, str] | None = None, answered: bool = False) -> list[tuple[str, str, str]]:
        """Give up this thread's claim on `key` (all of this thread's claims when None).

        `answered`: the answer is durable in the journal, so the claim file is removed first; whoever
        waits on it, or comes later, finds the answer (they look after taking a claim).
        """
        claims, released = self._claims(), []
        for held in [key] if key is not None else list(claims):
            lock = claims.pop(held, None)
            if lock is None:
                continue
            if answered:
                Path(lock.lock_file).unlink(missing_ok=True)
            lock.release()
            released.append(held)
        return released


def clean_claims(folder: Path) -> None:
    """Remove claim files no process holds (call with the folder lock held)."""
    from filelock import FileLock, Timeout

    for path in folder.glob(f"{PREFIX}*{SUFFIX}") if folder.is_dir() else []:
        lock = FileLock(str(path), timeout=0, thread_local=False)
        try:
            lock.acquire()
        except Timeout:
            continue
        try:
            path.unlink(missing_ok=True)
        finally:
            lock.release()
