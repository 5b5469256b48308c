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

The block is bounded: an `add` or `replace` that would make it (markers, heading and rules, as
rendered) longer than `LEARNED_MAX_BYTES` UTF-8 bytes is refused and reported, so a skill never
grows by more than that however many nights run (`max_skill_bytes`; a hand-written block already
longer only shrinks). Every agent prompt carries the skill, so this bounds what learning can add
to each later call, and the plan's bound uses it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

START = "<!-- skilltransfer:learned start -->"
END = "<!-- skilltransfer:learned end -->"
HEADING = "## Learned rules"
OPS = ("add", "replace", "delete")
MAX_EDIT_CHARS = 2000
LEARNED_MAX_BYTES = 2048  # the learned block as rendered: ten 200-character rules, more than a default run keeps


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


def learned_block(rules: list[str]) -> str:
    """The learned block of `rules`: markers, heading and one bullet per rule (continuation lines indented)."""
    bullets = []
    for rule in rules:
        first, *rest = rule.split("\n")
        bullets.append("- " + first)
        bullets.extend(("  " + line) if line else "" for line in rest)
    return f"{START}\n{HEADING}\n" + "\n".join(bullets) + f"\n{END}\n"


def render_skill(body: str, rules: list[str]) -> str:
    """Join a body and its learned rules; no block at all when there are no rules."""
    if not rules:
        return body.rstrip("\n") + "\n"
    return f"{body.rstrip()}\n\n{learned_block(rules)}"


def _block_bytes(rules: list[str]) -> int:
    return len(learned_block(rules).encode("utf-8")) if rules else 0


def max_skill_bytes(skill: str) -> int:
    """The most UTF-8 bytes `skill` can reach under any edits: its body, a blank line and a learned block at
    the cap (or at its own hand-written block's size, when that is larger), or the skill as it is."""
    body, rules = split_skill(skill)
    block = max(LEARNED_MAX_BYTES, _block_bytes(rules))
    return max(len(skill.encode("utf-8")), len(body.rstrip().encode("utf-8")) + 2 + block)


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
    """Apply at most `budget` edits in order; later edits see earlier ones; the learned block stays within
    `LEARNED_MAX_BYTES` (or within its own size, when the skill came with a larger one)."""
    body, rules = split_skill(skill)
    cap = max(LEARNED_MAX_BYTES, _block_bytes(rules))
    applied: list[Edit] = []
    unmatched: list[tuple[Edit, str]] = []
    for edit in edits:
        reason = ""
        before = list(rules)
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
        if not reason and edit.op != "delete" and _block_bytes(rules) > cap:
            reason = f"the learned rules would take {_block_bytes(rules)} bytes, over their cap of {cap}"
            rules[:] = before
        if reason:
            unmatched.append((edit, reason))
        else:
            applied.append(edit)
    return EditOutcome(skill=render_skill(body, rules) if applied else skill, applied=tuple(applied), unmatched=tuple(unmatched))
