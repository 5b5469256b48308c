"""How the SIMULATED models read a skill: wording patterns in, directives out.

The simulator never sees judges. It reads the skill text the way a model would, through a fixed set
of recognizers over wording patterns. Each recognizer turns a sentence (or a fenced template or
worked example) into a `Directive` with a strength:

- literal:  concrete and checkable as written: a heading in backticks (`## Key Risks`), a label line
            with its allowed values (`Confidence: <High|Medium|Low>`), a numeric limit, a tool named
            in backticks, quoted phrases to avoid, a fenced template or worked example, a fenced
            JSON object to reply with;
- abstract: the same intent in general words ("include a section on key risks", "be concise",
            "close with your confidence level", "consult the team notes first", "reply with only a
            JSON object with the keys a, b (one of x or y) and c (true or false)");
- prohibitions are rules like any other: "never use headings", "no bullet points" and "do not mention
            prices" are literal; "keep the formatting plain" is the heading ban in general words;
- verbatim: a fenced block introduced as lines to copy "verbatim" is copied whole, whatever its lines
            look like (lowercase `key: value` lines, `---` separators, hex colours, bold labels), at the
            start of the answer when the introduction says to start or open with it, else at the end;
- natural:  behaviour models slip into anyway (verbosity, stock openers, declining a topic, not
            using tools when told not to).

Directives keep their position in the text, so a later rule can override an earlier one.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from functools import lru_cache

LITERAL, ABSTRACT, NATURAL = "literal", "abstract", "natural"

SECTION, LABEL, LENGTH, TOOLS, REFUSAL, PHRASE, JSON = "section", "label", "length", "tools", "refusal", "phrase", "json"
BAN = "ban"  # a prohibition: mode "headings", "bullets" or "mention" (the words in `options`)
VERBATIM = "verbatim"  # lines to copy as written (`text`), mode "start" or "end" of the answer


@dataclass(frozen=True)
class Directive:
    """One instruction the simulator recognized in a skill.

    `kind` is the topic (section, label, length, tools, refusal, phrase, json); `mode` refines it
    (e.g. length: verbose/concise/max/min/sentences; tools: search/none; phrase: open/use/forbid/filler).
    A json directive carries its fields as `fields`: (key, value template) pairs, where a value
    template is `"<...>"` (a free string), `"<a|b>"` (one of the strings), `<true|false>` or a literal.
    """

    kind: str
    strength: str
    position: int
    mode: str = ""
    text: str = ""
    options: tuple[str, ...] = ()
    number: int = 0
    bullets: bool = False
    value: str = ""
    source: str = ""
    unit: int = -1  # directives of one template share this id: a model copies a template whole or not at all
    fields: tuple[tuple[str, str], ...] = ()


_NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
_NEGATION = re.compile(r"\b(?:not|never|don't|dont|no|avoid|without)\b", re.I)
_QUOTED = re.compile(r"[\"\u201c]([^\"\u201d]{1,60})[\"\u201d]")
_DETERMINERS = {"a", "an", "the", "your", "one", "our", "their", "its"}
_ADJECTIVES = {"clear", "explicit", "final", "overall", "short", "brief", "single", "one-line", "firm",
               "honest", "plain", "concise", "direct", "own", "stated", "simple"}
_GENERIC_TAILS = {"level", "rating", "score", "estimate", "line", "statement", "value"}
_NOT_LABELS = {"this", "these", "that", "following", "block", "lines", "template", "skeleton", "example", "it"}


def strip_frontmatter(text: str) -> str:
    """Drop a leading `---` YAML block: metadata, not instructions."""
    match = re.match(r"\A---\n.*?\n---[ \t]*\n", text, re.S)
    return text[match.end():] if match else text


def _segments(text: str) -> list[tuple[str, str]]:
    """Split a skill into ("prose", paragraph) and ("block", fenced content) pieces, in order."""
    text = re.sub(r"<!--.*?-->", "", strip_frontmatter(text), flags=re.S)
    pieces: list[tuple[str, str]] = []
    fence = re.compile(r"^[ \t]*(```|~~~)[^\n]*\n(.*?)^[ \t]*\1[ \t]*$", re.S | re.M)
    cursor = 0
    for match in fence.finditer(text):
        pieces += _prose_pieces(text[cursor:match.start()])
        pieces.append(("block", match.group(2)))
        cursor = match.end()
    pieces += _prose_pieces(text[cursor:])
    return pieces


def _prose_pieces(text: str) -> list[tuple[str, str]]:
    """Paragraphs and bullets of prose; Markdown heading lines are structure, not instructions."""
    paragraphs: list[list[str]] = [[]]
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or re.match(r"#{1,6}\s", stripped):
            paragraphs.append([])
        elif re.match(r"[-*]\s|\d+\.\s", stripped):
            paragraphs.append([re.sub(r"^(?:[-*]|\d+\.)\s+", "", stripped)])
        else:
            paragraphs[-1].append(stripped)
    return [("prose", " ".join(p)) for p in paragraphs if p]


def sentences(paragraph: str) -> list[str]:
    """Split prose into sentences (quotes and backticks kept intact)."""
    parts = re.split(r"(?<!e\.g\.)(?<!i\.e\.)(?<=[.!?])[\"\u201d']?\s+(?=[A-Z`\"\u201c*])", paragraph)
    return [p.strip() for p in parts if p.strip()]


def parse_skill(text: str) -> list[Directive]:
    """Every directive the simulator recognizes in a skill, in text order."""
    return list(_parsed(text))


@lru_cache(maxsize=256)
def _parsed(text: str) -> tuple[Directive, ...]:
    """`parse_skill`, read once per skill text (every task of an evaluation sends the same skill; directives are
    frozen)."""
    found: list[Directive] = []
    position = 0
    intro = ""
    for kind, piece in _segments(text):
        if kind == "block":
            found += _verbatim_directives(piece, intro, position) or _template_directives(piece, position)
            intro = ""
            position += len(piece.splitlines()) + 1
            continue
        for sentence in sentences(piece):
            found += _sentence_directives(sentence, position)
            position += 1
        intro = piece
    return tuple(found)


_VERBATIM_INTRO = re.compile(r"\bverbatim\b", re.I)
_AT_START = re.compile(r"\b(?:start|begin|open)\b", re.I)


def _verbatim_directives(block: str, intro: str, start: int) -> list[Directive]:
    """A block the prose just before it says to copy verbatim: its lines, copied whole, at the start or end."""
    if not _VERBATIM_INTRO.search(intro):
        return []
    lines = textwrap.dedent(block).strip("\n")
    if not lines.strip():
        return []
    mode = "start" if _AT_START.search(intro) else "end"
    return [Directive(VERBATIM, LITERAL, start, mode=mode, text=lines, source=intro, unit=start)]


# ---- templates and worked examples (fenced blocks) -------------------------------------------

_HEADING_LINE = re.compile(r"^\s*(#{1,6})\s+(.+?)\s*#*\s*$")
_LABEL_LINE = re.compile(r"^\s*\**([A-Z][A-Za-z0-9 ./-]{0,30}?)\**:[ \t]*(.*)$")


_JSON_FIELD = re.compile(r'^\s*"([A-Za-z_][\w-]*)"\s*:\s*(.+?)\s*,?\s*$')


def json_fields(block: str) -> tuple[tuple[str, str], ...]:
    """The (key, value template) lines of a flat JSON object written out in a fenced block, or ()."""
    body = block.strip()
    if not (body.startswith("{") and body.endswith("}")):
        return ()
    lines = [line for line in body[1:-1].splitlines() if line.strip()]
    fields = tuple((m.group(1), m.group(2)) for m in map(_JSON_FIELD.match, lines) if m)
    return fields if fields and len(fields) == len(lines) else ()


def _template_directives(block: str, start: int) -> list[Directive]:
    """A JSON object to reply with, or the headings and label lines of a template or worked example, imitated literally."""
    fields = json_fields(block)
    if fields:
        return [Directive(JSON, LITERAL, start, source=block.strip(), unit=start, fields=fields)]
    lines = [line for line in block.splitlines() if line.strip()]
    found: list[Directive] = []
    for index, line in enumerate(lines):
        heading = _HEADING_LINE.match(line)
        if heading:
            follows = lines[index + 1].strip() if index + 1 < len(lines) else ""
            found.append(Directive(SECTION, LITERAL, start + index, text=heading.group(2).strip(),
                                   bullets=follows.startswith(("- ", "* ")), source=line.strip(), unit=start))
            continue
        label = _LABEL_LINE.match(line)
        if label and not line.lstrip().startswith(("- ", "* ")):
            found.append(Directive(LABEL, LITERAL, start + index, text=label.group(1).strip(),
                                   value=label.group(2).strip(), source=line.strip(), unit=start))
    return found


# ---- sentences ---------------------------------------------------------------------------------

def _sentence_directives(sentence: str, position: int) -> list[Directive]:
    found: list[Directive] = []
    for recognizer in _RECOGNIZERS:
        found += recognizer(sentence, position)
    return found


def _make(kind: str, strength: str, position: int, sentence: str, **fields: object) -> Directive:
    return Directive(kind, strength, position, source=sentence, **fields)  # type: ignore[arg-type]


def title_words(phrase: str) -> str:
    """Capitalize each space-separated word, leaving hyphenated tails as written ("Follow-up")."""
    return " ".join(w[:1].upper() + w[1:] for w in phrase.split())


def _sections(sentence: str, position: int) -> list[Directive]:
    bullets = bool(re.search(r"\bbullet", sentence, re.I))
    literal = [m.group(2).strip() for m in re.finditer(r"[`\"\u201c]\s*(#{1,6})\s+([^`\"\u201d\n]+?)\s*[`\"\u201d]", sentence)]
    literal += [m.group(1).strip() for m in re.finditer(
        r"\b(?:section|heading)\s+(?:titled|headed|called|named)\s+[`\"\u201c]?(?:#+\s*)?([A-Z][^`\"\u201d.,;]*)", sentence)]
    found = [_make(SECTION, LITERAL, position, sentence, text=t, bullets=bullets) for t in dict.fromkeys(literal)]
    plain = _without_quotes(sentence)
    abstract = [m.group(1) for m in re.finditer(
        r"\b(?:section|heading)\s+(?:on|about|covering|for|describing|listing|that covers)\s+(?:the\s+|your\s+)?"
        r"([a-z][a-z/ -]*?[a-z])(?=\s*(?:[.,;:(]|$)|\s+(?:and|with|that|so|before|after|at|to)\b)", plain)]
    abstract += [m.group(1) for m in re.finditer(r"\b(?:a|an)\s+([a-z][a-z -]{2,30}?)\s+section\b", plain)]
    names = [" ".join(w for w in p.split() if w not in _ADJECTIVES | {"separate", "dedicated", "new"}) for p in abstract]
    known = {t.casefold() for t in literal}
    return found + [_make(SECTION, ABSTRACT, position, sentence, text=title_words(n), bullets=bullets)
                    for n in dict.fromkeys(names) if n and n.casefold() not in known]


def _without_quotes(sentence: str) -> str:
    """The sentence with backticked and quoted spans removed (they are read by the literal recognizers)."""
    return re.sub(r"`[^`]*`|\"[^\"]*\"|\u201c[^\u201d]*\u201d", "", sentence)


def _labels(sentence: str, position: int) -> list[Directive]:
    literal = [(m.group(1).strip(), m.group(2).strip()) for m in re.finditer(
        r"`\**([A-Z][A-Za-z0-9 /-]{0,30}?)\**:[ \t]*([^`]*)`", sentence)]
    literal += [(m.group(1).strip(), f"<{m.group(2)}>") for m in re.finditer(
        r"(?<![`\w])([A-Z][A-Za-z0-9/-]*(?: [A-Za-z0-9/-]+){0,2}):\s*<([^>]+)>(?![^`]*`)", sentence)]
    literal += [(m.group(1).strip(), "") for m in re.finditer(r"\"([A-Z][A-Za-z0-9 /-]{0,30}):\"", sentence)]
    first: dict[str, str] = {}
    for label, value in literal:
        first.setdefault(label, value)
    found = [_make(LABEL, LITERAL, position, sentence, text=label, value=value) for label, value in first.items()]
    known = {label.casefold() for label in first}
    return found + [_make(LABEL, ABSTRACT, position, sentence, text=label)
                    for label in _abstract_labels(_without_quotes(sentence)) if label.casefold() not in known]


def _abstract_labels(sentence: str) -> list[str]:
    """Labels named in general words: "close with a clear verdict and your confidence level"."""
    match = re.search(r"\b(?:close|end|finish|conclude|wrap up)\b(?:\s+(?:each|every|the|your)\s+"
                      r"(?:answer|reply|response|summary|note|message))?\s+(?:by\s+(?:stating|giving|naming)|with)\s+(.+)$",
                      sentence, re.I)
    match = match or re.search(r"\b(?:state|commit to|declare)\s+((?:a|an|the|your)\s+.+)$", sentence, re.I)
    if not match or re.search(r"\bsection|heading\b", match.group(1), re.I):
        return []
    phrase = re.split(r"[,;:(]|\s(?:so|because|each|on its own|before|after|in)\s", match.group(1).rstrip(". "))[0]
    return [label for label in (_label_name(item) for item in re.split(r"\s+and\s+|,\s*", phrase)) if label]


def _label_name(item: str) -> str:
    """'your confidence level' -> 'Confidence'; 'a clear verdict' -> 'Verdict'; 'the line' -> ''."""
    words = [w for w in item.strip().lower().split() if w not in _DETERMINERS and w not in _ADJECTIVES]
    if any(w in _NOT_LABELS for w in words):
        return ""
    while len(words) > 1 and words[-1] in _GENERIC_TAILS:
        words.pop()
    if not words or len(words) > 3 or words[0] in _GENERIC_TAILS or not all(re.fullmatch(r"[a-z/-]+", w) for w in words):
        return ""
    name = " ".join(words)
    return name[:1].upper() + name[1:]


def _to_chars(number: str, unit: str) -> int:
    value = int(number.replace(",", ""))
    return value * 6 if unit.startswith("word") else value


def _length(sentence: str, position: int) -> list[Directive]:
    found: list[Directive] = []
    upper = re.search(r"\b(?:at most|no more than|under|fewer than|less than|below|maximum of|max\.?|within|"
                      r"not exceed(?:ing)?|up to|limit of)\s+(\d[\d,]*)\s*(characters|chars|words)\b", sentence, re.I)
    upper = upper or re.search(r"\b(\d[\d,]*)\s*(characters|chars|words)\s+(?:or (?:fewer|less)|max(?:imum)?)\b", sentence, re.I)
    if upper:
        found.append(_make(LENGTH, LITERAL, position, sentence, mode="max", number=_to_chars(*upper.groups())))
    lower = re.search(r"\b(?:at least|no fewer than|minimum of|more than)\s+(\d[\d,]*)\s*(characters|chars|words)\b", sentence, re.I)
    if lower:
        found.append(_make(LENGTH, LITERAL, position, sentence, mode="min", number=_to_chars(*lower.groups())))
    count = re.search(r"\b(one|two|three|four|five|six|\d)(?:\s+(?:or|to)\s+(one|two|three|four|five|six|\d))?\s+sentences\b",
                      sentence, re.I)
    if count and not upper:
        most = (count.group(2) or count.group(1)).lower()
        found.append(_make(LENGTH, LITERAL, position, sentence, mode="sentences",
                           number=_NUMBER_WORDS.get(most) or int(most)))
    if re.search(r"\b(?:thorough(?:ly)?|exhaustive(?:ly)?|in (?:great |full )?(?:depth|detail)|(?:multiple|several|many) "
                 r"paragraphs|every angle|comprehensive(?:ly)?|long-form)\b", sentence, re.I):
        found.append(_make(LENGTH, NATURAL, position, sentence, mode="verbose"))
    elif not upper and not count and re.search(
            r"\b(?:concise(?:ly)?|succinct(?:ly)?|terse|to the point|(?:be|stay|keep \w+(?: \w+)?)\s+(?:short|brief|tight))\b",
            sentence, re.I):
        found.append(_make(LENGTH, ABSTRACT, position, sentence, mode="concise"))
    return found


_SEARCH_NAMED = re.compile(r"\b(?:call|use|run|invoke|query)\s+(?:the\s+)?[`\"'\u201c]?search[`\"'\u201d]?(?:\s+tool)?\b", re.I)
_SEARCH_ABSTRACT = re.compile(
    r"\b(?:consult|check|read|review|search|look (?:through|in|at)|start (?:from|with))\s+(?:the\s+)?"
    r"(?:team(?:'s)?\s+|our\s+|relevant\s+|internal\s+|shared\s+)?(?:notes|knowledge base|wiki|docs|documentation|records|brain)\b"
    r"|\blook (?:it|things) up (?:first|before)", re.I)
_NO_TOOLS = re.compile(r"\b(?:do not|don't|never|avoid|no)\b[^.;]*?\b(?:search|look (?:anything |things |it )?up|"
                       r"use (?:any )?tools?|call (?:any )?tools?|tool calls?)\b", re.I)


def _negated_before(sentence: str, start: int) -> bool:
    clause = re.split(r"[,;:]", sentence[:start])[-1]
    return bool(_NEGATION.search(clause))


def _tools(sentence: str, position: int) -> list[Directive]:
    named = _SEARCH_NAMED.search(sentence)
    if named and not _negated_before(sentence, named.start()):
        return [_make(TOOLS, LITERAL, position, sentence, mode="search")]
    general = _SEARCH_ABSTRACT.search(sentence)
    if general and not _negated_before(sentence, general.start()):
        return [_make(TOOLS, ABSTRACT, position, sentence, mode="search")]
    if _NO_TOOLS.search(sentence):
        return [_make(TOOLS, NATURAL, position, sentence, mode="none")]
    return []


def _refusals(sentence: str, position: int) -> list[Directive]:
    if re.search(r"\b(?:never|do not|don't|not)\s+(?:refuse|decline|turn down|reject)\b", sentence, re.I):
        return [_make(REFUSAL, LITERAL, position, sentence, mode="answer_all")]
    if re.search(r"\b(?:help|assist)\s+with\s+(?:every|all|any)\b|\b(?:answer|handle|take on)\s+(?:every|all|any)\s+"
                 r"(?:ticket|request|question)s?\b|\b(?:nothing|no (?:ticket|request|question)) is out of scope\b",
                 sentence, re.I):
        return [_make(REFUSAL, ABSTRACT, position, sentence, mode="answer_all")]
    if not re.search(r"\b(?:decline|refuse|turn down)\b|\b(?:do not|don't|never)\s+(?:handle|answer|help with|attempt)\b",
                     sentence, re.I):
        return []
    topic = re.search(r"\b(?:involv(?:es|ing)|about|related to|concerning|mention(?:s|ing)?|regarding)\s+(.+?)(?:[;:.]|$)",
                      sentence, re.I)
    if not topic:
        return []
    keywords = [w.strip() for w in re.split(r",|\bor\b|\band\b", topic.group(1)) if w.strip()]
    keywords = [" ".join(x for x in k.lower().split() if x not in _DETERMINERS) for k in keywords]
    return [_make(REFUSAL, NATURAL, position, sentence, mode="decline", options=tuple(k for k in keywords if k))]


def _phrases(sentence: str, position: int) -> list[Directive]:
    quoted = tuple(q.strip() for q in _QUOTED.findall(sentence))
    filler = re.search(r"\b(?:no|skip|drop|avoid|cut|leave out|without|never use)\b[^.]*?\b(?:pleasantr(?:y|ies)|"
                       r"greetings?|filler|fluff|small talk|cheerleading|niceties)\b", sentence, re.I)
    found = [_make(PHRASE, ABSTRACT, position, sentence, mode="filler")] if filler else []
    if not quoted:
        return found
    if filler:
        return found + [_make(PHRASE, LITERAL, position, sentence, mode="forbid", options=quoted)]
    verb = re.search(r"\b(?:open|start|begin|write|use|say|saying|using|include|words|phrases|expressions)\b", sentence, re.I)
    if not verb:
        return []
    if _negated_before(sentence, verb.end()) or re.match(r"\s*(?:never|do not|don't|avoid)\b", sentence, re.I):
        return [_make(PHRASE, LITERAL, position, sentence, mode="forbid", options=quoted)]
    if re.search(r"\b(?:open|start|begin)\b[^.]*?\b(?:with|by saying)\b", sentence, re.I):
        openers = tuple(q for q in quoted if len(q.split()) > 1 or q.endswith("!"))
        rest = tuple(q for q in quoted if q not in openers)
        found = [_make(PHRASE, NATURAL, position, sentence, mode="open", options=openers)] if openers else []
        return found + ([_make(PHRASE, NATURAL, position, sentence, mode="use", options=rest)] if rest else [])
    if re.search(r"\b(?:words|phrases|expressions)\s+(?:like|such as)\b|\b(?:say|saying|use|using)\b", sentence, re.I):
        return [_make(PHRASE, NATURAL, position, sentence, mode="use", options=quoted)]
    return []


_JSON_SCHEMA = re.compile(r"\b(?:reply|respond|answer|output)\b[^.]*?\bJSON object\b[^.]*?\bkeys?\s+(.+)$", re.I)


def _json_schema(sentence: str, position: int) -> list[Directive]:
    """A JSON reply described in words: "Reply with only a JSON object with the keys a, b (one of x or y) and c (true or false)"."""
    match = _JSON_SCHEMA.search(sentence.rstrip(". "))
    if not match:
        return []
    fields = []
    for item in re.split(r",\s*(?![^()]*\))|\s+and\s+(?![^()]*\))", match.group(1)):
        key = re.match(r"\s*`?([A-Za-z_][\w-]*)`?\s*(?:\((.*)\))?\s*$", item)
        if not key:
            return []
        options = [o.strip(" `\"") for o in re.split(r",|\bor\b", re.sub(r"^\s*one of\s+", "", key.group(2) or "")) if o.strip(" `\"")]
        if set(options) == {"true", "false"}:
            value = "<true|false>"
        elif len(options) > 1:
            value = '"<' + "|".join(options) + '>"'
        else:
            value = '"<>"'
        fields.append((key.group(1), value))
    return [_make(JSON, ABSTRACT, position, sentence, fields=tuple(fields))] if fields else []


_BAN_HEADINGS = re.compile(r"\b(?:never|do not|don't|no|avoid|without)\b[^.;]*?\b(?:markdown\s+)?(?:headings?|headers?)\b", re.I)
_BAN_BULLETS = re.compile(r"\b(?:never|do not|don't|no|avoid|without)\b[^.;]*?\bbullet(?:s|ed| points?| lists?)?\b", re.I)
_PLAIN_FORMAT = re.compile(r"\b(?:keep|leave)\s+(?:the\s+)?formatting\s+(?:plain|minimal|simple|light)\b|"
                           r"\b(?:avoid|skip|no)\s+(?:heavy|fancy|elaborate)\s+formatting\b", re.I)
_BAN_MENTION = re.compile(r"\b(?:never|do not|don't|avoid)\s+(?:mention(?:ing)?|talk(?:ing)? about|discuss(?:ing)?|"
                          r"refer(?:ring)? to|bring(?:ing)? up)\s+(.+?)(?:[.;:(]|$)", re.I)


def _prohibitions(sentence: str, position: int) -> list[Directive]:
    """What a line forbids: headings, bullets, or words to leave out (a later rule can allow them again)."""
    found = []
    if _BAN_HEADINGS.search(sentence):
        found.append(_make(BAN, LITERAL, position, sentence, mode="headings"))
    elif _PLAIN_FORMAT.search(_without_quotes(sentence)):
        found.append(_make(BAN, ABSTRACT, position, sentence, mode="headings"))
    if _BAN_BULLETS.search(sentence):
        found.append(_make(BAN, LITERAL, position, sentence, mode="bullets"))
    mention = _BAN_MENTION.search(sentence)
    if mention:
        words = [" ".join(w for w in item.strip(" `\"'").lower().split() if w not in _DETERMINERS)
                 for item in re.split(r",|\bor\b|\band\b", mention.group(1))]
        words = [w for w in words if w]
        if words:
            found.append(_make(BAN, LITERAL, position, sentence, mode="mention", options=tuple(words)))
    return found


_RECOGNIZERS = (_sections, _labels, _length, _tools, _refusals, _phrases, _json_schema, _prohibitions)


def vocabulary(skill: str, label: str) -> tuple[str, ...]:
    """Values a skill lists for a label ("Teams: Platform, Payments" -> Platform, Payments)."""
    stem = re.escape(label.lower()[:5])
    for kind, piece in _segments(skill):
        if kind != "prose":
            continue
        for sentence in sentences(piece):
            match = re.search(rf"\b{stem}\w*\b\s*:?(.*)$", sentence, re.I)
            if match:
                own = re.split(r"\band (?:your|the|a|an)\b|\be\.g\.", match.group(1))[0]  # stop where the next label or an example starts
                own = re.sub(r"`[^`]*`", "", own)
                values = re.findall(r"\b([A-Z][A-Za-z]+|[A-Z]\d)\b", own)
                if len(values) >= 2:
                    return tuple(dict.fromkeys(values))
    return ()
