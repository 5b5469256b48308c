"""Seeds: a deficient SKILL.md plus training and held-out tasks, in gbrain `skillopt-v1` layout.

    <seed>/SKILL.md          the deficient skill (required)
    <seed>/benchmark.jsonl   training pool, split into train and val by a hash (required)
    <seed>/held-out.jsonl    test tasks (required, at least one)
    <seed>/seed.toml         optional: description, skill, corpus, pairs, optimizer, validate_on, validate_tolerance,
                             expect, [split], [thresholds], [judge]
    <seed>/brain/            optional corpus for the `search` tool (Markdown pages, slug = path)
    <seed>/judge-calibration.jsonl  optional: answers with the verdict a person expects, for rubric judges
    <seed>/context.jsonl     optional: fixed user/assistant turns placed before every task, in every arm

Loading validates everything and reports every problem at once, each naming file and line (or byte
offset, for a file that is not UTF-8). Inputs are bounded (`SeedLimits`, generous defaults the plugin
exposes as options): SKILL.md, each task text, and the corpus in all. Every file read must be a
regular file resolving inside the seed folder (a `skill =` file: inside the repository), and so must
the corpus folder and each page (`confined`: no `..`, absolute paths, symlinks out, FIFOs, devices, /proc).
"""

from __future__ import annotations

import hashlib
import json
import tomllib
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import regex

from ..guards.bounds import over_maximum
from ..guards.confined import ConfinedFolder, ConfinementError, read_confined
from ..guards.regex_portability import javascript_problems
from .judges import (
    BOUND_OPS,
    EXTRA_OPS,
    JUDGE_KINDS,
    RUBRIC_OP,
    TEXT_OPS,
    Check,
    Judge,
    compile_pattern,
    has_rubric,
    rule_ops,
)
from .rubric import CalibrationItem
from .seed_layout import (
    CALIBRATION_FILE,
    CONFIG_FILE,
    CONTEXT_FILE,
    GATE_NAMES,
    LIMIT_OPTIONS,
    SKILL_FILE,
    TEST_FILE,
    TRAIN_FILE,
    is_seed_dir,
)
from .tools import corpus_pages, decode_utf8, is_inside
from .validation import parse_models

CHECK_FIELDS = ("op", "arg")
CONTEXT_FIELDS = ("role", "content")
CONTEXT_ROLES = ("user", "assistant")
DEFAULT_CORPUS_DIR = "brain"


@dataclass(frozen=True)
class SeedLimits:
    """Size limits of a seed's inputs, in bytes of UTF-8 (each named by the option that raises it)."""

    skill_bytes: int = 1_000_000  # --max-skill-bytes: SKILL.md (about 250k tokens, beyond any context window)
    task_bytes: int = 100_000  # --max-task-bytes: each task's text
    corpus_bytes: int = 50_000_000  # --max-corpus-bytes: all corpus pages together




def _over(size: int, limits: SeedLimits, name: str, what: str) -> str | None:
    limit = getattr(limits, name)
    if size <= limit:
        return None
    return (f"{what} is {size} bytes, over the limit of {limit} bytes: shorten it, or raise the limit with "
            f"{LIMIT_OPTIONS[name]} (ini skilltransfer_{LIMIT_OPTIONS[name][2:].replace('-', '_')})")


def read_text_file(path: Path, problems: list[SeedProblem], limits: SeedLimits | None = None,
                   limit: str | None = None, inside: Path | None = None, what: str = "the seed folder",
                   folder: ConfinedFolder | None = None) -> str | None:
    """A seed file as text, or None after appending why not (confinement, unreadable, over a limit, not UTF-8).

    The file must be a regular file resolving inside `inside` (default: the folder holding it, read
    through `folder` when given: the seed folder, resolved once).
    """
    cap = getattr(limits, limit) if limits is not None and limit is not None else None
    try:
        if inside is None and folder is not None:
            data = folder.read(path, cap)
        else:
            data = read_confined(path, inside if inside is not None else path.parent, what, cap)
    except ConfinementError as exc:
        problems.append(SeedProblem(str(path), str(exc)))
        return None
    except OSError as exc:
        problems.append(SeedProblem(str(path), f"cannot be read ({exc.strerror or exc})"))
        return None
    if cap is not None and len(data) > cap:  # a regular file read in full up to cap + 1 bytes: over only then
        over = _over(max(len(data), _size(path)), limits, limit, "the file")
        if over:
            problems.append(SeedProblem(str(path), over))
            return None
    text, why = decode_utf8(data)
    if text is None:
        problems.append(SeedProblem(str(path), why))
    return text


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _present(path: Path, folder: ConfinedFolder | None = None) -> bool:
    """Whether anything is at `path` (a dangling symlink or a FIFO too): it is then read, and refused if it must be."""
    return folder.present(path) if folder is not None else path.is_symlink() or path.exists()


@dataclass(frozen=True)
class Task:
    """One task: its id, the prompt, its judge, where it was defined (`file:line`), and its cluster.

    `cluster` (optional) names a family of related tasks (a topic, paraphrases of one question):
    held-out tasks sharing it are one unit of the gain's test (`stats.clustered_gain`); None is a
    cluster of its own.
    """

    id: str
    text: str
    judge: Judge
    origin: str = ""
    cluster: str | None = None


@dataclass(frozen=True)
class ContextTurn:
    """One turn of a seed's fixed context (`context.jsonl`): sent unchanged before every task, in every arm."""

    role: str  # "user" | "assistant"
    content: str
    origin: str = ""


@dataclass(frozen=True)
class Thresholds:
    """Transfer gates for a seed. None means the gate is off."""

    min_gain: float | None = None
    min_score: float | None = None
    min_efficiency: float | None = None
    regression_tolerance: float | None = None
    harm_tolerance: float | None = None  # the harm gate: fail when the whole gain interval is below -tolerance
    noninferiority_margin: float | None = None  # pass only when the whole gain interval is at or above -margin
    off: tuple[str, ...] = ()  # gates seed.toml turns off (`harm_tolerance = "off"`), overriding their defaults

    def values(self) -> dict[str, float | None]:
        """{gate: threshold} of the gates this layer sets: numbers, and None for a gate it turns off."""
        return {**{k: v for k, v in self.__dict__.items() if k in GATE_NAMES and v is not None},
                **{k: None for k in self.off}}


THRESHOLD_OFF_WORDS = ("off", "none")


OUTCOMES = ("transfers", "hurts", "no effect shown")
ANY_PAIR = "*"


@dataclass(frozen=True)
class JudgeSettings:
    """A seed's `[judge]` table: the judge model, samples per rubric check, calibration threshold (None = unset)."""

    model: str | None = None
    samples: int | None = None
    min_accuracy: float | None = None


@dataclass(frozen=True)
class SplitSettings:
    """How the training pool splits into train and val (upstream: 0.34 and 42)."""

    val_fraction: float = 0.34
    seed: int = 42


@dataclass(frozen=True)
class Seed:
    """A loaded, validated seed with its train / val / test splits."""

    name: str
    path: Path
    skill: str
    train: tuple[Task, ...]
    val: tuple[Task, ...]
    test: tuple[Task, ...]
    description: str = ""
    thresholds: Thresholds = field(default_factory=Thresholds)
    split: SplitSettings = field(default_factory=SplitSettings)
    corpus_dir: Path | None = None
    pairs: tuple[tuple[str, str], ...] = ()
    optimizer: str | None = None  # the model that proposes edits for this seed's items (CLI / ini / marker win)
    validate_on: tuple[str, ...] = ()  # the validation set of models for this seed's items (the command line wins)
    validate_tolerance: float | None = None  # how far a listed model may drop (the command line / ini win)
    judge: JudgeSettings = field(default_factory=JudgeSettings)
    calibration: tuple[CalibrationItem, ...] = ()
    expect: tuple[tuple[str, str], ...] = ()  # (pair `SRC->TGT` or `*`, declared outcome)
    context: tuple[ContextTurn, ...] = ()  # fixed turns before every task (context.jsonl); never scored

    def expected_outcome(self, source: str, target: str) -> str | None:
        """The outcome this seed declares for a pair (`expect` in seed.toml), or None when it declares none."""
        declared = dict(self.expect)
        return declared.get(f"{source}->{target}", declared.get(ANY_PAIR))

    @property
    def rubric_origin(self) -> str | None:
        """Where the first task with a rubric check is defined (`file:line`), or None without rubric checks."""
        return next((t.origin for t in (*self.train, *self.val, *self.test) if has_rubric(t.judge)), None)


def split_pair(text: str) -> tuple[str, str] | None:
    """`SRC->TGT`, or `SRC:TGT` when neither name holds a colon; None when it is neither."""
    if "->" in text:
        source, _, target = text.partition("->")
    elif text.count(":") == 1:
        source, _, target = text.partition(":")
    else:
        return None
    source, target = source.strip(), target.strip()
    return (source, target) if source and target else None


@dataclass(frozen=True)
class SeedProblem:
    """One validation problem: where and what."""

    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


class SeedPortabilityWarning(UserWarning):
    """A seed loads here but would be judged differently by gbrain (JavaScript regex semantics)."""


class SeedError(Exception):
    """A seed failed validation. `problems` lists every problem found."""

    def __init__(self, seed_path: Path, problems: list[SeedProblem]):
        self.seed_path = seed_path
        self.problems = problems
        lines = "\n  ".join(str(p) for p in problems)
        super().__init__(f"seed {seed_path} is invalid ({len(problems)} problem(s)):\n  {lines}")


def split_bucket(task_id: str, split_seed: int) -> int:
    """The 0..99 bucket of a task id: sha256(str(seed) + id) mod 100, as upstream."""
    return int(hashlib.sha256(f"{split_seed}{task_id}".encode()).hexdigest(), 16) % 100


def split_train_val(
    seed_name: str, tasks: list[Task], settings: SplitSettings
) -> tuple[tuple[Task, ...], tuple[Task, ...]]:
    """Deterministic hash split of the training pool into (train, val), never leaving either empty."""
    cutoff = round(settings.val_fraction * 100)
    val = [t for t in tasks if split_bucket(f"{seed_name}:{t.id}", settings.seed) < cutoff]
    train = [t for t in tasks if t not in val]
    if not val and len(train) > 1:
        val.append(train.pop(0))
    if not train and len(val) > 1:
        train.append(val.pop())
    return tuple(train), tuple(val)


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
    kind = EXTRA_OPS[op].arg if op in EXTRA_OPS else None
    if op in BOUND_OPS or kind == "integer":
        if not _is_int(arg) or arg < 0:
            problems.append(SeedProblem(where, f"{op} needs a non-negative integer, got {arg!r}"))
            return None
        arg = int(arg)
    elif op == RUBRIC_OP:
        if not isinstance(arg, str) or not arg.strip():
            problems.append(SeedProblem(where, "rubric needs a criterion: a non-empty string saying what a good "
                                        "answer does, e.g. \"names the root cause of the incident\""))
            return None
    elif op in TEXT_OPS or op == "tool_called" or kind == "string":
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


def read_tasks(path: Path, problems: list[SeedProblem], limits: SeedLimits | None = None,
               folder: ConfinedFolder | None = None) -> list[Task]:
    """Read a JSONL task file, appending every problem (with file:line) to `problems`."""
    limits = limits or SeedLimits()
    tasks: list[Task] = []
    seen: dict[str, int] = {}
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
        judge = _parse_judge(raw["judge"], f"{where}: task {task_id!r}", problems)
        if judge is not None:
            tasks.append(Task(id=task_id, text=text, judge=judge, origin=where, cluster=cluster))
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


def _read_config(path: Path, problems: list[SeedProblem], folder: ConfinedFolder | None = None) -> dict[str, Any]:
    if not _present(path, folder):
        return {}
    text = read_text_file(path, problems, folder=folder)
    if text is None:
        return {}
    try:
        config = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        problems.append(SeedProblem(str(path), f"invalid TOML: {exc}"))
        return {}
    allowed = {"description": str, "skill": str, "corpus": str, "split": dict, "thresholds": dict, "pairs": list,
               "optimizer": str, "validate_on": (str, list), "validate_tolerance": (int, float), "judge": dict,
               "expect": (str, dict)}
    for key, value in config.items():
        if key not in allowed:
            problems.append(SeedProblem(str(path), f"unknown key {key!r}; known keys: {', '.join(allowed)}"))
        elif not isinstance(value, allowed[key]):
            kinds = allowed[key] if isinstance(allowed[key], tuple) else (allowed[key],)
            problems.append(SeedProblem(str(path), f"{key!r} must be a {' or a '.join(k.__name__ for k in kinds)}"))
    return config


def _number_table(
    table: dict[str, Any], keys: tuple[str, ...], where: str, problems: list[SeedProblem]
) -> dict[str, float]:
    values: dict[str, float] = {}
    for key, value in table.items():
        if key not in keys:
            problems.append(SeedProblem(where, f"unknown key {key!r}; known keys: {', '.join(keys)}"))
        elif isinstance(value, bool) or not isinstance(value, (int, float)):
            problems.append(SeedProblem(where, f"{key!r} must be a number, got {value!r}"))
        else:
            values[key] = value
    return values


def repository_root(path: Path) -> Path:
    """The nearest folder above `path` holding `.git` (a clone or a worktree); else `path`'s parent."""
    for folder in path.resolve().parents:
        if (folder / ".git").exists():
            return folder
    return path.resolve().parent


def skill_location(root: Path, config: dict[str, Any], config_path: Path,
                   problems: list[SeedProblem]) -> Path | None:
    """The seed's SKILL.md, or the file seed.toml names with `skill = "<path>"` (relative to the seed,
    inside the repository); None after recording a problem."""
    named = config.get("skill")
    if not isinstance(named, str):
        return root / SKILL_FILE
    if (root / SKILL_FILE).is_file():
        problems.append(SeedProblem(str(config_path), f"names skill = {named!r} but the seed folder holds a "
                                    f"{SKILL_FILE} too; keep one of them"))
        return None
    path = (root / named).resolve()
    repository = repository_root(root)
    if not path.is_relative_to(repository):
        problems.append(SeedProblem(str(config_path), f"skill = {named!r} resolves to {path}, outside the repository "
                                    f"{repository}; keep the skill inside it (copy it, or move the seed)"))
        return None
    return path


def _judge_settings(table: dict[str, Any], where: str, problems: list[SeedProblem]) -> JudgeSettings:
    """The `[judge]` table: model (a name), samples (a positive integer), min_accuracy (within [0, 1])."""
    values: dict[str, Any] = {}
    for key, value in table.items():
        if key == "model":
            if isinstance(value, str) and value.strip():
                values[key] = value.strip()
            else:
                problems.append(SeedProblem(where, f"'model' must be a model name, got {value!r}"))
        elif key == "samples":
            too_many = over_maximum("judge_samples", value) if _is_int(value) else None
            if _is_int(value) and value >= 1 and not too_many:
                values[key] = int(value)
            elif too_many:
                problems.append(SeedProblem(where, f"'samples' {too_many}"))
            else:
                problems.append(SeedProblem(where, f"'samples' must be a positive integer, got {value!r}"))
        elif key == "min_accuracy":
            if not isinstance(value, bool) and isinstance(value, (int, float)) and 0 <= value <= 1:
                values[key] = float(value)
            else:
                problems.append(SeedProblem(where, f"'min_accuracy' must be a number within [0, 1], got {value!r}"))
        else:
            problems.append(SeedProblem(where, f"unknown key {key!r}; known keys: model, samples, min_accuracy"))
    return JudgeSettings(**values)


def read_calibration(path: Path, problems: list[SeedProblem], folder: ConfinedFolder | None = None) -> list[CalibrationItem]:
    """Read `judge-calibration.jsonl`: {"answer", "criterion", "expected": "pass" | "fail", optional "task"}."""
    items: list[CalibrationItem] = []
    fields = ("answer", "criterion", "expected", "task")
    for _, where, raw in json_lines(path, "{answer, criterion, expected}", problems, folder):
        unknown = sorted(set(raw) - set(fields))
        missing = [k for k in fields[:3] if k not in raw]
        if unknown or missing:
            what = [f"missing field(s): {', '.join(missing)}"] if missing else []
            what += [f"unknown field(s): {', '.join(unknown)}"] if unknown else []
            problems.append(SeedProblem(where, "; ".join(what) + ' (fields: answer, criterion, expected, task)'))
            continue
        bad = [k for k in ("answer", "criterion") if not isinstance(raw[k], str) or not raw[k].strip()]
        if bad or not isinstance(raw.get("task", ""), str):
            problems.append(SeedProblem(where, f"{', '.join(bad) or 'task'} must be a non-empty string"))
            continue
        if raw["expected"] not in ("pass", "fail"):
            problems.append(SeedProblem(where, f"'expected' must be \"pass\" or \"fail\", got {raw['expected']!r}"))
            continue
        items.append(CalibrationItem(raw["answer"], raw["criterion"], raw["expected"] == "pass",
                                     raw.get("task", ""), where))
    if not items and not any(p.where.startswith(str(path)) for p in problems):
        problems.append(SeedProblem(str(path), "holds no calibration lines"))
    return items


def _corpus_dir(root: Path, config: dict[str, Any], config_path: Path, limits: SeedLimits,
                problems: list[SeedProblem], seed_folder: ConfinedFolder | None = None) -> Path | None:
    """The validated corpus folder (None when there is none), its pages checked, problems appended."""
    name = config.get("corpus", DEFAULT_CORPUS_DIR)
    if not isinstance(name, str):
        return None
    where = f"{config_path} corpus"
    if Path(name).is_absolute():
        problems.append(SeedProblem(where, f"{name!r} is an absolute path; name a folder inside the seed folder"))
        return None
    folder = root / name
    # nothing directly in the seed folder under that name: inside the seed and not a folder, no resolving needed
    missing = seed_folder is not None and folder.parent == root and not _present(folder, seed_folder)
    if not missing and not is_inside(folder, root):
        problems.append(SeedProblem(where, f"{name!r} resolves to {folder.resolve()}, outside the seed folder "
                                           f"{root.resolve()}; the corpus must live inside the seed"))
        return None
    if missing or not folder.is_dir():
        if "corpus" in config:
            problems.append(SeedProblem(str(config_path), f"corpus folder {folder} does not exist"))
        return None
    _, page_problems = corpus_pages(folder, root, limits.corpus_bytes)
    for page, message in page_problems:
        if "over the limit" in message:
            message = (f"{message} bytes: remove pages, or raise the limit with --max-corpus-bytes "
                       "(ini skilltransfer_max_corpus_bytes)")
        problems.append(SeedProblem(str(page), message))
    return folder


def _parse_expect(raw: Any, where: str, problems: list[SeedProblem]) -> tuple[tuple[str, str], ...]:
    """`expect = "hurts"` (every pair) or `[expect]` with `"SRC->TGT" = "<outcome>"` per pair (`"*"`: the rest)."""
    if raw is None:
        return ()
    table = {ANY_PAIR: raw} if isinstance(raw, str) else raw if isinstance(raw, dict) else {}
    declared = []
    for key, value in table.items():
        pair = None if key == ANY_PAIR else split_pair(key)
        if key != ANY_PAIR and pair is None:
            problems.append(SeedProblem(where, f"expected a pair SRC->TGT (or \"*\") as key, got {key!r}"))
        elif value not in OUTCOMES:
            problems.append(SeedProblem(where, f"{key!r}: the outcome must be one of "
                                        f"{', '.join(repr(o) for o in OUTCOMES)}, got {value!r}"))
        else:
            declared.append((ANY_PAIR if pair is None else f"{pair[0]}->{pair[1]}", value))
    return tuple(declared)


def load_seed(path: str | Path, limits: SeedLimits | None = None) -> Seed:
    """Load and validate one seed folder. Raises SeedError listing every problem."""
    limits = limits or SeedLimits()
    root = Path(path)
    if not root.is_dir():
        raise SeedError(root, [SeedProblem(str(root), "not a folder; a seed is a folder holding SKILL.md")])
    with ConfinedFolder(root) as folder:
        return _load_folder(root, limits, folder)


def _load_folder(root: Path, limits: SeedLimits, folder: ConfinedFolder) -> Seed:
    """`load_seed` of a folder, its files read through `folder`."""
    problems: list[SeedProblem] = []
    config_path = root / CONFIG_FILE
    config = _read_config(config_path, problems, folder)
    split_values = _number_table(config.get("split", {}) if isinstance(config.get("split"), dict) else {},
                                 ("val_fraction", "seed"), f"{config_path} [split]", problems)
    split = SplitSettings(**{**SplitSettings().__dict__, **split_values})
    if not 0 < split.val_fraction < 1:
        problems.append(SeedProblem(f"{config_path} [split]", f"val_fraction must be between 0 and 1, got {split.val_fraction}"))
    if not _is_int(split.seed):
        problems.append(SeedProblem(f"{config_path} [split]", f"seed must be an integer, got {split.seed!r}"))
    threshold_table = dict(config.get("thresholds", {}) if isinstance(config.get("thresholds"), dict) else {})
    thresholds_off = tuple(k for k, v in threshold_table.items()
                           if k in GATE_NAMES and isinstance(v, str) and v.strip().lower() in THRESHOLD_OFF_WORDS)
    threshold_values = _number_table({k: v for k, v in threshold_table.items() if k not in thresholds_off},
                                     GATE_NAMES, f"{config_path} [thresholds]", problems)
    expect = _parse_expect(config.get("expect") if isinstance(config.get("expect"), (str, dict)) else None,
                           f"{config_path} expect", problems)
    pairs = []
    for text in config.get("pairs", []) if isinstance(config.get("pairs"), list) else []:
        pair = split_pair(text) if isinstance(text, str) else None
        if pair is None:
            problems.append(SeedProblem(f"{config_path} pairs", f"expected SRC:TGT or SRC->TGT, got {text!r}"))
        else:
            pairs.append(pair)
    optimizer = config.get("optimizer") if isinstance(config.get("optimizer"), str) else None
    if optimizer is not None and not optimizer.strip():
        problems.append(SeedProblem(f"{config_path} optimizer", "is empty; name a model, or remove the key"))
    validate_on: tuple[str, ...] = ()
    if isinstance(config.get("validate_on"), (str, list)):
        try:
            validate_on = parse_models(config["validate_on"], f"{config_path} validate_on")
        except ValueError as exc:
            problems.append(SeedProblem(f"{config_path} validate_on", str(exc).partition(": ")[2]))
    validate_tolerance = config.get("validate_tolerance")
    if isinstance(validate_tolerance, bool) or (validate_tolerance is not None and not 0 <= validate_tolerance <= 1):
        problems.append(SeedProblem(f"{config_path} validate_tolerance", f"must be a number within [0, 1], "
                                    f"got {validate_tolerance!r}"))
        validate_tolerance = None
    skill_path = skill_location(root, config, config_path, problems)
    skill = ""
    if skill_path is not None and not _present(skill_path, folder):
        problems.append(SeedProblem(str(skill_path), "missing: every seed needs its deficient skill, as SKILL.md in "
                                    "the seed folder or named by `skill = \"<path>\"` in seed.toml"))
    elif skill_path is not None:
        named = isinstance(config.get("skill"), str)
        skill = read_text_file(skill_path, problems, limits, "skill_bytes",
                               inside=repository_root(root) if named else None,
                               what="the repository" if named else "the seed folder", folder=folder) or ""
        if not skill.strip() and not any(p.where == str(skill_path) for p in problems):
            problems.append(SeedProblem(str(skill_path), "is empty"))
    pools: dict[str, list[Task]] = {}
    for name in (TRAIN_FILE, TEST_FILE):
        file = root / name
        if not _present(file, folder):
            problems.append(SeedProblem(str(file), "missing: a seed needs both benchmark.jsonl and held-out.jsonl"))
            pools[name] = []
            continue
        pools[name] = read_tasks(file, problems, limits, folder)
        if not pools[name] and not any(p.where.startswith(str(file)) for p in problems):
            problems.append(SeedProblem(str(file), "holds no tasks"))
    judge = _judge_settings(config["judge"] if isinstance(config.get("judge"), dict) else {},
                            f"{config_path} [judge]", problems)
    calibration_path = root / CALIBRATION_FILE
    calibration = read_calibration(calibration_path, problems, folder) if _present(calibration_path, folder) else []
    context_path = root / CONTEXT_FILE
    context = read_context(context_path, problems, limits, folder) if _present(context_path, folder) else []
    problems += context_leaks(context, pools[TEST_FILE])
    corpus_dir = _corpus_dir(root, config, config_path, limits, problems, folder)
    train, val = split_train_val(root.name, pools[TRAIN_FILE], split) if not problems else ((), ())
    if not problems and (not train or not val):
        problems.append(SeedProblem(str(root / TRAIN_FILE), f"the split left train={len(train)} and val={len(val)} tasks; "
                                    "add tasks (at least 2) or change [split] val_fraction"))
    if problems:
        raise SeedError(root, problems)
    return Seed(
        name=root.name,
        path=root,
        skill=skill,
        train=train,
        val=val,
        test=tuple(pools[TEST_FILE]),
        description=str(config.get("description", "")),
        thresholds=Thresholds(**threshold_values, off=thresholds_off),
        split=split,
        corpus_dir=corpus_dir,
        pairs=tuple(pairs),
        optimizer=optimizer.strip() if optimizer else None,
        validate_on=validate_on,
        validate_tolerance=float(validate_tolerance) if validate_tolerance is not None else None,
        judge=judge,
        calibration=tuple(calibration),
        expect=expect,
        context=tuple(context),
    )


def discover_seeds(root: str | Path) -> list[Path]:
    """Seed folders at or directly below `root`, sorted by name (so every xdist worker agrees)."""
    base = Path(root)
    if is_seed_dir(base):
        return [base]
    if not base.is_dir():
        return []
    return sorted((p for p in base.iterdir() if is_seed_dir(p)), key=lambda p: p.name)
