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
import re
import sys
from pathlib import Path
from typing import Any

from ..engine.judges import rule_ops
from ..engine.seeds import CONFIG_FILE, SKILL_FILE, TEST_FILE, TRAIN_FILE, load_seed, repository_root
from ..engine.seed_data import SeedError
from ..engine.task_files import PLACEHOLDER
from .skill_import import SkillSource, SkillSourceError, read_skill

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


PROJECTS = (  # the sample's projects: 24 for training (with two tool tasks) and 24 held out, so a run can decide
    "mobile app redesign", "data warehouse move", "onboarding emails project", "API rate limits project",
    "audit log export", "SSO rollout", "invoice PDF rewrite", "dark mode launch", "iOS widget project",
    "status page revamp", "partner API v2", "fraud rules update", "search relevance tuning", "CDN migration",
    "localization push", "admin console rebuild", "webhooks retry project", "notification digest",
    "pricing page test", "support macros cleanup", "SDK docs refresh", "GDPR export tool",
    "design system project", "payments retry project", "checkout speedup", "help center move",
    "Android tablet layout", "usage-based billing", "team invites flow", "feature flag cleanup",
    "log retention change", "database upgrade", "CSV import rework", "calendar sync", "referral program",
    "accessibility audit", "trial extension flow", "mobile crash fixes", "API key rotation", "email bounce handling",
    "churn survey", "desktop app updater", "SLA dashboard", "read replica rollout", "tax calculation update",
    "queue backlog fix", "image upload limits", "session timeout change",
)
TRAIN = [
    *(_update(f"train-{i + 1:02d}", project) for i, project in enumerate(PROJECTS[:22])),
    _task("train-23", "Write this week's status update for the search migration; the team's notes have the facts.",
          _rule({"op": "tool_called", "arg": "search"}, *CHECKLIST)),
    _task("train-24", "Who owns the billing export, and what blocks it? Look it up in the notes.",
          {"kind": "qrels", "expected_slugs": ["projects/billing-export"], "k": 5}),
]
TEST = [
    *(_update(f"held-{i + 1:02d}", project) for i, project in enumerate(PROJECTS[22:46])),
    _task("held-25", "When does the search migration switch off the old cluster? Look it up in the notes.",
          {"kind": "qrels", "expected_slugs": ["projects/search-migration"], "k": 5}),
]


FROM_TRAIN_SLOTS = 36  # about 24 train and 12 validation tasks at the default val_fraction
FROM_TEST_SLOTS = 24

FROM_CONFIG = """\
# A seed for the skill {name}, started from {source} with `init --from`.
# The skill is used as written ({skill_note}); its front matter stays:
#   name: {name}
#   description: {description}
#
# Next, write the tasks: benchmark.jsonl has {train} training slots (split into train and validation by a
# hash), held-out.jsonl {test} held-out slots (never shown to the optimizer; 24 or more let a run decide).
# Each slot's task starts with "{placeholder}": replace it with a request someone makes of this skill
# (or delete the line); the seed does not load while a placeholder is left.
#
# Checks this skill's own text suggests (each slot starts with them; keep, edit or remove):
{suggestions}
#
# A task line is {{"task_id": "...", "task": "...", "judge": {{"kind": "rule", "checks": [{{"op": OP, "arg": ARG}}]}}}}
# ops: {ops}
#      ({{"op": "rubric", "arg": "a criterion in words"}} is graded by the judge model set below). Regex checks are
#      multiline (^ and $ match at each line) and case-sensitive. To try the checks on an answer:
#      python -m pytest_skilltransfer check {path} held-01 answer.txt
# Then run it:   pytest {path} --source sim-small --target sim-large --snapshot-update

description = {seed_description}
{skill_line}

[split]
val_fraction = 0.34   # share of benchmark.jsonl used for validation
seed = 42

# Rubric checks need a judge model (the command line's --judge overrides this, this the ini).
# [judge]
# model = "sim-judge"     # a simulated judge for trying it out; e.g. haiku for real grading
# samples = 3
"""


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


def write_new_files(folder: Path, files: dict[Path, str]) -> None:
    """Write a new seed's files, refusing (before writing any) when one exists already."""
    existing = [path for path in files if path.exists()]
    if existing:
        raise InitError(f"{folder}: would overwrite {', '.join(str(p) for p in existing)}; choose a new folder")
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def init_seed(folder: Path, skill: Path | None = None) -> list[Path]:
    """Write a new seed into `folder` (created when missing); returns the files written."""
    if skill is not None:
        if not skill.is_file():
            raise InitError(f"--skill {skill}: no such file")
        repository = repository_root(folder)
        if not skill.resolve().is_relative_to(repository):
            raise InitError(f"--skill {skill}: outside the repository {repository}; keep the skill inside it")
    files = seed_files(folder, skill)
    write_new_files(folder, files)
    try:
        load_seed(folder)
    except SeedError as exc:  # pragma: no cover - the template itself is tested
        raise InitError(f"the new seed does not load: {exc}") from None
    return sorted(files)


def _from_slots(prefix: str, count: int, source: SkillSource, checks: list[dict[str, Any]]) -> str:
    slot = f"{PLACEHOLDER} a request someone makes of the {source.name} skill"
    return _jsonl([_task(f"{prefix}-{i + 1:02d}", slot, _rule(*checks)) for i in range(count)])


def from_files(folder: Path, source: SkillSource) -> dict[Path, str]:
    """Every file of a seed started from an existing skill: the skill as written, slots and a commented seed.toml."""
    repository = repository_root(folder)
    inside = source.path.resolve().is_relative_to(repository)
    if inside:
        relative = Path(os.path.relpath(source.path.resolve(), folder.resolve())).as_posix()
        skill_note, skill_line = f"named below: {relative}", f'skill = "{relative}"'
    else:
        skill_note, skill_line = f"copied unchanged into {SKILL_FILE}", ""
    checks = [s.check for s in source.suggestions] or [{"op": "no_refusal"}]
    listed = "\n".join(f"#   {s.comment()}" for s in source.suggestions) or (
        "#   (none found: no template, bold label, colour code, length limit or forbidden phrase; each slot starts\n"
        "#   with no_refusal, which a constant answer passes: write the checks that say what a good answer has)")
    summary = f"Starts from {source.name}" + (f": {source.description}" if source.description else "")
    files = {
        folder / CONFIG_FILE: FROM_CONFIG.format(
            name=source.name, source=source.path.as_posix(), skill_note=skill_note,
            description=source.description or "(none)", train=FROM_TRAIN_SLOTS, test=FROM_TEST_SLOTS,
            placeholder=PLACEHOLDER, suggestions=listed, ops=", ".join(rule_ops()), path=folder.as_posix(),
            seed_description=json.dumps(summary[:300]), skill_line=skill_line),
        folder / TRAIN_FILE: _from_slots("train", FROM_TRAIN_SLOTS, source, checks),
        folder / TEST_FILE: _from_slots("held", FROM_TEST_SLOTS, source, checks),
    }
    if not inside:
        files[folder / SKILL_FILE] = source.text
    return files


def init_from(folder: Path | None, path: Path) -> tuple[Path, list[Path]]:
    """Write a seed started from the skill at `path` (a SKILL.md, a skill folder or a one-skill repository) into
    `folder` (default: seeds/<the skill's name>); returns the folder and the files written."""
    try:
        source = read_skill(path)
    except SkillSourceError as exc:
        raise InitError(str(exc)) from None
    folder = folder or Path("seeds") / (re.sub(r"[^A-Za-z0-9._-]+", "-", source.name).strip("-.") or "my-skill")
    files = from_files(folder, source)
    write_new_files(folder, files)
    try:
        load_seed(folder)
    except SeedError as exc:  # only the placeholders may stand in the way
        others = [p for p in exc.problems if "placeholder" not in p.message]
        if others:  # pragma: no cover - the template itself is tested
            raise InitError(f"the new seed does not load: {exc}") from None
    return folder, sorted(files)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m pytest_skilltransfer init",
                                     description="Write a working seed (SKILL.md, tasks showing every judge op, "
                                                 "a brain/ corpus and a commented seed.toml) into DIR.")
    parser.add_argument("dir", type=Path, nargs="?", help="the new seed folder, e.g. seeds/my-skill (with --from: "
                                                             "default seeds/<the skill's name>)")
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--skill", type=Path, help="an existing SKILL.md inside the repository to use instead of "
                                                 "the template (written as skill = \"<path>\" in seed.toml)")
    what.add_argument("--from", dest="source", type=Path, metavar="PATH",
                      help="start from an existing skill (a SKILL.md, its folder, or a skills repository with one "
                           f"skill): used as written, with {FROM_TRAIN_SLOTS} training and {FROM_TEST_SLOTS} held-out "
                           "task slots and the checks its text suggests")
    args = parser.parse_args(argv)
    if args.dir is None and args.source is None:
        parser.error("name the new seed folder DIR, or start from a skill with --from PATH")
    try:
        if args.source is not None:
            folder, written = init_from(args.dir, args.source)
        else:
            folder, written = args.dir, init_seed(args.dir, args.skill)
    except InitError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for path in [*written, *project_files(repository_root(folder))]:
        print(f"wrote {path}")
    if args.source is not None:
        print(f"next: write the tasks in {folder / TRAIN_FILE} and {folder / TEST_FILE} (replace each {PLACEHOLDER!r} "
              f"slot; see the checks in {folder / CONFIG_FILE}), then: pytest {folder} --source sim-small --target "
              "sim-large --snapshot-update")
    else:
        print(f"next: pytest {folder} --source sim-small --target sim-large --snapshot-update")
    return 0
