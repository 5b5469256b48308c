"""How a SIMULATED model answers a task: which directives it follows, then the text it writes.

A `Profile` (in `profiles`) says how likely a model is to follow each strength of directive (a small model follows
literal rules and ignores most abstract ones; a large model follows both). `resolve` draws those
decisions with hash-seeded `Noise`, lets later rules override earlier ones, and yields a `Plan`;
`render_answer` writes a plausible answer to the task that carries out the plan.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace

from .noise import Noise
from .profiles import OVERREAD_SENTENCES, Profile
from .skill_reader import (
    ABSTRACT,
    BAN,
    JSON,
    LABEL,
    LENGTH,
    LITERAL,
    PHRASE,
    REFUSAL,
    SECTION,
    TOOLS,
    VERBATIM,
    Directive,
    vocabulary,
)


@dataclass(frozen=True)
class Plan:
    """What the model will do for one task."""

    search: bool = False
    decline: str = ""
    length: Directive | None = None
    min_chars: int = 0
    structure: tuple[Directive, ...] = ()
    opener: tuple[str, ...] = ()
    phrases: tuple[str, ...] = ()
    json: Directive | None = None
    no_headings_after: int = -1  # the latest followed heading ban: earlier sections lose their `#`s, and no title
    no_bullets_after: int = -1
    unmentioned: tuple[str, ...] = ()  # words a followed prohibition keeps out of the prose
    verbatim: tuple[Directive, ...] = ()  # blocks copied as written, each at the start or the end


def resolve(directives: list[Directive], profile: Profile, noise: Noise, task: str) -> Plan:
    """Draw which directives the model follows; the latest followed rule of a kind wins."""
    def draw(d: Directive) -> str:
        return f"follow:block:{d.unit}" if d.unit >= 0 else f"follow:{d.position}:{d.kind}:{d.mode}:{d.text}"

    followed = []
    for d in directives:
        if noise.chance(draw(d), profile.follow[d.strength]):
            followed.append(d)
        elif _overread(d, profile, noise):
            followed.append(replace(d, strength=LITERAL, mode="sentences", number=OVERREAD_SENTENCES))

    def last(kind: str, modes: tuple[str, ...] = ()) -> Directive | None:
        hits = [d for d in followed if d.kind == kind and (not modes or d.mode in modes)]
        return hits[-1] if hits else None

    tools = last(TOOLS)
    refusal = last(REFUSAL)
    decline = _matching_topic(refusal.options, task) if refusal and refusal.mode == "decline" else ""
    mins = [d.number for d in followed if d.kind == LENGTH and d.mode == "min"]
    return Plan(
        search=bool(tools and tools.mode == "search"),
        decline=decline,
        length=last(LENGTH, ("verbose", "concise", "max", "sentences")),
        min_chars=max(mins, default=0),
        structure=_structure(followed),
        opener=_surviving_phrases(followed, "open"),
        phrases=_surviving_phrases(followed, "use"),
        json=last(JSON),
        no_headings_after=max((d.position for d in followed if d.kind == BAN and d.mode == "headings"), default=-1),
        no_bullets_after=max((d.position for d in followed if d.kind == BAN and d.mode == "bullets"), default=-1),
        unmentioned=tuple(w for d in followed if d.kind == BAN and d.mode == "mention" for w in d.options),
        verbatim=tuple({d.text: d for d in followed if d.kind == VERBATIM}.values()),
    )


def _overread(d: Directive, profile: Profile, noise: Noise) -> bool:
    """Whether an abstract length word the model did not follow is over-read as a hard literal instead."""
    return (d.kind == LENGTH and d.strength == ABSTRACT and d.mode == "concise"
            and noise.chance(f"overread:{d.position}", profile.overread_abstract))


def _structure(followed: list[Directive]) -> tuple[Directive, ...]:
    """Sections and labels, once each, in order of first mention; a later mention refines the first."""
    first: dict[tuple[str, str], Directive] = {}
    latest: dict[tuple[str, str], Directive] = {}
    for d in followed:
        if d.kind in (SECTION, LABEL):
            key = (d.kind, d.text.casefold())
            first.setdefault(key, d)
            if d.strength == LITERAL or key not in latest or latest[key].strength != LITERAL:
                latest[key] = d
    ordered = sorted(first, key=lambda key: first[key].position)
    return tuple(latest[key] for key in ordered)


def _surviving_phrases(followed: list[Directive], mode: str) -> tuple[str, ...]:
    """Phrases of the latest `mode` directive that no later followed prohibition removes."""
    hits = [d for d in followed if d.kind == PHRASE and d.mode == mode]
    if not hits:
        return ()
    chosen = hits[-1]
    bans = [d for d in followed if d.kind == PHRASE and d.mode in ("forbid", "filler") and d.position > chosen.position]

    def banned(phrase: str) -> bool:
        return any(d.mode == "filler" or any(_overlaps(phrase, b) for b in d.options) for d in bans)

    return tuple(p for p in chosen.options if not banned(p))


def _overlaps(phrase: str, ban: str) -> bool:
    a, b = phrase.casefold().strip(" !.,"), ban.casefold().strip(" !.,")
    return bool(a and b) and (a in b or b in a)


def _stem(word: str) -> str:
    word = word.lower()
    for suffix in ("ing", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def _matching_topic(keywords: tuple[str, ...], task: str) -> str:
    """The first declined keyword the task mentions (by word stem), or ''."""
    words = re.findall(r"[a-z]+", task.lower())
    for keyword in keywords:
        parts = keyword.split()
        if parts and any(w.startswith(_stem(parts[0])) for w in words):
            return keyword
    return ""


# ---- the text ---------------------------------------------------------------------------------

_STOPWORDS = frozenset(
    "a an and are as at be by can do does for from has have how i if in is it its of on or our should so that the "
    "their them then there this to was we were what when where whether which who why will with would you your "
    "after before into about over under they it's than just also been being my me not no nobody all every "
    "did decide meant caused sent showed ran returned need needs needed got get gets could cannot can't "
    "while during without one two some any please ticket".split())
_SENTENCES = (
    "The first thing to pin down is who owns the {k1} and who needs to hear about it.",
    "Most of the risk sits with the {k1}, so that is where the checks should start.",
    "Recent changes around the {k2} are worth a look, since surprises usually come from the newest code.",
    "A small, reversible step is safer than a big one, and it keeps the blast radius contained.",
    "It helps to write down the assumptions, because they decide whether the plan still holds next week.",
    "Measure the {k1} before and after, so the effect is visible instead of argued about.",
    "Timing matters: avoid touching the {k2} right before a freeze, a holiday or a big customer launch.",
    "Keep the people who depend on the {k1} in the loop early rather than surprising them later.",
    "If something goes wrong there should be a clear way back, ideally a single command or a flag.",
    "The dashboards should show a problem with the {k2} within minutes if anything misbehaves.",
    "Automated tests cover the common paths, but the edge cases around the {k1} deserve a manual pass.",
    "Document what was decided and why, so the next person does not have to redo the analysis.",
    "Cost is part of the picture too: extra load from the {k2} shows up in the cloud bill within a month.",
    "Support will get the first questions, so give them a short note they can reuse.",
    "Where the data is thin, say so plainly and plan a follow-up check.",
    "A quick review with someone outside the team catches blind spots around the {k1}.",
    "The smallest option that solves the problem with the {k2} is usually the right starting point.",
    "Security and privacy reviews should not be skipped, even when the {k1} looks routine.",
    "Any configuration change related to the {k2} deserves the same review as a code change.",
    "Rolling out to a small share of users first gives real signal about the {k1} with little risk.",
    "The on-call engineer should know what changed and where to look if alerts fire.",
    "Older clients and integrations that touch the {k1} are the usual source of late surprises.",
    "Once things are stable, a short retro turns this into a lesson instead of a memory.",
    "None of this needs a long meeting; a short written summary and a named owner are enough.",
    "If the numbers for the {k2} move the wrong way, pause and look before pushing further.",
    "Backups and a tested restore path matter more than any single fix to the {k1}.",
)
_FREE_VALUES = (
    "see the notes above on the {k1}",
    "it depends on the {k1}; details above",
    "as discussed for the {k2}",
)
_BULLETS = (
    "The {k1}: the main {h} point to track this week",
    "Owner to confirm the {h} details for the {k2}",
    "Revisit the {k1} once the {h} picture is clearer",
    "Share the {h} notes with the teams that rely on the {k2}",
)
@dataclass(frozen=True)
class TaskView:
    """What the model takes from the task text: its topic, key words and question form."""

    text: str
    topic: str
    keywords: tuple[str, ...] = field(default=())

    @property
    def is_question(self) -> bool:
        return self.text.rstrip().endswith("?")


def read_task(task: str) -> TaskView:
    """The topic of a task: its first line without a leading instruction ("Summarize the incident where ...")."""
    first = task.strip().splitlines()[0].strip() if task.strip() else ""
    match = re.match(r"^(?:please\s+)?\w+(?:\s+[\w'-]+){0,4}?\s*(?::|\s(?:on|about|for|of|where|whether|if))\s+(.+)$",
                     first, re.I)
    topic = (match.group(1) if match else first).rstrip(" .?!")
    return TaskView(text=task, topic=topic, keywords=_key_phrases(topic))


def _key_phrases(topic: str) -> tuple[str, ...]:
    """Runs of content words ("failing backup job"), longer runs first, each at most three words."""
    runs: list[list[str]] = [[]]
    for word in re.findall(r"[A-Za-z0-9][A-Za-z0-9'.-]*", topic):
        if word.lower() in _STOPWORDS or word.isdigit():
            runs.append([])
        else:
            runs[-1].append(word.rstrip("."))
    phrases = [" ".join(run[-3:]) for run in runs if run and max(len(w) for w in run) > 3]
    ranked = sorted(phrases, key=lambda p: -min(len(p.split()), 2))
    return tuple(dict.fromkeys(ranked))


def _fill(template: str, view: TaskView, extra: dict[str, str] | None = None) -> str:
    keys = list(view.keywords) + ["service", "release"]
    return template.format(k1=keys[0], k2=keys[1] if len(keys) > 1 else keys[0], **(extra or {}))


def refusal_text(view: TaskView, topic: str) -> str:
    """How a simulated model turns a request down."""
    return (f"I can't help with {topic} requests here; they are handled by another team. "
            "Please contact them directly and include the details from your message.")


def render_answer(plan: Plan, view: TaskView, skill: str, noise: Noise, profile: Profile, notes: list[dict]) -> str:
    """Write the answer the plan calls for: opener, title, lead and body paragraphs, then the required parts."""
    if plan.decline:
        return refusal_text(view, plan.decline)
    if plan.json is not None:
        return render_json(plan.json, view, noise)
    target, count = _target_length(plan, profile, noise)
    opener = noise.choice("opener", plan.opener) if plan.opener else ""
    title = f"# {_title(view)}" if count is None and not (plan.length and plan.length.mode == "concise") else ""
    title = "" if plan.no_headings_after >= 0 else title
    blocks = _structure_blocks(plan, view, skill, noise)
    lead = _lead(view, notes)
    extra = [f"{p[:1].upper()}{p[1:]} follow the steps in order and check the output after each one." for p in plan.phrases]
    body = extra + [_fill(s, view) for s in noise.shuffled("sentences", _SENTENCES)]
    if plan.unmentioned:
        title, lead, body, blocks = _leave_out(plan.unmentioned, title, lead, body, blocks)
    fixed = sum(len(part) + 2 for part in (opener, title, lead, *blocks) if part)
    limit = plan.length.number if plan.length and plan.length.mode == "max" else 0
    if limit and fixed + len(body[0] if body else "") > limit and _keeps_limit_strictly(profile, noise):
        title, body = "", []  # the limit outranks every other rule: cut the title and the body, then required parts
        while blocks and sum(len(part) + 2 for part in (opener, lead, *blocks) if part) > limit:
            blocks.pop()
        fixed = sum(len(part) + 2 for part in (opener, lead, *blocks) if part)
    structure = "\n\n".join(blocks)
    chosen = _pick_sentences(body, fixed, target, count, plan.min_chars)
    paragraphs = [" ".join([lead] + chosen[:2])] + [" ".join(chosen[i:i + 3]) for i in range(2, len(chosen), 3)]
    head, tail = (_copied(plan, mode, view, noise) for mode in ("start", "end"))
    return "\n\n".join(part for part in [*head, opener, title, *paragraphs, structure, *tail] if part)


def _copied(plan: Plan, mode: str, view: TaskView, noise: Noise) -> list[str]:
    """The verbatim blocks placed at `mode` ("start" or "end"), each `<...>` slot in the model's own words."""
    def slot(match: re.Match[str]) -> str:
        options = [o.strip() for o in match.group(1).split("|") if o.strip()]
        if len(options) > 1:
            return _prefer_mentioned(options, view, noise, match.group(0))
        return _fill(noise.choice(f"value:{match.group(0)}", _FREE_VALUES), view)
    blocks = [d for d in plan.verbatim if d.mode == mode]
    return [re.sub(r"<([^<>\n]*)>", slot, d.text) if "<...>" in d.source else d.text for d in blocks]


def _mentions(text: str, words: tuple[str, ...]) -> bool:
    """Whether `text` uses one of the words (by stem: "prices" also keeps out "price" and "pricing")."""
    found = re.findall(r"[a-z0-9]+", text.lower())
    stems = lambda word: [_stem(part).removesuffix("e") for part in re.findall(r"[a-z0-9]+", word)]
    return any(all(any(w.startswith(stem) for w in found) for stem in stems(word)) for word in words if stems(word))


def _leave_out(words: tuple[str, ...], title: str, lead: str, body: list[str], blocks: list[str]) -> tuple[str, str, list[str], list[str]]:
    """The title, lead, body sentences and bullet lines without the forbidden words (headings and labels stay)."""
    title = "" if _mentions(title, words) else title
    lead = "Here is what matters most for this one." if _mentions(lead, words) else lead
    kept = [b for b in body if not _mentions(b, words)]
    lines = lambda block: [ln for ln in block.split("\n") if not (ln.startswith("- ") and _mentions(ln, words))]
    return title, lead, kept, ["\n".join(lines(block)) for block in blocks]


def _keeps_limit_strictly(profile: Profile, noise: Noise) -> bool:
    """Whether, this time, a followed numeric upper length limit that the required parts overrun outranks them."""
    return noise.chance("strict-limit", profile.strict_limits)


def _title(view: TaskView) -> str:
    """The topic's first words; a question or a first-person message gets a "Re:" title."""
    words = view.topic.split()
    title = " ".join(words[:8]) + (" ..." if len(words) > 8 else "")
    first_person = bool(words) and words[0].lower() in ("i", "we", "my", "our", "how", "can", "why", "what")
    return f"Re: {title}" if first_person or view.is_question else title[:1].upper() + title[1:]


def _pick_sentences(body: list[str], fixed: int, target: int, count: int | None, min_chars: int) -> list[str]:
    """Body sentences up to the target length (or sentence count), then more if a minimum length requires."""
    chosen: list[str] = []
    for sentence in body:
        if count is not None and len(chosen) >= max(count - 1, 0):
            break
        if count is None and chosen and fixed + sum(len(s) + 1 for s in chosen) + len(sentence) > target:
            break
        chosen.append(sentence)
    while min_chars and fixed + sum(len(s) + 1 for s in chosen) < min_chars and len(chosen) < len(body):
        chosen.append(body[len(chosen)])
    return chosen


def _target_length(plan: Plan, profile: Profile, noise: Noise) -> tuple[int, int | None]:
    """(target characters, sentence count or None) for the length rule in force."""
    rule = plan.length
    if rule is None:
        return noise.between("length", *profile.default_chars), None
    if rule.mode == "verbose":
        return noise.between("length", *profile.verbose_chars), None
    if rule.mode == "concise":
        return noise.between("length", *profile.concise_chars), None
    if rule.mode == "sentences":
        return 0, rule.number
    limit = rule.number
    if noise.chance("overshoot", profile.overshoot):
        return noise.between("length", limit + 30, int(limit * 1.2) + 30), None
    return noise.between("length", int(limit * 0.55), int(limit * 0.9)), None


def _lead(view: TaskView, notes: list[dict]) -> str:
    if notes:
        first = notes[0]
        return f"The team notes ({first.get('slug', '')}) cover this: {first.get('title', '')}."
    if view.is_question:
        return _fill("Here is the practical answer to your question about the {k1}.", view)
    return f"This covers {view.topic}."


def _structure_blocks(plan: Plan, view: TaskView, skill: str, noise: Noise) -> list[str]:
    """Sections as headings with bullets or a sentence; labels as `Label: value` lines (adjacent labels stay adjacent).

    A section that a later followed prohibition covers is written without its `#`s, or without bullets."""
    blocks: list[str] = []
    for d in plan.structure:
        if d.kind == SECTION:
            blocks.append(_render_section(d, view, noise, plain=d.position < plan.no_headings_after,
                                          no_bullets=d.position < plan.no_bullets_after))
        else:
            line = f"{d.text}: {fill_value(d, view, skill, noise)}"
            if blocks and blocks[-1].startswith("\x00"):
                blocks[-1] += "\n" + line
            else:
                blocks.append("\x00" + line)
    return [b.lstrip("\x00") for b in blocks]


def _render_section(d: Directive, view: TaskView, noise: Noise, plain: bool = False, no_bullets: bool = False) -> str:
    bullets = d.bullets or noise.chance(f"bullets:{d.text}", 0.85 if d.strength == ABSTRACT else 0.6)
    bullets = bullets and not no_bullets
    heading = f"{d.text}:" if plain else f"## {d.text}"
    extra = {"h": d.text.lower()}
    if bullets:
        lines = [f"- {_fill(b, view, extra)}" for b in noise.shuffled(f"bullets:{d.text}", _BULLETS)[:3]]
        return heading + "\n" + "\n".join(lines)
    return heading + "\n" + _fill("For the {k1}, the {h} picture is still forming; the owner will post an update.", view, extra)


def fill_value(d: Directive, view: TaskView, skill: str, noise: Noise) -> str:
    """A label's value: an allowed option, the model's own words for a free slot, or an imitated example."""
    template = d.value or "<>"

    def pick(match: re.Match[str]) -> str:
        inner = match.group(1).strip()
        options = [o.strip() for o in inner.split("|") if o.strip()]
        if len(options) > 1:
            return _prefer_mentioned(options, view, noise, d.text)
        return _free_value(d.text, view, skill, noise)

    return re.sub(r"<([^>]*)>", pick, template).strip()


def _prefer_mentioned(options: list[str], view: TaskView, noise: Noise, label: str) -> str:
    mentioned = [o for o in options if re.search(rf"\b{re.escape(o.lower())}\b", view.text.lower())]
    return mentioned[0] if mentioned else noise.choice(f"value:{label}", options)


def _free_value(label: str, view: TaskView, skill: str, noise: Noise) -> str:
    """A free slot: values the skill lists for this label, else the model's own words about the task.

    There is no built-in list of values per label name: what the request does not show, the model
    does not know.
    """
    listed = vocabulary(skill, label)
    if listed:
        return _prefer_mentioned(list(listed), view, noise, label)
    return _fill(noise.choice(f"value:{label}", _FREE_VALUES), view)


def render_json(d: Directive, view: TaskView, noise: Noise) -> str:
    """The reply as nothing but the JSON object the directive asks for, each slot filled, keys in its order."""
    record: dict[str, object] = {}
    for key, template in d.fields:
        choice = re.fullmatch(r'"?<([^<>]*)>"?', template)
        if choice is None:
            try:
                record[key] = json.loads(template)
            except ValueError:
                record[key] = template.strip('"')
            continue
        options = [o.strip() for o in choice.group(1).split("|") if o.strip()]
        if options == ["true", "false"] or options == ["false", "true"]:
            record[key] = noise.chance(f"json:{key}", 0.5)
        elif len(options) > 1:
            record[key] = _prefer_mentioned(options, view, noise, key)
        else:
            record[key] = view.keywords[0] if view.keywords else view.topic
    return json.dumps(record, indent=2)


def parse_notes(content: str) -> list[dict]:
    """Rows of a search tool result, or [] when the content is not one."""
    try:
        rows = json.loads(content).get("results", [])
    except (ValueError, AttributeError):
        return []
    return [r for r in rows if isinstance(r, dict)]

