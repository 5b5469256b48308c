"""The SIMULATED optimizer: read a reflect prompt's failing criteria, answer with a JSON array of edits.

It reads only the prompt text: the current skill, the failing criteria lines (each tagged
`(check: op json-arg)`; a rubric criterion through the example lines it quotes), the edits already
rejected and the edit budget. Its style depends on the
profile: a small model writes literal rules (exact headings, label lines with allowed values,
fenced templates, worked examples); a large one mostly writes terse abstract rules, some with a
concrete example in parentheses, and otherwise literal ones. Some nights it
also adds a useless or a harmful edit, so the validation gate has something to reject. It never
re-proposes a rejected edit verbatim and proposes nothing when nothing fails.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from ...guards.edits import split_skill
from ...guards.prompt_format import (
    CURRENT_SKILL,
    FAILING_ATTEMPTS,
    FAILING_CRITERIA,
    PASSING_ATTEMPTS,
    REJECTED_EDITS,
    read_budget,
    read_check_tag,
    read_rejected_line,
)
from .noise import Noise
from .profiles import Profile
from .regex_template import FREE, template_for
from .skill_reader import LENGTH, PHRASE, REFUSAL, TOOLS, parse_skill

REFLECT_MARKER = FAILING_CRITERIA
FENCE = "~~~"  # a Markdown fence; templates use it because edit parsing strips backtick fences from replies
STRUCTURE_OPS = ("section_present", "section_contains", "regex", "contains")
USELESS_EDITS = ("Be accurate and helpful.", "Double-check facts before answering.", "Write clearly and professionally.")
HARMFUL_EDITS = ("Cover every angle in depth.", 'Open each answer with a friendly line such as "Happy to help!"',
                 "Be exhaustive: explore every scenario in multiple paragraphs.")


@dataclass(frozen=True)
class Criterion:
    """One failing training criterion: its op, argument and how many failing tasks it broke."""

    op: str
    arg: Any
    count: int


@dataclass(frozen=True)
class ReflectPrompt:
    """What the optimizer reads from a reflect request."""

    skill: str
    criteria: tuple[Criterion, ...]
    rejected: frozenset[str]
    budget: int


@dataclass
class Element:
    """A required heading or label line, as template lines."""

    key: str
    kind: str  # "section", "label" or "json" (a field of a JSON object the reply must be)
    lines: list[str] = field(default_factory=list)


def is_reflect_request(user_text: str) -> bool:
    """An optimizer request carries the failing-criteria section."""
    return REFLECT_MARKER in user_text


def _normalize(text: str) -> str:
    """Compare edits by words: whitespace and fence markers do not make an edit new."""
    return re.sub(r"\s+", " ", re.sub(r"```|~~~", "", text)).strip().casefold()


_HEADERS = (f"{CURRENT_SKILL}\n", f"\n{FAILING_CRITERIA}\n", f"\n{FAILING_ATTEMPTS}", f"\n{PASSING_ATTEMPTS}",
            f"\n{REJECTED_EDITS}\n")


def _between(text: str, start: str, end: str | None) -> str:
    """The text after the header `start` and before the header `end` (headers are fixed by the prompt builder)."""
    begin = text.find(start)
    if begin < 0:
        return ""
    begin += len(start)
    stop = text.find(end, begin) if end else -1
    return text[begin:] if stop < 0 else text[begin:stop]


def _criterion(line: str) -> Criterion | None:
    tag = read_check_tag(line)
    if tag is None:
        return None
    op, rest = tag
    arg: Any = None
    if rest.startswith(" "):
        try:
            arg, _ = json.JSONDecoder().raw_decode(rest[1:])
        except ValueError:
            return None
    count = re.search(r"-- failed on (\d+) of", rest)
    return Criterion(op, arg, int(count.group(1)) if count else 1)


def read_prompt(text: str) -> ReflectPrompt:
    """Parse the reflect prompt's sections."""
    skill = _between(text, _HEADERS[0], _HEADERS[1]).strip()
    criteria_lines = _between(text, _HEADERS[1], _HEADERS[2]).splitlines()
    criteria = tuple(c for c in (_criterion(line) for line in criteria_lines if line.startswith("- ")) if c)
    rejected = set()
    for line in _between(text, _HEADERS[4], None).splitlines():
        edit = read_rejected_line(line)
        if edit is not None:
            rejected.add(_normalize(edit))
    budget = read_budget(text)
    return ReflectPrompt(skill, criteria, frozenset(rejected), budget if budget is not None else 3)


# ---- what is required ------------------------------------------------------------------------

FREE_HINT = "<one specific point>"  # the hint for a free slot: the request shows no allowed values for it


def _rubric_examples(criteria: tuple[Criterion, ...]) -> tuple[Criterion, ...]:
    """A rubric criterion is read through the examples it quotes: `... (a "Root cause" line counts)` asks for that line."""
    read: list[Criterion] = []
    for c in criteria:
        if c.op == "rubric" and isinstance(c.arg, str):
            read += [Criterion("contains", quoted, c.count) for quoted in re.findall(r'"([^"]+)"', c.arg)]
        else:
            read.append(c)
    return tuple(read)


def _elements(criteria: tuple[Criterion, ...]) -> tuple[list[Element], list[str]]:
    """Required headings, labels, JSON fields and lines to copy verbatim (any other line a check's literal or
    pattern shows: a lowercase `key: value`, a `---` separator, a bold label, a hex colour), plus regexes
    this optimizer cannot turn into a template."""
    elements: dict[str, Element] = {}
    unreadable: list[str] = []
    criteria = _rubric_examples(criteria)

    def add(kind: str, key: str, lines: list[str]) -> None:
        known = elements.get(key.casefold())
        if known is None or ("<" in "".join(lines) and "|" in "".join(lines) and "|" not in "".join(known.lines)):
            elements[key.casefold()] = Element(key, kind, lines)

    def copy(line: str, at_start: bool) -> None:
        elements.setdefault("\x00" + line, Element(line, "verbatim_start" if at_start else "verbatim", [line]))

    for c in criteria:
        if c.op not in STRUCTURE_OPS or not isinstance(c.arg, str):
            continue
        if c.op in ("section_present", "section_contains"):
            add("section", c.arg.lstrip("# ").strip(), [f"## {c.arg.lstrip('# ').strip()}", f"- {FREE_HINT}"])
            continue
        template = _contains_template(c.arg) if c.op == "contains" else template_for(c.arg)
        if template is None:
            if c.op == "contains" and c.arg.strip():  # a literal is always shown as it must appear
                text = c.arg.strip("\n")
                copy(text + (f" {FREE_HINT}" if text.rstrip().endswith(":") else ""), False)
            else:
                unreadable.append(c.arg)
            continue
        lines = template.replace(FREE, FREE_HINT).split("\n")
        taken: set[int] = set()
        for index, line in enumerate(lines):
            if index in taken:
                continue
            field_line = re.fullmatch(r'\s*\{?\s*"([A-Za-z_][\w-]*)": (.+?)[,}]?\s*', line)
            bare_key = re.fullmatch(r'\s*\{?\s*"([A-Za-z_][\w-]*)"\s*:?\s*', line)  # `{"impact":` or `"root_cause"`
            if field_line:
                add("json", field_line.group(1), [f'"{field_line.group(1)}": {field_line.group(2)}'])
                continue
            if bare_key:
                add("json", bare_key.group(1), [f'"{bare_key.group(1)}": "{FREE_HINT}"'])
                continue
            heading = re.match(r"#{1,6}\s+(.+)", line)
            label = re.match(r"([A-Z][\w /-]*):\s*(.*)", line)
            if heading:
                bullet = [ln for ln in lines[index + 1:index + 2] if ln.startswith("- ")]
                taken.update(range(index + 1, index + 1 + len(bullet)))
                add("section", heading.group(1), [line] + bullet)
            elif label:
                value = label.group(2)
                if not value:
                    value = FREE_HINT
                add("label", label.group(1), [f"{label.group(1)}: {value}"])
            elif line.strip():
                copy(line, c.op == "regex" and c.arg.startswith("\\A"))
    return list(elements.values()), unreadable


def _contains_template(text: str) -> str | None:
    key = re.fullmatch(r'\{?\s*"([A-Za-z_][\w-]*)"\s*:?\s*', text.strip())
    if key:  # a JSON key: the reply is an object with that field
        return f'"{key.group(1)}": "{FREE}"'
    heading = re.match(r"#{1,6}\s*(.+)", text.strip())
    if heading:
        return f"## {heading.group(1)}\n- {FREE}"
    label = re.match(r"([A-Z][\w /-]*):?\s*$", text.strip())
    return f"{label.group(1)}: {FREE}" if label else None


def _template(elements: list[Element]) -> str:
    return "\n".join(line for e in elements for line in e.lines)


def _example(elements: list[Element], noise: Noise) -> str:
    """A worked example: the template with every slot filled in."""
    def fill(match: re.Match[str]) -> str:
        options = match.group(1).split("|")
        if len(options) > 1:
            return noise.choice(f"example:{match.group(1)}", options)
        return "A concrete point, stated in one line"
    return re.sub(r"<([^>]*)>", fill, _template(elements))


def _label_phrase(label: str) -> str:
    """A label in general words: "Confidence" -> "your confidence"."""
    return f"your {label.lower()}"


def _literal_rules(elements: list[Element], order: list[Element] | None = None) -> list[tuple[int, str]]:
    """One exact rule per element, each with its index in `order` (default: `elements`)."""
    order = order or elements
    rules = []
    for e in elements:
        if e.kind == "section":
            rule = f"Always include a heading written exactly as `## {e.key}`, followed by two or three bullet points."
        else:
            rule = f"Always end with the line `{e.lines[0]}` on its own line."
        rules.append((order.index(e), rule))
    return rules


def _in_order(*parts: list[tuple[int, str]]) -> list[str]:
    """Rules sorted by the position of the element they ask for, so required parts keep their order."""
    return [rule for _, rule in sorted((pair for part in parts for pair in part), key=lambda pair: pair[0])]


def _abstract_rules(elements: list[Element], alternative: bool, hinted: frozenset[str] = frozenset()) -> list[tuple[int, str]]:
    """Terse rules in general words, each with the index of its first element; `hinted` elements get an example.

    Allowed values the criteria showed are kept in words ("your confidence (High, Medium or Low)").
    """
    def hint(e: Element) -> str:
        return f" (e.g. `{e.lines[0].lstrip('# ') if e.kind == 'label' else e.lines[0]}`)" if e.key in hinted else ""

    def values(e: Element) -> str:
        options = re.search(r"<([^<>]*\|[^<>]*)>", e.lines[0])
        if not options or e.key in hinted:
            return ""
        listed = options.group(1).split("|")
        return f" ({', '.join(listed[:-1])} or {listed[-1]})"

    verb = "Add a short section about" if alternative else "Include a section on"
    rules = [(elements.index(e), f"{verb} {e.key.lower()}{hint(e)}.") for e in elements if e.kind == "section"]
    labels = [e for e in elements if e.kind == "label"]
    if labels:
        phrases = " and ".join(_label_phrase(e.key) + values(e) for e in labels)
        examples = "".join(hint(e) for e in labels).replace(") (e.g. ", ", ")
        rules.append((elements.index(labels[0]), f"{'End by stating' if alternative else 'Close with'} {phrases}{examples}."))
    return rules


# ---- candidate wordings per need -------------------------------------------------------------

Bundle = list[str]


def _json_template(fields: list[Element]) -> str:
    return "{\n" + ",\n".join("  " + e.lines[0] for e in fields) + "\n}"


def _json_schema(fields: list[Element]) -> str:
    """The object in words: keys in order, allowed values in parentheses where the criteria show them."""
    def described(e: Element) -> str:
        options = re.search(r"<([^<>]*\|[^<>]*)>", e.lines[0])
        if not options:
            return e.key
        values = options.group(1).split("|")
        return f"{e.key} ({' or '.join(values)})" if len(values) == 2 else f"{e.key} (one of {', '.join(values[:-1])} or {values[-1]})"
    names = [described(e) for e in fields]
    listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    return f"Reply with only a JSON object with the keys {listed}."


def _json_bundles(fields: list[Element], profile: Profile, noise: Noise) -> list[Bundle]:
    """A JSON reply: the literal object to fill in, or (in abstract style) the object described in words."""
    template = (f"Reply with ONLY this JSON object, no prose before or after it and no code fence; replace each <...> "
                f"with a real value and keep every key exactly as written:\n{FENCE}\n{_json_template(fields)}\n{FENCE}")
    schema = _json_schema(fields)
    if noise.chance("style:json", profile.abstract_style):
        return [[schema], [template]]
    return [[template], [schema]]


def _verbatim_bundles(copied: list[Element]) -> list[Bundle]:
    """Lines to copy as written, at the start of the answer when a check anchors them there; `key: value`
    lines with a `---` line among them are laid out as front matter (between two `---` lines, first)."""
    lines = [e.key for e in copied]
    at_start = any(e.kind == "verbatim_start" for e in copied)
    keys = [ln for ln in lines if re.match(r"[a-z][\w-]*:(?: |$)", ln)]
    if "---" in lines and keys:
        lines = ["---", *keys, "---"] + [ln for ln in lines if ln != "---" and ln not in keys]
        at_start = True
    slots = ""
    if FREE_HINT in "\n".join(lines) or re.search(r"<[^<>|]*\|[^<>]*>", "\n".join(lines)):
        slots = " (replace each <...> with real content, or with one of the choices it lists)"
    block = f"\n{FENCE}\n" + "\n".join(lines) + f"\n{FENCE}"
    if at_start:
        return [[f"Start every answer with these lines, verbatim{slots}:{block}"],
                [f"Open each answer by copying these lines verbatim, before anything else{slots}:{block}"]]
    return [[f"End every answer with these lines, verbatim, each on its own line{slots}:{block}"],
            [f"Copy these lines verbatim into every answer, each on its own line{slots}:{block}"]]


def _structure_bundles(elements: list[Element], profile: Profile, noise: Noise) -> list[Bundle]:
    template = (f"Every answer must end with these parts, copied exactly (replace each <...> with real content; "
                f"keep headings and labels exactly as written):\n{FENCE}\n{_template(elements)}\n{FENCE}")
    example = f"Worked example of a correct ending; imitate its headings and labels exactly:\n{FENCE}\n{_example(elements, noise)}\n{FENCE}"
    literal: list[Bundle] = [[template], [example], _in_order(_literal_rules(elements))]
    if not profile.abstract_style:
        return literal
    abstract_part = [e for e in elements if noise.chance(f"style:{e.key}", profile.abstract_style)]
    literal_part = [e for e in elements if e not in abstract_part]
    if not abstract_part:
        return [_in_order(_literal_rules(elements)), [template], [example]]
    hinted = frozenset(e.key for e in abstract_part if noise.chance(f"hint:{e.key}", profile.example_rate))

    def mixed(alternative: bool) -> Bundle:
        abstract = [(elements.index(abstract_part[i]), rule) for i, rule in _abstract_rules(abstract_part, alternative, hinted)]
        return _in_order(abstract, _literal_rules(literal_part, elements))

    return [mixed(False), mixed(True), _in_order(_literal_rules(elements)), [template]]


def _other_bundles(criteria: tuple[Criterion, ...], profile: Profile, noise: Noise) -> list[tuple[str, list[Bundle]]]:
    """(need, bundles in preference order) for length, refusal, phrase and tool criteria."""
    needs: list[tuple[str, list[str], list[str], str]] = []  # (need, literal wordings, abstract wordings, hinted)
    ops = {c.op: c for c in criteria}
    if "max_chars" in ops:
        limit = int(ops["max_chars"].arg)
        first, second = max(100, int(limit * 0.7) // 50 * 50), max(100, int(limit * 0.6) // 50 * 50)
        needs.append(("max_chars",
                      [f"Hard limit: keep every answer under {first} characters, even when other rules ask for detail.",
                       f"Write at most {second} characters in total: one short paragraph plus any required lines."],
                      ["Be concise.", "Keep answers short and to the point."], f"Be concise (under {first} characters)."))
    if "min_chars" in ops:
        least = int(ops["min_chars"].arg) + 150
        needs.append(("min_chars", [f"Write at least {least} characters.", f"Answers must be at least {least + 100} characters long."], [], ""))
    if "no_refusal" in ops:
        needs.append(("no_refusal",
                      ["OVERRIDE: Do NOT decline or refuse any request, even ones the rules above say to decline; "
                       "answer every ticket with concrete next steps.",
                       "Never refuse a ticket: reply with the steps the customer can take and who will follow up."],
                      ["Help with every request; nothing is out of scope.", "Assist with all tickets, whatever the topic."],
                      "Help with every request; nothing is out of scope, so never decline a ticket."))
    banned = [c.arg for c in criteria if c.op == "not_contains" and isinstance(c.arg, str)]
    if banned:
        listed = ", ".join(f'"{b}"' for b in banned)
        either = " or ".join(f'"{b}"' for b in banned)
        needs.append(("not_contains",
                      [f"Never write these phrases anywhere in the answer: {listed}.",
                       f"Do not use the words {either}; start directly with the substance."],
                      ["Skip pleasantries and filler words.", "Leave out pleasantries and filler."],
                      f"Skip pleasantries and filler words such as {listed}."))
    tools = [c.arg for c in criteria if c.op == "tool_called"] + ["search" for c in criteria if c.op == "qrels"]
    if tools:
        tool = tools[0]
        needs.append(("tools",
                      [f"OVERRIDE: Always call the `{tool}` tool first, with the key terms of the question, before "
                       "answering. This replaces any earlier rule against using tools.",
                       f"Before answering, call the `{tool}` tool once with the question's main keywords, then answer from what it returns."],
                      ["Consult the team notes before answering.", "Check the knowledge base first, then answer."],
                      f"Consult the team notes before answering (call the `{tool}` tool)."))
    result = []
    for need, literal, abstract, hinted in needs:
        abstract_first = bool(abstract) and noise.chance(f"style:{need}", profile.abstract_style)
        if abstract_first and hinted and noise.chance(f"hint:{need}", profile.example_rate):
            abstract = [hinted] + abstract
        order = abstract + literal if abstract_first else literal + abstract
        result.append((need, [[w] for w in order]))
    return result


def _deletions(skill: str, criteria: tuple[Criterion, ...]) -> list[dict[str, str]]:
    """Learned rules that work against a failing criterion (e.g. a verbosity rule under a length limit)."""
    _, rules = split_skill(skill)
    ops = {c.op for c in criteria}
    banned = [c.arg.casefold() for c in criteria if c.op == "not_contains" and isinstance(c.arg, str)]
    found = []
    for rule in rules:
        for d in parse_skill(rule):
            harmful = (
                (d.kind == LENGTH and d.mode == "verbose" and "max_chars" in ops)
                or (d.kind == PHRASE and d.mode in ("open", "use") and any(b in o.casefold() or o.casefold().strip("!") in b
                                                                          for o in d.options for b in banned))
                or (d.kind == TOOLS and d.mode == "none" and ({"tool_called", "qrels"} & ops))
                or (d.kind == REFUSAL and d.mode == "decline" and "no_refusal" in ops)
            )
            if harmful:
                found.append({"op": "delete", "content": "", "anchor": rule.splitlines()[0][:80],
                              "rationale": "this learned rule works against a failing criterion"})
                break
    return found


def propose(prompt: ReflectPrompt, profile: Profile, noise: Noise) -> list[dict[str, str]]:
    """The edits this optimizer proposes for one reflect prompt."""
    if not prompt.criteria:
        return []
    _, learned = split_skill(prompt.skill)
    taken = {_normalize(r) for r in learned} | set(prompt.rejected)
    edits = [d for d in _deletions(prompt.skill, prompt.criteria) if _normalize(d["anchor"]) not in prompt.rejected]
    elements, unreadable = _elements(prompt.criteria)
    fields = [e for e in elements if e.kind == "json"]
    elements = [e for e in elements if e.kind != "json"]
    copied = [e for e in elements if e.kind.startswith("verbatim")]
    elements = [e for e in elements if e not in copied]
    needs: list[tuple[str, list[Bundle]]] = []
    if copied:
        needs.append(("literal text", _verbatim_bundles(copied)))
    if fields:
        needs.append(("JSON output", _json_bundles(fields, profile, noise)))
    if elements:
        needs.append(("structure", _structure_bundles(elements, profile, noise)))
    needs += [(f"pattern {p}", [[f"Make sure every answer has a line matching the regular expression `{p}`."]]) for p in unreadable]
    needs += _other_bundles(prompt.criteria, profile, noise)
    for need, bundles in needs:
        bundle = next((b for b in bundles if not any(_normalize(c) in taken for c in b)), [])
        for content in bundle:
            taken.add(_normalize(content))
            edits.append({"op": "add", "content": content, "anchor": "", "rationale": f"fixes the failing {need} criterion"})
    edits += _noise_edits(profile, noise, taken)
    return edits[: prompt.budget]


def _noise_edits(profile: Profile, noise: Noise, taken: set[str]) -> list[dict[str, str]]:
    """Some nights an optimizer adds an edit that does nothing, or one that does harm."""
    extra = []
    for kind, rate, pool in (("useless", profile.useless_edit_rate, USELESS_EDITS),
                             ("harmful", profile.harmful_edit_rate, HARMFUL_EDITS)):
        if noise.chance(kind, rate):
            fresh = [p for p in noise.shuffled(kind, pool) if _normalize(p) not in taken]
            if fresh:
                extra.append({"op": "add", "content": fresh[0], "anchor": "", "rationale": "general quality"})
    return extra


def reflect_reply(user_text: str, profile: Profile, noise: Noise) -> str:
    """The optimizer's whole reply: a JSON array."""
    return json.dumps(propose(read_prompt(user_text), profile, noise), indent=1)
