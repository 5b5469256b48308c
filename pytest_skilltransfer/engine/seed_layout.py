"""A seed folder's file names and how a folder is recognized as a seed.

Only the standard library: the plugin asks these questions of every folder and file pytest
collects, in every run of the environment, seeds or not.
"""

from __future__ import annotations

from pathlib import Path

SKILL_FILE = "SKILL.md"
TRAIN_FILE = "benchmark.jsonl"
TEST_FILE = "held-out.jsonl"
CONFIG_FILE = "seed.toml"
CALIBRATION_FILE = "judge-calibration.jsonl"
CONTEXT_FILE = "context.jsonl"  # fixed conversation turns every arm receives before each task
LIMIT_OPTIONS = {"skill_bytes": "--max-skill-bytes", "task_bytes": "--max-task-bytes",  # SeedLimits field -> option
                 "corpus_bytes": "--max-corpus-bytes"}


def is_seed_dir(path: Path) -> bool:
    """A seed folder holds SKILL.md or a benchmark file and is not hidden or `_`-prefixed."""
    return path.is_dir() and not path.name.startswith((".", "_")) and (
        (path / SKILL_FILE).is_file() or (path / TRAIN_FILE).is_file()
    )


def is_collectable_seed(path: Path) -> bool:
    """A seed folder, not just any folder with a SKILL.md."""
    return is_seed_dir(path) and any((path / name).is_file() for name in (TRAIN_FILE, TEST_FILE, CONFIG_FILE))


def seed_file(seed_path: Path) -> Path:
    """The seed's file node: its SKILL.md, or its seed.toml when the skill lives elsewhere."""
    skill = seed_path / SKILL_FILE
    return skill if skill.is_file() or not (seed_path / CONFIG_FILE).is_file() else seed_path / CONFIG_FILE


def is_seed_file(path: Path) -> bool:
    """True for the file node of a collectable seed (the file pytest is given in a rerun id)."""
    return path.name in (SKILL_FILE, CONFIG_FILE) and is_collectable_seed(path.parent) and seed_file(path.parent) == path


def holds_seeds(path: Path) -> bool:
    """True when `path` is a seed folder, lies inside one, or has one directly below it."""
    if path.is_file():
        path = path.parent
    if is_collectable_seed(path) or is_collectable_seed(path.parent):
        return True
    try:
        return any(is_collectable_seed(child) for child in path.iterdir() if not child.name.startswith((".", "_")))
    except OSError:
        return False
