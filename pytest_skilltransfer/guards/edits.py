"""Bounded edits to a skill's learned block.

The optimizer never rewrites the hand-written skill. Its edits land in one marked block at the end:

    <!-- skilltransfer:learned start -->
    ## Learned rules
    - first rule
    - second rule, which may span lines:
      continuation lines are indented by two spaces,
      so templates and worked examples survive a round trip.
    <!-- skilltransfer:learned end -->

Ops: `add` appends a rule (refused when blank or already present); `replace` swaps the one rule
that contains `anchor` for `content`; `delete` removes the one rule that contains `anchor`.
An anchor that matches no rule, or more than one, leaves the skill unchanged and is reported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

START = "<!-- skilltransfer:learned start -->"
END = "<!-- skilltransfer:learned end -->"
HEADING = "## Learned rules"
OPS = ("add", "replace", "delete")
MAX_EDIT_CHARS = 2000


@dataclass(frozen=True)
class Edit:
    """One proposed edit."""

    op: str
    content: str = ""
    anchor: str = ""
    rationale: str = ""

    def summary(self) -> str:
        """One line for reports."""
        text = self.content if self.op != "delete" else self.anchor
        first = text.strip().splitlines()[0] if text.strip() else ""
        return f"{self.op}: {first[:100]}" + (" ..." if len(first) > 100 or "\n" in text.strip() else "")


@dataclass(frozen=True)
class EditOutcome:
    """Result of applying a batch: the new skill text, applied edits and unmatched ones with reasons."""

    skill: str
    applied: tuple[Edit, ...]
    unmatched: tuple[tuple[Edit, str], ...]


def _normalize(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().casefold()


def split_skill(skill: str) -> tuple[str, list[str]]:
    """Split a skill into its hand-written body and its learned rules (multi-line rules kept whole)."""
    pattern = re.compile(re.escape(START) + r"\n?(.*?)" + re.escape(END) + r"\n?", re.S)
    rules: list[str] = []
    for block in pattern.findall(skill):
        rules.extend(_parse_rules(block))
    body = pattern.sub("", skill).rstrip("\n")
    return body, rules


def _parse_rules(block: str) -> list[str]:
    rules: list[list[str]] = []
    for line in block.splitlines():
        if line.strip() == HEADING and not rules:
            continue
        if line.startswith("- "):
            rules.append([line[2:]])
        elif rules and (line.startswith("  ") or not line.strip()):
            rules[-1].append(line[2:] if line.startswith("  ") else "")
        elif line.strip():
            rules.append([line.strip()])
    return ["\n".join(r).rstrip() for r in rules]


def render_skill(body: str, rules: list[str]) -> str:
    """Join a body and its learned rules; no block at all when there are no rules."""
    if not rules:
        return body.rstrip("\n") + "\n"
    bullets = []
    for rule in rules:
        first, *rest = rule.split("\n")
        bullets.append("- " + first)
        bullets.extend(("  " + line) if line else "" for line in rest)
    return f"{body.rstrip()}\n\n{START}\n{HEADING}\n" + "\n".join(bullets) + f"\n{END}\n"


def _single_match(rules: list[str], anchor: str) -> tuple[int | None, str]:
    want = _normalize(anchor)
    if not want:
        return None, "empty anchor"
    hits = [i for i, rule in enumerate(rules) if want in _normalize(rule)]
    if not hits:
        return None, "anchor matches no learned rule"
    if len(hits) > 1:
        return None, f"anchor matches {len(hits)} learned rules; it must match exactly one"
    return hits[0], ""


def apply_edits(skill: str, edits: list[Edit], budget: int) -> EditOutcome:
    """Apply at most `budget` edits in order; later edits see earlier ones."""
    body, rules = split_skill(skill)
    applied: list[Edit] = []
    unmatched: list[tuple[Edit, str]] = []
    for edit in edits:
        reason = ""
        content = edit.content.strip("\n").rstrip()
        if len(applied) >= budget:
            reason = f"over the edit budget of {budget}"
        elif edit.op not in OPS:
            reason = f"unknown op {edit.op!r}; ops are {', '.join(OPS)}"
        elif len(content) > MAX_EDIT_CHARS:
            reason = f"content longer than {MAX_EDIT_CHARS} characters"
        elif edit.op == "add":
            if not content.strip():
                reason = "blank content"
            elif any(_normalize(content) == _normalize(r) for r in rules):
                reason = "duplicate of an existing learned rule"
            else:
                rules.append(content)
        else:
            index, reason = _single_match(rules, edit.anchor or (edit.content if edit.op == "delete" else ""))
            if index is not None and edit.op == "delete":
                rules.pop(index)
            elif index is not None:
                if not content.strip():
                    reason = "blank replacement; use delete"
                elif _normalize(content) == _normalize(rules[index]):
                    reason = "replacement is identical to the rule"
                else:
                    rules[index] = content
        if reason:
            unmatched.append((edit, reason))
        else:
            applied.append(edit)
    return EditOutcome(skill=render_skill(body, rules) if applied else skill, applied=tuple(applied), unmatched=tuple(unmatched))
