"""Regression against a git ref: `--compare-to REF` gates each item on the snapshot committed at REF.

A pull request that changes a skill re-records and runs `--snapshot-update`, so its snapshots in
the working tree are its own results and a working-tree comparison can never fire. With
`--compare-to REF` the regression gate reads each item's snapshot as committed at REF instead
(`git cat-file blob REF:<path>`), also while `--snapshot-update` rewrites the working tree.

`--compare-to` alone (or `auto`) means: the pull request's base branch when `GITHUB_BASE_REF` is
set (`origin/<base>`, else `<base>`), otherwise the merge base of HEAD with the default branch
(`origin/HEAD`, else `origin/main`, `origin/master`, `main`, `master`). A ref git cannot read is a
usage error naming the ref and what to fetch; an item whose snapshot does not exist at REF is
reported as new ("no snapshot at REF"), never as a pass of the regression gate.

git is called as a subprocess: the needs are two plumbing commands, not worth a library.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, TypeVar

import pytest

from ..reports.comparison import regression_verdict

if TYPE_CHECKING:
    from ..evidence.item_record import ItemRecord

AUTO = "auto"
DIFF_LINES = 120  # a seed's diff against the ref, as the reports carry it
SNAPSHOT_REF = "the committed snapshot"  # what a regression without --compare-to is measured against
DEFAULT_BRANCHES = ("origin/HEAD", "origin/main", "origin/master", "main", "master")
BASE = pytest.StashKey["BaseRef"]()
T = TypeVar("T")


class RefError(Exception):
    """A ref that git cannot read, with what to do about it."""


@dataclass(frozen=True)
class BaseRef:
    """The commit the run compares with: as named, resolved, and how it was chosen."""

    name: str
    commit: str
    chosen_by: str
    toplevel: Path

    @property
    def label(self) -> str:
        """`origin/main@1a2b3c4`: what the reports name."""
        return f"{self.name}@{self.commit[:7]}"

    def relative(self, path: Path) -> str:
        """A path as git names it in this repository (absolute when it lies outside)."""
        resolved = path.resolve()
        return resolved.relative_to(self.toplevel).as_posix() if resolved.is_relative_to(self.toplevel) else str(path)

    def snapshot(self, path: Path) -> str | None:
        """The file at this commit, or None when it does not exist there."""
        relative = self.relative(path)
        if Path(relative).is_absolute():
            return None  # outside the repository: nothing can be committed there
        listed = _git(self.toplevel, "ls-tree", "--name-only", self.commit, "--", relative)
        if not listed.strip():
            return None
        return _git(self.toplevel, "cat-file", "blob", f"{self.commit}:{relative}")

    def as_dict(self) -> dict[str, str]:
        return {"ref": self.name, "commit": self.commit, "chosen_by": self.chosen_by}


def add_options(parser: pytest.Parser) -> None:
    from .spellings import _add

    group = parser.getgroup("skilltransfer")
    _add(group, parser, "compare-to", "regression gate against each snapshot committed at git REF; alone or "
         "'auto': the pull request's base ($GITHUB_BASE_REF), else the merge base with the default branch",
         metavar="REF", nargs="?", const=AUTO)


def _git(cwd: Path, *args: str) -> str:
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        raise RefError("git is not installed") from None
    if done.returncode != 0:
        raise RefError(done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"git {args[0]} failed")
    return done.stdout


def _commit(cwd: Path, ref: str) -> str | None:
    try:
        return _git(cwd, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").strip()
    except RefError:
        return None


def resolve(value: str, cwd: Path, environ: Mapping[str, str] | None = None) -> BaseRef:
    """The commit to compare with; RefError says why there is none and what to fetch."""
    environ = os.environ if environ is None else environ
    try:
        toplevel = Path(_git(cwd, "rev-parse", "--show-toplevel").strip()).resolve()
    except RefError as exc:
        raise RefError(f"{cwd} is not in a git repository ({exc})") from None
    if value != AUTO:
        commit = _commit(toplevel, value)
        if commit is None:
            raise RefError(f"git cannot read {value!r} in {toplevel}; fetch it first (in GitHub Actions: "
                           "actions/checkout with fetch-depth: 0)")
        return BaseRef(value, commit, "--compare-to", toplevel)
    base = environ.get("GITHUB_BASE_REF", "").strip()
    if base:
        for name in (f"origin/{base}", base):
            commit = _commit(toplevel, name)
            if commit is not None:
                return BaseRef(name, commit, "GITHUB_BASE_REF", toplevel)
        raise RefError(f"GITHUB_BASE_REF is {base!r} but neither origin/{base} nor {base} is in {toplevel}; "
                       "check out with fetch-depth: 0 (actions/checkout) or name the ref: --compare-to=REF")
    for branch in DEFAULT_BRANCHES:
        if _commit(toplevel, branch) is None:
            continue
        try:
            merge_base = _git(toplevel, "merge-base", "HEAD", branch).strip()
        except RefError as exc:
            raise RefError(f"no merge base of HEAD with {branch} in {toplevel} ({exc}); name the ref: "
                           "--compare-to=REF") from None
        return BaseRef(f"merge-base(HEAD, {branch})", merge_base, "default branch", toplevel)
    raise RefError(f"no default branch ({', '.join(DEFAULT_BRANCHES)}) in {toplevel}; name the ref: --compare-to=REF")


def configure(config: pytest.Config) -> BaseRef | None:
    """Resolve `--compare-to` / its ini key once per process; a ref git cannot read is a usage error."""
    from .options import _Reader

    value, where = _Reader(config).get("compare-to")
    if not value or str(value).strip().lower() in ("off", "none"):
        return None
    try:
        base = resolve(str(value).strip(), config.rootpath)
    except RefError as exc:
        raise pytest.UsageError(f"{where}: {exc}") from None
    config.stash[BASE] = base
    return base


def base_of(config: pytest.Config) -> BaseRef | None:
    return config.stash.get(BASE, None)


@dataclass(frozen=True)
class Before:
    """An item's snapshot at the base ref: its text, or None when the item is new there."""

    base: BaseRef
    path: Path
    text: str | None

    @property
    def reference(self) -> str:
        """How gate messages name what this item is compared with."""
        return f"the snapshot at {self.base.name} ({self.base.commit[:7]})"

    def committed(self, parse: Callable[[str], T]) -> T | None:
        """What the regression gate compares with, parsed from the text at the ref (None: new)."""
        return None if self.text is None else parse(self.text)

    def record(self, result: ItemRecord, gate: dict[str, Any], seed_path: Path | None = None) -> dict[str, Any]:
        """The item's `compare` record in the JSON report: ref, before -> after and the regression verdict.

        `status`: compared; new (no snapshot at the ref); unscored (a snapshot there without per-task
        scores, written before they were recorded: nothing to pair with, and said so).

        When the item's score moved against the ref, the record also says what caused it (`cause`): the
        diff of the seed's files (SKILL.md, tasks, seed.toml; its snapshots apart) from the ref to the
        working tree, the held-out tasks whose score dropped with the checks they now miss, the learned
        skill at the ref against this run's, and, for a regression, the tolerance that would accept it.
        """
        from .snapshots import parse_per_task

        from .gating import held_out_total

        per_task = None if self.text is None else parse_per_task(self.text)
        status = "new" if self.text is None else "unscored" if per_task is None else "compared"
        before = round(_mean_over_units(per_task, result), 3) if per_task else None
        verdict = regression_verdict(gate) if status == "compared" else status
        record = {"ref": self.base.name, "commit": self.base.commit, "snapshot": self.base.relative(self.path),
                  "status": status, "before": before, "after": result.transferred, "verdict": verdict}
        total = held_out_total(result)
        if per_task and len(per_task) < total:  # a reference written before it was kept in full: say so
            record["reference_tasks"], record["of"] = len(per_task), total
        if per_task and (verdict == "fail" or before != result.transferred):
            record["cause"] = self.cause(result, per_task, gate, seed_path)
        return record

    def cause(self, result: ItemRecord, per_task: dict[str, float], gate: dict[str, Any],
              seed_path: Path | None) -> dict[str, Any]:
        """What changed between the ref and this run, for the reports' "cause of a change"."""
        from ..reports.comparison import accept_tolerance, dropped_tasks, learned_at

        cause: dict[str, Any] = {"seed_diff": self.seed_diff(seed_path) if seed_path is not None else "",
                                 "tasks": dropped_tasks(per_task, result),
                                 "learned_before": learned_at(self.text or "")}
        tolerance = accept_tolerance(gate)
        if tolerance is not None:
            cause["accept_tolerance"] = tolerance
            if seed_path is not None:
                cause["seed_toml"] = self.base.relative(seed_path / "seed.toml")
        return cause

    def seed_diff(self, seed_path: Path) -> str:
        """`git diff REF -- <seed folder>`: the seed's files as the ref has them against the working tree,
        its snapshots apart (they are the results, not the cause); cut at `DIFF_LINES`."""
        relative = self.base.relative(seed_path)
        if Path(relative).is_absolute():
            return ""
        try:
            text = _git(self.base.toplevel, "diff", "--no-color", "--no-ext-diff", self.base.commit, "--", relative,
                        f":(exclude){relative}/__snapshots__")
        except RefError:
            return ""
        lines = text.splitlines()
        if len(lines) > DIFF_LINES:
            lines = [*lines[:DIFF_LINES], f"... ({len(lines) - DIFF_LINES} more diff lines: git diff "
                                          f"{self.base.commit[:7]} -- {relative})"]
        return "\n".join(lines)


def _mean_over_units(per_task: dict[str, float], result: ItemRecord) -> float:
    """The committed per-task scores' mean as this run's transferred score is taken: over the tasks it holds (a
    reference kept past its stop holds more), and over clusters when this run's held-out tasks share any (so
    before and after are the same kind of mean, on the same tasks)."""
    from ..evidence.stats import clustered_score

    transferred = result.scores.transferred
    clusters = {t.task_id: t.cluster for t in (transferred.tasks if transferred is not None else ())}
    same = {task: score for task, score in per_task.items() if task in clusters}
    per_task = same or per_task  # the tasks this run's score is over (a reference may hold more: past its stop)
    return clustered_score([list(per_task.values())], [clusters.get(task) for task in per_task]).mean


def before(config: pytest.Config, snapshot_path: Path) -> Before | None:
    """The snapshot at the base ref for one item, or None when `--compare-to` is off."""
    base = base_of(config)
    if base is None:
        return None
    try:
        text = base.snapshot(snapshot_path)
    except RefError as exc:  # the ref resolved at start: a failure now is the repository's, and loud
        raise pytest.UsageError(f"--compare-to {base.name}: cannot read {snapshot_path}: {exc}") from None
    return Before(base, snapshot_path, text)


def snapshot_change(config: pytest.Config, snapshot_path: Path, seed_path: Path, committed: dict[str, float],
                    result: ItemRecord, gate: dict[str, Any]) -> dict[str, Any] | None:
    """Without `--compare-to`, an item whose regression gate failed against the snapshot committed in the
    working tree: the same record as `Before.record` (ref "the committed snapshot"), its cause's diff taken
    against HEAD (the seed's uncommitted edits) when the project is a git repository; None otherwise."""
    if regression_verdict(gate) != "fail" or not committed:
        return None
    try:
        head: BaseRef | None = resolve("HEAD", config.rootpath)
    except RefError:
        head = None
    text = snapshot_path.read_text(encoding="utf-8") if snapshot_path.is_file() else ""
    base = BaseRef(SNAPSHOT_REF, head.commit if head else "", "snapshot", head.toplevel if head else config.rootpath)
    cause = Before(base, snapshot_path, text).cause(result, committed, gate, seed_path if head else None)
    return {"ref": SNAPSHOT_REF, "commit": base.commit, "snapshot": base.relative(snapshot_path), "status": "compared",
            "before": round(_mean_over_units(committed, result), 3), "after": result.transferred, "verdict": "fail",
            "cause": cause}
