"""Reading a seed's JSONL files: tasks with their checks and judges, and fixed context turns (a turn that quotes a
held-out task is refused); every problem is collected with its file and line."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any, Iterator

import regex

from ..guards.confined import ConfinedFolder
from ..guards.regex_portability import javascript_problems
from .judges import JUDGE_KINDS, RUBRIC_OP, Check, Judge, compile_pattern, op_spec, rule_ops
from .seed_data import (
    CHECK_FIELDS,
    CONTEXT_FIELDS,
    CONTEXT_ROLES,
    ContextTurn,
    SeedLimits,
    SeedPortabilityWarning,
    SeedProblem,
    Task,
    _over,
    read_text_file,
)


def _parse_judge(raw: Any, where: str, problems: list[SeedProblem]) -> Judge | None:
    if not isinstance(raw, dict):
        problems.append(SeedProblem(where, "judge must be an object with a 'kind'"))
        return None
    kind = raw.get("kind")
    if kind not in JUDGE_KINDS:
        problems.append(SeedProblem(where, f"unknown judge kind {kind!r}; use one of {', '.join(JUDGE_KINDS)}"))
        return None
    if kind == "rubric":  # a task-level rubric judge: several criteria, each one rubric check
        criteria = raw.get("criteria")
        unknown = sorted(set(raw) - {"kind", "criteria"})
        if unknown:
            problems.append(SeedProblem(where, f"unknown field(s) {', '.join(map(repr, unknown))} in a rubric judge; "
                                        "it takes 'kind' and 'criteria'"))
            return None
        if not isinstance(criteria, list) or not criteria:
            problems.append(SeedProblem(where, "rubric judge needs 'criteria', a non-empty list of criterion strings"))
            return None
        parsed = [_parse_check({"op": RUBRIC_OP, "arg": c}, f"{where}: criterion {i + 1}", problems)
                  for i, c in enumerate(criteria)]
        return None if any(c is None for c in parsed) else Judge(kind="rule", checks=tuple(c for c in parsed if c))
    if kind == "qrels":
        slugs, k = raw.get("expected_slugs"), raw.get("k", 5)
        ok = True
        if not isinstance(slugs, list) or not slugs or not all(isinstance(s, str) and s for s in slugs):
            problems.append(SeedProblem(where, "qrels judge needs 'expected_slugs', a non-empty list of slugs"))
            ok = False
        if not _is_int(k) or k < 1:
            problems.append(SeedProblem(where, f"qrels 'k' must be a positive integer, got {k!r}"))
            ok = False
        return Judge(kind="qrels", expected_slugs=tuple(slugs), k=int(k)) if ok else None
    checks = raw.get("checks")
    if not isinstance(checks, list) or not checks:
        problems.append(SeedProblem(where, "rule judge needs 'checks', a non-empty list of {op, arg}"))
        return None
    parsed = [_parse_check(c, f"{where}: check {i + 1}", problems) for i, c in enumerate(checks)]
    if any(c is None for c in parsed):
        return None
    return Judge(kind="rule", checks=tuple(c for c in parsed if c is not None))


def _is_int(value: Any) -> bool:
    """An integer as JSON Schema counts one: 3 or 3.0, never true/false."""
    return (isinstance(value, int) and not isinstance(value, bool)) or (isinstance(value, float) and value.is_integer())


def _parse_check(raw: Any, where: str, problems: list[SeedProblem]) -> Check | None:
    if not isinstance(raw, dict) or "op" not in raw:
        problems.append(SeedProblem(where, "a check must be an object with 'op' and 'arg'"))
        return None
    op, arg = raw["op"], raw.get("arg")
    unknown = sorted(set(raw) - set(CHECK_FIELDS))
    if unknown:
        problems.append(SeedProblem(where, f"unknown field(s) {', '.join(map(repr, unknown))} in a check; "
                                    "a check has only 'op' and 'arg'"))
        return None
    if op not in rule_ops():
        problems.append(SeedProblem(where, f"unknown op {op!r}; known ops: {', '.join(rule_ops())}"))
        return None
    kind = op_spec(op).arg  # type: ignore[union-attr]  (a known op: checked above)
    if kind == "integer":
        if not _is_int(arg) or arg < 0:
            problems.append(SeedProblem(where, f"{op} needs a non-negative integer, got {arg!r}"))
            return None
        arg = int(arg)
    elif op == RUBRIC_OP:
        if not isinstance(arg, str) or not arg.strip():
            problems.append(SeedProblem(where, "rubric needs a criterion: a non-empty string saying what a good "
                                        "answer does, e.g. \"names the root cause of the incident\""))
            return None
    elif kind in ("string", "regex"):
        if not isinstance(arg, str) or not arg.strip():
            problems.append(SeedProblem(where, f"{op} needs a non-empty string argument"))
            return None
        if op == "regex":
            try:
                compile_pattern(arg)
            except regex.error as exc:
                problems.append(SeedProblem(where, f"regex {arg!r} does not compile: {exc}"))
                return None
            for problem in javascript_problems(arg):
                warnings.warn(SeedPortabilityWarning(f"{where}: regex {arg!r}: {problem}; gbrain's judge would "
                                                     "score this check differently"), stacklevel=2)
    return Check(op=op, arg=arg)


def json_lines(path: Path, shape: str, problems: list[SeedProblem],
               folder: ConfinedFolder | None = None) -> Iterator[tuple[int, str, dict[str, Any]]]:
    """(line number, `file:line`, object) per non-blank JSONL line; malformed lines become problems."""
    for number, line in enumerate((read_text_file(path, problems, folder=folder) or "").splitlines(), start=1):
        where = f"{path}:{number}"
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(SeedProblem(where, f"malformed JSON: {exc.msg} (column {exc.colno})"))
            continue
        if not isinstance(raw, dict):
            problems.append(SeedProblem(where, f"each line must be a JSON object {shape}"))
            continue
        yield number, where, raw


def _shared_judge(raw: Any, where: str, problems: list[SeedProblem], judges: dict[str, Judge]) -> Judge | None:
    """`_parse_judge`, reusing the judge parsed from the same JSON earlier in the file. A judge with a regex
    check is parsed at each task, so its portability warnings name every line; a bad judge is never kept."""
    key = json.dumps(raw)
    judge = judges.get(key)
    if judge is None:
        judge = _parse_judge(raw, where, problems)
        if judge is not None and not any(check.op == "regex" for check in judge.checks):
            judges[key] = judge
    return judge


PLACEHOLDER = "TODO(init):"  # how a task slot `init --from` wrote starts until a person writes the task


def read_tasks(path: Path, problems: list[SeedProblem], limits: SeedLimits | None = None,
               folder: ConfinedFolder | None = None) -> list[Task]:
    """Read a JSONL task file, appending every problem (with file:line) to `problems`."""
    limits = limits or SeedLimits()
    tasks: list[Task] = []
    seen: dict[str, int] = {}
    judges: dict[str, Judge] = {}  # a file's tasks mostly share a few judges: each is parsed once (they are frozen)
    placeholders: list[str] = []
    for number, where, raw in json_lines(path, "{task_id, task, judge}", problems, folder):
        missing = [k for k in ("task_id", "task", "judge") if k not in raw]
        if missing:
            problems.append(SeedProblem(where, f"missing field(s): {', '.join(missing)}"))
            continue
        task_id, text = raw["task_id"], raw["task"]
        if not isinstance(task_id, str) or not task_id.strip():
            problems.append(SeedProblem(where, "task_id must be a non-empty string"))
            continue
        if not isinstance(text, str) or not text.strip():
            problems.append(SeedProblem(where, f"task {task_id!r}: 'task' must be a non-empty string"))
            continue
        if text.startswith(PLACEHOLDER):
            placeholders.append(where)
            continue
        over = _over(len(text.encode("utf-8")), limits, "task_bytes", f"task {task_id!r}: the text")
        if over:
            problems.append(SeedProblem(where, over))
            continue
        if task_id in seen:
            problems.append(SeedProblem(where, f"duplicate task_id {task_id!r} (first at line {seen[task_id]})"))
            continue
        seen[task_id] = number
        cluster = raw.get("cluster")
        if "cluster" in raw and (not isinstance(cluster, str) or not cluster.strip()):
            problems.append(SeedProblem(where, f"task {task_id!r}: 'cluster' must be a non-empty string naming the "
                                               f"task's family (a topic or paraphrase group), got {json.dumps(cluster)}; "
                                               "remove it to make the task a cluster of its own"))
            continue
        judge = _shared_judge(raw["judge"], f"{where}: task {task_id!r}", problems, judges)
        if judge is not None:
            tasks.append(Task(id=task_id, text=text, judge=judge, origin=where, cluster=cluster))
    if placeholders:
        more = f" (and {len(placeholders) - 1} more placeholder line(s) in this file)" if len(placeholders) > 1 else ""
        problems.append(SeedProblem(placeholders[0], f"a task slot `init --from` wrote is still a placeholder{more}: "
                                                     f"replace the text after {PLACEHOLDER!r} with a request someone "
                                                     "makes of the skill, and keep or edit its checks"))
    return tasks


def read_context(path: Path, problems: list[SeedProblem], limits: SeedLimits | None = None,
                 folder: ConfinedFolder | None = None) -> list[ContextTurn]:
    """Read `context.jsonl`: {"role": "user" | "assistant", "content": "..."} per line, alternating,
    opening with a user turn and closing with an assistant turn (the task is the next user turn)."""
    limits = limits or SeedLimits()
    turns: list[ContextTurn] = []
    for _, where, raw in json_lines(path, '{"role", "content"}', problems, folder):
        unknown = sorted(set(raw) - set(CONTEXT_FIELDS))
        missing = [k for k in CONTEXT_FIELDS if k not in raw]
        if unknown or missing:
            what = [f"missing field(s): {', '.join(missing)}"] if missing else []
            what += [f"unknown field(s): {', '.join(unknown)}"] if unknown else []
            problems.append(SeedProblem(where, "; ".join(what) + " (a context turn has only 'role' and 'content')"))
            continue
        role, content = raw["role"], raw["content"]
        if role not in CONTEXT_ROLES:
            problems.append(SeedProblem(where, f"'role' must be \"user\" or \"assistant\", got {json.dumps(role)}"))
            continue
        if not isinstance(content, str) or not content.strip():
            problems.append(SeedProblem(where, "'content' must be a non-empty string"))
            continue
        over = _over(len(content.encode("utf-8")), limits, "task_bytes", "the turn's content")
        if over:
            problems.append(SeedProblem(where, over))
            continue
        expected = CONTEXT_ROLES[len(turns) % 2]
        if role != expected:
            problems.append(SeedProblem(where, f"a {role} turn where a {expected} turn belongs: the turns alternate, "
                                               "starting with user (both wire protocols require it)"))
            continue
        turns.append(ContextTurn(role, content, where))
    if turns and turns[-1].role != "assistant":
        problems.append(SeedProblem(turns[-1].origin, "the context ends with a user turn: end it with the "
                                    "assistant's answer, since the task itself is the next user turn"))
    if not turns and not any(p.where.startswith(str(path)) for p in problems):
        problems.append(SeedProblem(str(path), "holds no turns: remove the file, or add user/assistant turns"))
    return turns


def context_leaks(turns: list[ContextTurn], held_out: list[Task]) -> list[SeedProblem]:
    """A held-out task's text inside a context turn: every arm (the optimizer's runs too) would see it."""
    return [SeedProblem(turn.origin, f"the {turn.role} turn contains held-out task {task.id!r} ({task.origin}): the "
                        "context is sent with every training task too, so it must not hold held-out data; "
                        "use an example that is not a held-out task")
            for turn in turns for task in held_out if task.text.strip() in turn.content]
