"""The batch manifest: which request went into which provider batch, durable before anything is paid.

One append-only JSON-lines file per cassette folder (`<cassettes>/batch-manifest.jsonl`), shared by
every process of a run (a `filelock` around each append, fsync'd like the cassette journals):

    {"event": "submit", "submission": S, "group": G, "custom_ids": [...], "at": T}   before the create call
    {"event": "created", "submission": S, "batch_id": B}                             once the provider named it
    {"event": "adopted", "submission": S, "batch_id": B}                             an uncertain creation found
    {"event": "abandoned", "submission": S}                                          looked up and not found
    {"event": "collected", "submission": S}                                          a run fetched its results

A custom id is always the one derived from its request (`custom_id`), so a restarted run that asks
the same request finds the batch that already holds it and re-adopts that batch instead of paying
again. A submission without a batch id is *uncertain* (the process died during the create call):
it is looked up at the provider before its requests are sent again.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..base import ModelCallError

FILE_NAME = "batch-manifest.jsonl"
CUSTOM_ID_PREFIX = "st-"


def custom_id(base_url: str, path: str, body: bytes) -> str:
    """The request's id inside a batch: derived from where it goes and its canonical JSON body.

    `st-` + 48 hex digits: within both providers' limits (at most 64 of `[a-zA-Z0-9_-]`), and the
    same request always gets the same id, in any process.
    """
    canonical = json.dumps(json.loads(body), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    blob = json.dumps([base_url.rstrip("/"), path, canonical])
    return CUSTOM_ID_PREFIX + hashlib.sha256(blob.encode("utf-8")).hexdigest()[:48]


@dataclass
class Submission:
    """One batch as the manifest knows it."""

    submission: str
    group: str
    custom_ids: tuple[str, ...]
    at: float
    batch_id: str | None = None
    abandoned: bool = False
    collected: bool = False
    line: int = 0  # the line of its submit event in the manifest file

    @property
    def open(self) -> bool:
        """Whether it may hold requests no run has collected: not abandoned, and its results never fetched."""
        return not self.abandoned and not self.collected

    def describe(self) -> str:
        """One line for messages: where it is written, what it is and what it holds."""
        what = f"batch {self.batch_id}" if self.batch_id else "an uncertain submission (its create call got no answer)"
        return f"line {self.line}: {what} of {len(self.custom_ids)} request(s) on {self.group}"


@dataclass
class Manifest:
    """The manifest file of one cassette folder, read once and appended to (see module docstring)."""

    path: Path
    submissions: dict[str, Submission] = field(default_factory=dict)
    latest: dict[tuple[str, str], str] = field(default_factory=dict)  # (group, custom id) -> newest submission
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def open(cls, folder: Path) -> "Manifest":
        manifest = cls(folder / FILE_NAME)
        if manifest.path.exists():
            lines = manifest.path.read_text(encoding="utf-8").splitlines()
            for number, line in enumerate(lines, 1):
                if not line.strip():
                    continue
                try:
                    manifest._apply(json.loads(line), number)
                except (ValueError, KeyError, TypeError):
                    if number < len(lines):
                        raise ManifestError(f"{manifest.path}:{number}: not a manifest line; restore the file "
                                            "from version control or delete it (batches it named are then "
                                            "sent again)") from None
                    # a torn last line: the process died while writing it; the event did not happen
        return manifest

    def _apply(self, event: dict[str, Any], line: int = 0) -> None:
        kind, name = event["event"], event["submission"]
        if kind == "submit":
            known = self.submissions.get(name)
            line = line or (known.line if known is not None else 0)
            sub = Submission(name, event["group"], tuple(event["custom_ids"]), float(event["at"]), line=line)
            self.submissions[name] = sub
            for cid in sub.custom_ids:
                self.latest[(sub.group, cid)] = name
        elif kind in ("created", "adopted"):
            self.submissions[name].batch_id = event["batch_id"]
        elif kind == "abandoned":
            self.submissions[name].abandoned = True
        elif kind == "collected":
            self.submissions[name].collected = True
        else:
            raise ValueError(kind)

    def append(self, event: dict[str, Any]) -> None:
        """Write one event durably (fsync'd, under the file lock), then apply it."""
        from filelock import FileLock

        line = json.dumps(event, sort_keys=True) + "\n"
        with self._lock, FileLock(str(self.path) + ".lock"):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            _drop_torn_tail(self.path)
            with open(self.path, "a", encoding="utf-8") as handle:
                handle.write(line)
                handle.flush()
                os.fsync(handle.fileno())
            self._refresh_others()
            self._apply(event)

    def _refresh_others(self) -> None:
        """Take in what other processes appended since (call with the file lock held)."""
        fresh = Manifest.open(self.path.parent)
        for name, sub in fresh.submissions.items():
            mine = self.submissions.get(name)
            if mine is None or (mine.batch_id is None and sub.batch_id) or (sub.abandoned and not mine.abandoned):
                self.submissions[name] = sub
            elif sub.collected:
                mine.collected = True
            if name in self.submissions:
                self.submissions[name].line = sub.line
        for key, name in fresh.latest.items():
            if key not in self.latest or self.submissions[self.latest[key]].at <= self.submissions[name].at:
                self.latest[key] = name

    def open_submissions(self) -> list[Submission]:
        """Submissions that may hold requests no run has collected (see `Submission.open`), oldest first."""
        with self._lock:
            return sorted((s for s in self.submissions.values() if s.open), key=lambda s: s.line)

    def live(self, group: str | None = None) -> bool:
        """Whether any submission (of `group`, when given) is not abandoned: a request of a recording run
        may sit in it; with none, no request of the group can be `known`."""
        with self._lock:
            return any(not s.abandoned and group in (None, s.group) for s in self.submissions.values())

    def known(self, group: str, cid: str) -> Submission | None:
        """The newest submission that holds this request, unless it was abandoned."""
        with self._lock:
            name = self.latest.get((group, cid))
            sub = self.submissions.get(name) if name else None
        return sub if sub is not None and not sub.abandoned else None


def _drop_torn_tail(path: Path) -> None:
    """Cut a last line a killed writer left unfinished (its event never happened), so appends stay whole."""
    if not path.exists():
        return
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        with open(path, "r+b") as handle:
            handle.truncate(data.rfind(b"\n") + 1)
            handle.flush()
            os.fsync(handle.fileno())


def pending_text(manifest: Manifest) -> str | None:
    """What the manifest still holds that no run collected, for doctor and `index --check`; None when nothing."""
    subs = manifest.open_submissions()
    if not subs:
        return None
    requests = sum(len(s.custom_ids) for s in subs)
    lines = "; ".join(s.describe() for s in subs[:5]) + (f"; and {len(subs) - 5} more" if len(subs) > 5 else "")
    return (f"{manifest.path}: {len(subs)} uncollected batch submission(s) holding {requests} request(s) ({lines}). "
            "The next recording run (with or without --transfer-batch) collects them without paying again; "
            "--transfer-batch-pending=cancel cancels in-flight ones at the provider instead")


class ManifestError(ModelCallError):
    """The manifest file is damaged."""
