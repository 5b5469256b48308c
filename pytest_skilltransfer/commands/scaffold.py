"""`python -m pytest_skilltransfer init DIR [--skill PATH]`: write a working seed to start from.

The seed holds a deliberately deficient SKILL.md (or, with `--skill`, a `skill = "<path>"` key
pointing at an existing skill inside the repository), training and held-out tasks that show every
judge op once, a two-page `brain/` corpus for the search tool, and a commented `seed.toml` (every judge op, a
`[judge]` stanza). The repository's `.gitignore` and `.gitattributes` get the cassette entries.
Existing files are never overwritten.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from ..engine.judges import rule_ops
from ..engine.seeds import CONFIG_FILE, SKILL_FILE, TEST_FILE, TRAIN_FILE, load_seed, repository_root
from ..engine.seed_data import SeedError

SKILL = """\
---
name: status-update
description: Write the weekly status update of a project
---

# Weekly status update

Write a friendly, flowing paragraph about how the project is going. Keep it upbeat and promise
that open items will be done as soon as possible.
"""

CONFIG = """\
# A seed: a deliberately deficient skill plus tasks whose judges say what "better" means.
# Run it:   pytest {path} --source sim-small --target sim-large --snapshot-update
# then commit {path}/__snapshots__/ and run without --snapshot-update from then on.
#
# Files
#   {skill_note}
#   benchmark.jsonl  training pool, one JSON task per line, split into train and val by a hash
#   held-out.jsonl   test tasks, never shown to the optimizer
#   brain/           pages the agent's `search` tool finds (slug = path without .md)
# Each task line is {{"task_id": "...", "task": "...", "judge": {{...}}}}, optionally with
#   "cluster": "billing" to group related tasks (a topic, paraphrases of one question): held-out tasks
#   sharing a cluster count as one unit of the gain's test (at least 6 clusters for any verdict); the judge is
#   {{"kind": "rule", "checks": [{{"op": OP, "arg": ARG}}, ...]}}   hard = every check passes
#   {{"kind": "qrels", "expected_slugs": ["topics/x"], "k": 5}}     the search tool returns these pages
# ops: {ops}
#      ({{"op": "rubric", "arg": "a criterion in words"}} is graded by the judge model set below)
#      (see the README's "Tasks and judges", and task.schema.json). To try a check on an answer:
#      python -m pytest_skilltransfer check {path} held-01 answer.txt

description = "Asks for an upbeat paragraph, so updates lack a status line, sections and owners."
{skill_line}
# pairs = ["sim-small->sim-large"]   # extra (source, target) pairs for this seed only
# expect = "hurts"   # the outcome this seed demonstrates: "transfers", "hurts" or "no effect shown"

# Gates: a failing gate fails the item. Uncomment to require a transfer gain.
[thresholds]
# min_gain = 0.3               # transferred - baseline, on the target
# min_score = 0.5              # transferred score
# min_efficiency = 0.5         # (transferred - baseline) / (direct - baseline)
# regression_tolerance = 0.1   # allowed drop below the committed snapshot
# harm_tolerance = "off"       # the harm gate (default 0: fails when the gain is surely below 0)
# noninferiority_margin = 0.05 # pass only when the gain is surely at or above -0.05

[split]
val_fraction = 0.34   # share of benchmark.jsonl used for validation
seed = 42

# Rubric checks need a judge model (the command line's --judge overrides this, this the ini).
# [judge]
# model = "sim-judge"     # a simulated judge for trying it out; e.g. haiku for real grading
# samples = 3             # judge calls per rubric check, majority vote
# min_accuracy = 0.8      # least accuracy on judge-calibration.jsonl (answers with known verdicts)
"""

GITIGNORE = """\
# pytest-skilltransfer: cassette folder locks and recording journals (a killed recorder's journal is
# folded in by the next recording; none of them belongs in the repository)
cassettes/**/.lock
cassettes/**/.*.lock
cassettes/**/.journal-*
cassettes/**/.inflight-*
cassettes/**/batch-manifest.jsonl.lock
"""
GITATTRIBUTES = """\
# pytest-skilltransfer: cassette indexes are generated beside each model file; collapsed in reviews
cassettes/**/*.yaml.index linguist-generated=true -diff
"""

PAGES = {
    "projects/search-migration.md": "# Search migration\n\nOwner: @dana. The index moves to the new cluster "
                                    "in week 32; the old cluster is switched off after a week of dual writes.\n",
    "projects/billing-export.md": "# Billing export\n\nOwner: @lee. CSV exports for finance, blocked on the "
                                  "ledger schema review.\n",
}

CHECKLIST = (  # what every status update must have: one check per rule op
    {"op": "regex", "arg": "^Status: (Green|Amber|Red)$"},
    {"op": "section_present", "arg": "Risks"},
    {"op": "section_contains", "arg": "Next"},
    {"op": "contains", "arg": "Owner:"},
    {"op": "not_contains", "arg": "as soon as possible"},
    {"op": "max_chars", "arg": 1500},
    {"op": "min_chars", "arg": 80},
    {"op": "no_refusal"},
)


def _rule(*checks: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "rule", "checks": list(checks)}


def _task(task_id: str, text: str, judge: dict[str, Any]) -> dict[str, Any]:
    return {"task_id": task_id, "task": text, "judge": judge}


def _update(task_id: str, project: str) -> dict[str, Any]:
    return _task(task_id, f"Write this week's status update for the {project}.", _rule(*CHECKLIST))


TRAIN = [
    _update("train-01", "mobile app redesign"),
    _update("train-02", "data warehouse move"),
    _update("train-03", "onboarding emails project"),
    _update("train-04", "API rate limits project"),
    _update("train-05", "audit log export"),
    _task("train-06", "Write this week's status update for the search migration; the team's notes have the facts.",
          _rule({"op": "tool_called", "arg": "search"}, *CHECKLIST)),
    _task("train-07", "Who owns the billing export, and what blocks it? Look it up in the notes.",
          {"kind": "qrels", "expected_slugs": ["projects/billing-export"], "k": 5}),
]
TEST = [
    _update("held-01", "design system project"),
    _update("held-02", "payments retry project"),
    _task("held-03", "When does the search migration switch off the old cluster? Look it up in the notes.",
          {"kind": "qrels", "expected_slugs": ["projects/search-migration"], "k": 5}),
]


class InitError(Exception):
    """The seed cannot be written where asked."""


def _jsonl(tasks: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(task) + "\n" for task in tasks)


def project_files(root: Path) -> list[Path]:
    """Add the cassette entries to the repository's .gitignore and .gitattributes (lines already
    there are kept; nothing is written twice). Returns the files changed."""
    changed = []
    for name, block in ((".gitignore", GITIGNORE), (".gitattributes", GITATTRIBUTES)):
        path = root / name
        current = path.read_text(encoding="utf-8") if path.is_file() else ""
        rules = [line for line in block.splitlines() if line and not line.startswith("#")]
        if all(rule in current.splitlines() for rule in rules):
            continue
        separator = "" if not current or current.endswith("\n") else "\n"
        path.write_text(current + separator + ("\n" if current else "") + block, encoding="utf-8")
        changed.append(path)
    return changed


def seed_files(folder: Path, skill: Path | None) -> dict[Path, str]:
    """Every file of the new seed and its text."""
    if skill is None:
        skill_note, skill_line = "SKILL.md         the deficient skill", '# skill = "../shared/SKILL.md"   ' \
            "# or: a skill kept elsewhere in the repository, instead of SKILL.md"
    else:
        relative = Path(os.path.relpath(skill.resolve(), folder.resolve())).as_posix()
        skill_note, skill_line = f"the skill       {relative} (named below)", f'skill = "{relative}"'
    files = {
        folder / CONFIG_FILE: CONFIG.format(path=folder.as_posix(), skill_note=skill_note, skill_line=skill_line,
                                            ops=", ".join(rule_ops())),
        folder / TRAIN_FILE: _jsonl(TRAIN),
        folder / TEST_FILE: _jsonl(TEST),
        **{folder / "brain" / name: text for name, text in PAGES.items()},
    }
    if skill is None:
        files[folder / SKILL_FILE] = SKILL
    return files


def init_seed(folder: Path, skill: Path | None = None) -> list[Path]:
    """Write a new seed into `folder` (created when missing); returns the files written."""
    if skill is not None:
        if not skill.is_file():
            raise InitError(f"--skill {skill}: no such file")
        repository = repository_root(folder)
        if not skill.resolve().is_relative_to(repository):
            raise InitError(f"--skill {skill}: outside the repository {repository}; keep the skill inside it")
    files = seed_files(folder, skill)
    existing = [path for path in files if path.exists()]
    if existing:
        raise InitError(f"{folder}: would overwrite {', '.join(str(p) for p in existing)}; choose a new folder")
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    try:
        load_seed(folder)
    except SeedError as exc:  # pragma: no cover - the template itself is tested
        raise InitError(f"the new seed does not load: {exc}") from None
    return sorted(files)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m pytest_skilltransfer init",
                                     description="Write a working seed (SKILL.md, tasks showing every judge op, "
                                                 "a brain/ corpus and a commented seed.toml) into DIR.")
    parser.add_argument("dir", type=Path, help="the new seed folder, e.g. seeds/my-skill")
    parser.add_argument("--skill", type=Path, help="an existing SKILL.md inside the repository to use instead of "
                                                   "the template (written as skill = \"<path>\" in seed.toml)")
    args = parser.parse_args(argv)
    try:
        written = init_seed(args.dir, args.skill)
    except InitError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for path in [*written, *project_files(repository_root(args.dir))]:
        print(f"wrote {path}")
    print(f"next: pytest {args.dir} --source sim-small --target sim-large --snapshot-update")
    return 0
