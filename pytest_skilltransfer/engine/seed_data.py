"""What a seed is: its tasks and their checks, fixed context turns, thresholds, judge and split settings, the
Seed itself; the problems found while reading one (file:line) and the errors they make; the train/val split of
tasks; and reading one of its text files within the size limits."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from ..guards.confined import ConfinedFolder, ConfinementError, read_confined
from ..models.base import ModelRef
from .judges import Judge, has_rubric
from .rubric import CalibrationItem
from .gate_specs import all_gates, threshold_gates
from .seed_layout import LIMIT_OPTIONS
from .tools import decode_utf8

CHECK_FIELDS = ("op", "arg")
CONTEXT_FIELDS = ("role", "content")
CONTEXT_ROLES = ("user", "assistant")
DEFAULT_CORPUS_DIR = "brain"
ANSWER_MAX_TOKENS = 512  # the agent's reply limit per call, unless a seed sets `max_tokens`
MAX_TOKENS_RANGE = (16, 8192)  # what a seed's `max_tokens` may be


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


class Thresholds:
    """A layer of gate thresholds (seed.toml, ini, marker, command line, or their merge), keyed by the gates of
    `engine.gate_specs`: a number sets a gate, None leaves it unset; `off` names the gates this layer turns off
    (`harm_tolerance = "off"`), overriding their defaults. `thresholds.min_gain` reads one gate (None: unset)."""

    __slots__ = ("_values", "off")

    def __init__(self, off: tuple[str, ...] = (), **values: float | None) -> None:
        unknown = sorted(set(values) - set(threshold_gates()))
        if unknown:
            raise TypeError(f"unknown gate(s) {', '.join(unknown)}; gates: {', '.join(threshold_gates())}")
        object.__setattr__(self, "_values", {k: v for k, v in values.items() if v is not None})
        object.__setattr__(self, "off", tuple(off))

    def __getattr__(self, name: str) -> float | None:
        if name in all_gates():
            return self._values.get(name)
        raise AttributeError(name)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Thresholds is immutable")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Thresholds) and (self._values, self.off) == (other._values, other.off)

    def __hash__(self) -> int:
        return hash((tuple(sorted(self._values.items())), self.off))

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in self._values.items())
        return f"Thresholds({fields}{', ' if fields and self.off else ''}{f'off={self.off!r}' if self.off else ''})"

    def get(self, name: str) -> float | None:
        """The threshold of one gate, None when unset."""
        return self._values.get(name)

    def set(self) -> dict[str, float]:
        """{gate: threshold} of the gates set, in declaration order."""
        return {k: self._values[k] for k in threshold_gates() if k in self._values}

    def values(self) -> dict[str, float | None]:
        """{gate: threshold} of the gates this layer sets: numbers, and None for a gate it turns off."""
        return {**self.set(), **{k: None for k in self.off}}


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
    key: str = ""  # hashed with each task id (`[split] key`); by default the task ids alone


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
    context_chosen: str = ""  # how the fixed context was chosen (seed.toml `context_chosen`), shown beside its results
    max_tokens: int = ANSWER_MAX_TOKENS  # the agent's reply limit for this seed's tasks (`max_tokens` in seed.toml)

    def expected_outcome(self, source: ModelRef, target: ModelRef) -> str | None:
        """The outcome this seed declares for a pair (`expect` in seed.toml, keyed by the names the run gave
        or by the model ids they resolve to, so an alias finds it), or None when it declares none."""
        declared = dict(self.expect)
        for key in (f"{source.name}->{target.name}", f"{source.model_id}->{target.model_id}", ANY_PAIR):
            if key in declared:
                return declared[key]
        return None

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


def split_train_val(tasks: list[Task], settings: SplitSettings) -> tuple[tuple[Task, ...], tuple[Task, ...]]:
    """Deterministic hash split of the training pool into (train, val), never leaving either empty. It depends on
    the seed's content only (the tasks' ids, the split seed and `[split] key`), not on its folder name: a copied or
    renamed seed splits alike."""
    cutoff = round(settings.val_fraction * 100)
    val = [t for t in tasks if split_bucket(f"{settings.key}:{t.id}" if settings.key else t.id, settings.seed) < cutoff]
    train = [t for t in tasks if t not in val]
    if not val and len(train) > 1:
        val.append(train.pop(0))
    if not train and len(val) > 1:
        train.append(val.pop())
    return tuple(train), tuple(val)
