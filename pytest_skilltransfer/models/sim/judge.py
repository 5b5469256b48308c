"""SIMULATED judge models `sim-judge` and `sim-judge-lenient`: deterministic, in-process, free. NOT real models.

They exist so rubric checks, majority votes, agreement and calibration can be demonstrated and
tested offline. A sim judge reads only the judge request (its `# Task`, `# Answer` and
`# Criterion` sections) and answers with a verdict as JSON; it never sees seeds, checks or other
tasks.

How it decides: the criterion names concepts it recognizes from a small lexicon (root cause,
customer impact, a merge verdict, next steps, a way back, risks, an owner, confidence), and the
answer passes when it shows a cue of every named concept (synonyms count: "caused by" is a root
cause). Double-quoted terms in the criterion are accepted as cues too; a criterion that says
"never" / "does not" passes when the cues are absent. A criterion it recognizes nothing in is
judged by word overlap.

It is imperfect on purpose: each verdict flips with a probability that grows with how vague the
criterion is (no recognized concept, no quoted example, words such as "clear", "good",
"helpful"), drawn from sha256 of the request and its sample id, so repeated samples can disagree
and a calibration file can catch the errors. `sim-judge-lenient` is a deliberately miscalibrated
judge that also passes about half of the answers that fail.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from functools import lru_cache

from ...guards.prompt_format import ANSWER_HEADER, CRITERION_HEADER, RUBRIC_SECTIONS
from ..base import ModelError, Reply, Request, Usage, register_family

FAMILY = "sim-judge"
HEADERS = RUBRIC_SECTIONS

# (concept, words in a criterion that name it, cues in an answer that show it)
CONCEPTS: tuple[tuple[str, str, str], ...] = (
    ("root cause", r"root cause|why (?:it|the \w+) (?:happened|failed|broke)|\bcaused?\b",
     r"root cause|caused by|due to|triggered by|because of"),
    ("customer impact", r"\bimpact|customers? (?:saw|felt|were)|who was affected",
     r"impact|customers? (?:saw|could not|couldn't|were)|users? (?:saw|could not|couldn't|were)|affected"),
    ("merge verdict", r"\bverdict|\bmerge\b|\bapprov",
     r"\bverdict\b|safe to merge|(?:do not|don't) merge|ready to merge|\bapprove|request changes|\bship it\b|\bhold until\b"),
    ("next step", r"next steps?|follow[- ]?ups?|action items?",
     r"next steps?|follow[- ]?ups?|action items?|\btodo\b"),
    ("way back", r"roll ?back|revert|way back",
     r"roll ?back|revert|way back|\bundo\b"),
    ("risk", r"\brisks?\b|failure modes?|could break",
     r"\brisks?\b|could break|might break|regression|failure modes?"),
    ("owner", r"\bowners?\b|who owns|responsible",
     r"\bowners?\b|@\w+|\bowns\b|responsible"),
    ("confidence", r"confiden", r"confiden"),
)
VAGUE_WORDS = r"\b(?:good|clear|clearly|well|appropriate|helpful|quality|professional|reasonable|useful|nice|friendly|" \
              r"tone|polite|thorough|engaging|convincing|great|solid|nicely)\b"
NEGATION = r"\b(?:does not|doesn't|do not|don't|never|avoids?|without)\b"
STOPWORDS = frozenset("about above after again answer being below between could every from have into more most "
                      "other should some such than that their there these they this those through under where "
                      "which while with would".split())


@dataclass(frozen=True)
class JudgeProfile:
    """How a simulated judge errs: a base flip rate, its growth with vagueness, and leniency on fails."""

    base_error: float
    vague_error: float
    lenient: float = 0.0


PROFILES = {
    "sim-judge": JudgeProfile(base_error=0.01, vague_error=0.4),
    "sim-judge-lenient": JudgeProfile(base_error=0.01, vague_error=0.4, lenient=0.5),
}


@dataclass(frozen=True)
class Reading:
    """What the judge made of a criterion and an answer, before its own errors."""

    passed: bool
    reason: str
    vagueness: float


def sections(text: str) -> dict[str, str] | None:
    """The task, answer and criterion of a judge request's user text, or None when it is not one."""
    starts = [text.find(f"{h}\n") for h in HEADERS]
    if any(s < 0 for s in starts) or starts != sorted(starts):
        return None
    ends = starts[1:] + [len(text)]
    return {h: text[s + len(h) + 1:e].strip() for h, s, e in zip(HEADERS, starts, ends)}


def vagueness(criterion: str, concepts: int, quoted: int) -> float:
    """0 (concrete) .. 1 (vague): no recognized concept, no quoted example, vague words."""
    score = (0.5 if not concepts else 0.0) + (0.1 if not quoted else 0.0)
    score += 0.2 * len(re.findall(VAGUE_WORDS, criterion, re.I))
    return min(1.0, score)


@lru_cache(maxsize=1024)
def _criterion(criterion: str) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...], float, bool]:
    """What `read` takes from the criterion alone (its quoted terms, named concepts, vagueness and negation),
    read once per criterion: every answer to one check is judged against the same text."""
    quoted = tuple(q.strip() for q in re.findall(r'"([^"]+)"', criterion) if q.strip())
    named = tuple((name, cues) for name, trigger, cues in CONCEPTS if re.search(trigger, criterion, re.I))
    negated = re.search(NEGATION, criterion, re.I) is not None
    return quoted, named, vagueness(criterion, len(named), len(quoted)), negated


def read(criterion: str, answer: str) -> Reading:
    """The judge's honest reading of the answer against the criterion."""
    quoted, named, vague, negated = _criterion(criterion)
    extra = "|".join(re.escape(q) for q in quoted)
    if named or quoted:
        groups = named or [("quoted term", "")]
        missing, found = [], []
        for name, cues in groups:
            pattern = "|".join(p for p in (cues, extra) if p)
            hit = re.search(pattern, answer, re.I)
            (found if hit else missing).append((name, hit.group(0) if hit else ""))
        if negated:
            passed = not found
            reason = (f"the answer avoids {', '.join(n for n, _ in missing)}" if passed
                      else f"the answer mentions {found[0][0]} (\"{found[0][1]}\")")
        else:
            passed = not missing
            reason = ("the answer gives " + ", ".join(f'the {n} ("{cue}")' for n, cue in found) if passed
                      else f"the answer never gives the {missing[0][0]}")
        return Reading(passed, reason, vague)
    words = {w for w in re.findall(r"[a-z]{5,}", criterion.lower()) if w not in STOPWORDS}
    present = {w for w in words if w in answer.lower()}
    touches = bool(words) and len(present) * 2 >= len(words)
    if not words:
        reason = "the criterion gives nothing to check"
    elif negated:
        reason = f"the answer {'uses' if touches else 'avoids'} the criterion's key words ({len(present)} of {len(words)})"
    else:
        reason = f"the answer touches {len(present)} of {len(words)} key words of the criterion"
    return Reading(touches != negated, reason, vague)


class SimJudge:
    """A simulated judge bound to one profile. `model_id` equals the name."""

    family = FAMILY

    def __init__(self, name: str):
        if name not in PROFILES:
            raise ModelError(f"unknown simulated judge {name!r}; simulated judges are: {', '.join(PROFILES)}")
        self.name = self.model_id = name
        self.profile = PROFILES[name]

    def _draw(self, request: Request, label: str) -> float:
        digest = hashlib.sha256(f"{request.key(self.model_id)}|{label}".encode()).digest()
        return int.from_bytes(digest[:8], "big") / 2**64

    def complete(self, request: Request) -> Reply:
        """A verdict as JSON, from the request's task, answer and criterion alone."""
        user = next((m.content for m in request.messages if m.role == "user"), "")
        parts = sections(user)
        if parts is None:
            text = "I only grade requests with # Task, # Answer and # Criterion sections."
        else:
            reading = read(parts[CRITERION_HEADER], parts[ANSWER_HEADER])
            passed, reason = reading.passed, reading.reason
            error = self.profile.base_error + self.profile.vague_error * reading.vagueness
            if self._draw(request, "flip") < error:
                passed, reason = not passed, ("the answer seems to meet the criterion" if not passed
                                              else "the answer does not clearly meet the criterion")
            elif not passed and self._draw(request, "lenient") < self.profile.lenient:
                passed, reason = True, "the answer is close enough to the criterion"
            text = json.dumps({"verdict": "pass" if passed else "fail", "reason": reason})
        prompt = request.system + "".join(m.content for m in request.messages)
        return Reply(text=text, usage=Usage(len(prompt) // 4 + 1, len(text) // 4 + 1), model=self.model_id,
                     stop_reason="end_turn")


register_family(
    FAMILY,
    lambda name: name in PROFILES,
    SimJudge,
    "sim-judge, sim-judge-lenient: SIMULATED judge models for rubric checks (deterministic, free; not real models)",
)
