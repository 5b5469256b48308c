"""Read an existing SKILL.md for `init --from`: its front matter, and the checks its own text suggests.

A skill is found from a file or a folder: a folder holding `SKILL.md`, or a skills repository whose
sub-folders each hold one (then the folder must name one skill; several are listed). The front matter
(`---` YAML block) is read with PyYAML: `name` and `description` are kept (the seed uses the file as
written) and name the seed. Suggested checks come from what the skill's text shows an answer should
look like, each with the line that suggests it:

- a fenced template or example: its Markdown headings (`section_present`), its label lines
  (`regex ^Label: `), its front matter lines (`^---$`, `^name: [a-z0-9-]+$`, `^description: `);
- bold labels in the prose (`**Headings**:` -> `contains`);
- hex colours (`#141413` -> `regex #[0-9a-fA-F]{6}`);
- a numeric length limit ("at most 200 words" -> `max_chars`);
- quoted phrases the text forbids ("never write \"...\"" -> `not_contains`).

They are starting points for a person writing tasks, never run as they are.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

SKILL_FILE = "SKILL.md"
MAX_SUGGESTIONS = 12


class SkillSourceError(Exception):
    """The skill to start from cannot be found or read."""


@dataclass(frozen=True)
class Suggestion:
    """A check the skill's text suggests, and where."""

    check: dict[str, Any]
    line: int
    why: str

    def comment(self) -> str:
        return f"{json.dumps(self.check)}   # line {self.line}: {self.why}"


@dataclass(frozen=True)
class SkillSource:
    """An existing skill: its file, text, front matter fields and suggested checks."""

    path: Path
    text: str
    name: str
    description: str
    suggestions: tuple[Suggestion, ...]


def find_skill(path: Path) -> Path:
    """The SKILL.md that `path` names: the file itself, a skill folder's, or a skills repository's only one."""
    if path.is_file():
        return path
    if not path.is_dir():
        raise SkillSourceError(f"--from {path}: no such file or folder")
    if (path / SKILL_FILE).is_file():
        return path / SKILL_FILE
    found = sorted(p for p in path.glob(f"*/{SKILL_FILE}") if p.is_file())
    if len(found) == 1:
        return found[0]
    if not found:
        raise SkillSourceError(f"--from {path}: no {SKILL_FILE} in the folder or its sub-folders")
    names = ", ".join(p.parent.name for p in found)
    raise SkillSourceError(f"--from {path}: a skills repository with {len(found)} skills ({names}); "
                           f"name one, e.g. --from {path / found[0].parent.name}")


def front_matter(text: str, where: Path) -> tuple[dict[str, Any], int]:
    """The YAML front matter of a skill (or {}) and the number of lines it takes."""
    match = re.match(r"\A---[ \t]*\n(.*?\n)?---[ \t]*(?:\n|\Z)", text, re.S)
    if not match:
        return {}, 0
    try:
        fields = yaml.safe_load(match.group(1) or "") or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" line {mark.line + 2}" if mark is not None else ""
        raise SkillSourceError(f"{where}{line}: the front matter is not valid YAML ({exc.__class__.__name__}); "
                               "fix it or remove the --- block") from None
    if not isinstance(fields, dict):
        raise SkillSourceError(f"{where}: the front matter is not a YAML mapping of name, description, ...")
    return fields, match.group(0).count("\n")


def read_skill(path: Path) -> SkillSource:
    """Find, read and understand a skill to start a seed from."""
    file = find_skill(path)
    try:
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise SkillSourceError(f"{file}: not UTF-8 (byte {exc.start}); save it as UTF-8") from None
    fields, _ = front_matter(text, file)
    name = str(fields.get("name") or file.parent.name or "my-skill").strip()
    description = " ".join(str(fields.get("description") or "").split())
    return SkillSource(file, text, name, description, suggest_checks(text))


_FENCE = re.compile(r"^[ \t]*(```|~~~)[^\n]*\n(.*?)^[ \t]*\1[ \t]*$", re.S | re.M)
_BOLD_LABEL = re.compile(r"\*\*([A-Z][\w ./-]{0,30}?)\*\*:")
_HEX = re.compile(r"(?<![\w&])#[0-9a-fA-F]{6}\b")
_LIMIT = re.compile(r"\b(?:at most|no more than|under|fewer than|maximum of|up to)\s+(\d[\d,]*)\s*(words|characters|chars)\b", re.I)
_FORBIDDEN = re.compile(r"\b(?:never|do not|don't|avoid)\b[^.\n]*?[\"\u201c]([^\"\u201d\n]{2,40})[\"\u201d]", re.I)


def suggest_checks(text: str) -> tuple[Suggestion, ...]:
    """Checks the skill's own text suggests, first mention first, each once (at most MAX_SUGGESTIONS)."""
    _, skip = front_matter(text, Path(SKILL_FILE)) if text.startswith("---") else ({}, 0)
    found: dict[str, Suggestion] = {}

    def add(check: dict[str, Any], offset: int, why: str) -> None:
        key = json.dumps(check, sort_keys=True)
        if key not in found:
            found[key] = Suggestion(check, text.count("\n", 0, offset) + 1, why)

    body_start = len("".join(text.splitlines(keepends=True)[:skip]))
    for block in _FENCE.finditer(text, body_start):
        _template_checks(block.group(2), block.start(2), add)
    prose = _FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    for match in _BOLD_LABEL.finditer(prose, body_start):
        add({"op": "contains", "arg": match.group(0)}, match.start(), "a bold label the skill writes")
    for match in _HEX.finditer(prose, body_start):
        add({"op": "regex", "arg": "#[0-9a-fA-F]{6}"}, match.start(), f"colours given as hex codes ({match.group(0)})")
    for match in _LIMIT.finditer(prose, body_start):
        number = int(match.group(1).replace(",", ""))
        chars = number * 6 if match.group(2).lower().startswith("word") else number
        add({"op": "max_chars", "arg": chars}, match.start(), f"a length limit ({match.group(0)})")
    for match in _FORBIDDEN.finditer(prose, body_start):
        add({"op": "not_contains", "arg": match.group(1)}, match.start(1), "a phrase the skill forbids")
    ordered = sorted(found.values(), key=lambda s: s.line)
    return tuple(ordered[:MAX_SUGGESTIONS])


def _template_checks(block: str, offset: int, add: Any) -> None:
    """Checks a fenced template or example suggests: its headings, labels and front matter lines."""
    position = offset
    for line in block.splitlines(keepends=True):
        stripped = line.strip()
        heading = re.match(r"#{1,6}\s+(.+?)\s*#*$", stripped)
        label = re.match(r"\**([A-Z][\w ./-]{0,30}?)\**:[ \t]", stripped)
        key = re.match(r"([a-z][\w-]*):(?:[ \t]|$)", stripped)
        if stripped == "---":
            add({"op": "regex", "arg": "^---$"}, position, "a front matter or separator line in an example")
        elif heading:
            add({"op": "section_present", "arg": heading.group(1)}, position, "a heading in a template or example")
        elif key and key.group(1) == "name":
            add({"op": "regex", "arg": "^name: [a-z0-9-]+$"}, position, "a name line in an example")
        elif key:
            add({"op": "regex", "arg": f"^{re.escape(key.group(1))}: "}, position, "a key line in an example")
        elif label:
            add({"op": "regex", "arg": f"^{re.escape(stripped[:label.end()].rstrip())} "}, position,
                "a label line in a template or example")
        position += len(line)
