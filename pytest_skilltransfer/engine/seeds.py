"""Seeds: a deficient SKILL.md plus training and held-out tasks, in gbrain `skillopt-v1` layout.

    <seed>/SKILL.md          the deficient skill (required)
    <seed>/benchmark.jsonl   training pool, split into train and val by a hash (required)
    <seed>/held-out.jsonl    test tasks (required, at least one)
    <seed>/seed.toml         optional: description, skill, corpus, pairs, optimizer, validate_on, validate_tolerance,
                             expect, max_tokens (the agent's reply limit), context_chosen (how context.jsonl was
                             chosen), [split], [thresholds], [judge]
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

import os
import tomllib
from pathlib import Path
from typing import Any

from ..guards.bounds import over_maximum
from ..guards.confined import ConfinedFolder
from .rubric import CalibrationItem
from .gate_specs import threshold_gates
from .seed_data import (
    ANSWER_MAX_TOKENS,
    ANY_PAIR,
    DEFAULT_CORPUS_DIR,
    MAX_TOKENS_RANGE,
    OUTCOMES,
    THRESHOLD_OFF_WORDS,
    JudgeSettings,
    Seed,
    SeedError,
    SeedLimits,
    SeedProblem,
    SplitSettings,
    Task,
    Thresholds,
    _present,
    read_text_file,
    split_pair,
    split_train_val,
)
from .seed_layout import (
    CALIBRATION_FILE,
    CONFIG_FILE,
    CONTEXT_FILE,
    SKILL_FILE,
    TEST_FILE,
    TRAIN_FILE,
    is_seed_dir,
)
from .task_files import _is_int, context_leaks, json_lines, read_context, read_tasks
from .tools import corpus_pages, is_inside
from .validation import parse_models


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
               "expect": (str, dict), "max_tokens": object, "context_chosen": str}  # max_tokens: checked by _max_tokens
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


def folder_outside_repository(root: Path) -> SeedProblem | None:
    """A seed folder that resolves outside its repository (it, or a folder above it, is a symlink out) as a
    problem, else None. The repository is found from the path as written, not from where it resolves (the
    nearest folder above holding `.git`; without one, the folder holding the seed), so a link cannot choose it."""
    written = Path(os.path.abspath(root))
    repository = next((folder for folder in written.parents if (folder / ".git").exists()), written.parent).resolve()
    resolved = written.resolve()
    if resolved.is_relative_to(repository):
        return None
    return SeedProblem(str(root), f"is a symlink to {resolved}, outside the repository {repository}; a seed folder "
                                  "is read only inside it (copy the seed in instead of linking it)")


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


def _max_tokens(value: Any, where: str, problems: list[SeedProblem]) -> int:
    """The agent's reply limit (`max_tokens`): an integer within `MAX_TOKENS_RANGE`, else the default."""
    if value is None:
        return ANSWER_MAX_TOKENS
    low, high = MAX_TOKENS_RANGE
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        problems.append(SeedProblem(where, f"must be an integer from {low} to {high} (the agent's reply limit "
                                    f"in tokens; default {ANSWER_MAX_TOKENS}), got {value!r}"))
        return ANSWER_MAX_TOKENS
    return value


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
    outside = folder_outside_repository(root)
    if outside is not None:
        raise SeedError(root, [outside])
    with ConfinedFolder(root) as folder:
        return _load_folder(root, limits, folder)


def _load_folder(root: Path, limits: SeedLimits, folder: ConfinedFolder) -> Seed:
    """`load_seed` of a folder, its files read through `folder`."""
    problems: list[SeedProblem] = []
    config_path = root / CONFIG_FILE
    config = _read_config(config_path, problems, folder)
    split_table = dict(config["split"]) if isinstance(config.get("split"), dict) else {}
    split_key = split_table.pop("key", "")
    if not isinstance(split_key, str):
        problems.append(SeedProblem(f"{config_path} [split]", f"key must be a string, got {split_key!r}"))
        split_key = ""
    split_values = _number_table(split_table, ("val_fraction", "seed"), f"{config_path} [split]", problems)
    split = SplitSettings(**{**SplitSettings().__dict__, **split_values, "key": split_key})
    if not 0 < split.val_fraction < 1:
        problems.append(SeedProblem(f"{config_path} [split]", f"val_fraction must be between 0 and 1, got {split.val_fraction}"))
    if not _is_int(split.seed):
        problems.append(SeedProblem(f"{config_path} [split]", f"seed must be an integer, got {split.seed!r}"))
    threshold_table = dict(config.get("thresholds", {}) if isinstance(config.get("thresholds"), dict) else {})
    thresholds_off = tuple(k for k, v in threshold_table.items()
                           if k in threshold_gates() and isinstance(v, str) and v.strip().lower() in THRESHOLD_OFF_WORDS)
    threshold_values = _number_table({k: v for k, v in threshold_table.items() if k not in thresholds_off},
                                     threshold_gates(), f"{config_path} [thresholds]", problems)
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
    max_tokens = _max_tokens(config.get("max_tokens"), f"{config_path} max_tokens", problems)
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
    context_chosen = str(config.get("context_chosen", "")).strip()
    if context_chosen and not context:
        problems.append(SeedProblem(str(root / CONFIG_FILE), f"context_chosen says how {CONTEXT_FILE} was chosen, "
                                    f"but this seed has no {CONTEXT_FILE}; remove the key or add the file"))
    problems += context_leaks(context, pools[TEST_FILE])
    corpus_dir = _corpus_dir(root, config, config_path, limits, problems, folder)
    train, val = split_train_val(pools[TRAIN_FILE], split) if not problems else ((), ())
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
        context_chosen=context_chosen,
        max_tokens=max_tokens,
    )


def discover_seeds(root: str | Path) -> list[Path]:
    """Seed folders at or directly below `root`, sorted by name (so every xdist worker agrees)."""
    base = Path(root)
    if is_seed_dir(base):
        return [base]
    if not base.is_dir():
        return []
    return sorted((p for p in base.iterdir() if is_seed_dir(p)), key=lambda p: p.name)
