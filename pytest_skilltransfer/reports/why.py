"""Why an item failed, hurt or changed: its checks per arm, the checks newly missed, and the learned lines
they point at. A pure function of the items' records (`evidence.item_record`, like `summary`), so a merged report, the page
and the Markdown summary say the same.

A check counts as missed on a held-out task in an arm when any of the task's samples (any restart) missed
it; counts are tasks. `newly_missed` is the tasks an arm misses that the baseline passed.

A learned line *mentions* a check when it names the check's argument (a word of `not_contains=simply` is
`simply`), or, for a length check, speaks of length (`short`, `concise`, ...); the learned lines are the
lines the accepted nights changed: the unified diff of the learned skill against the seed's.

A mentioning line is shown as a possible *cause* only when its direction agrees with the miss (`CAUSE_RULE`):
a `not_contains` or `regex` miss (the answer has what it must not) is pushed by a line added that asks for it
or a line removed that forbade it; a `contains` or section miss (the answer lacks it) by a line added that
forbids it or a line removed that asked for it. A line forbids when it says never, don't, do not, avoid,
no, without, ... before the check's word. "Never write 'Great question'" does not cause a missed
`not_contains=Great question`: it is listed as a mention. A length miss is caused by a line pushing that
way (too short for `min_chars`: short, concise, under...; too long for `max_chars`: detailed, exhaustive...),
read from the first such word of the line.
"""

from __future__ import annotations

import difflib
import re
from typing import Any

from ..engine.judges import ABSENT, LENGTH, PRESENT, miss_of
from ..evidence.item_record import ArmRecord, ItemRecord

ARMS = ("baseline", "transferred", "direct")
SHORT_WORDS = ("short", "shorter", "concise", "brief", "briefly", "terse", "succinct", "under", "limit", "fewer",
               "less", "max", "maximum", "cap")
LONG_WORDS = ("long", "longer", "exhaustive", "detailed", "detail", "thorough")
LENGTH_WORDS = (*SHORT_WORDS, *LONG_WORDS, "length", "words", "characters", "chars", "paragraph", "paragraphs")
KIND_WORDS = {"min_chars": LENGTH_WORDS, "max_chars": LENGTH_WORDS,  # judge ops (`engine.judges.RULE_OPS`)
              "no_refusal": ("refuse", "decline", "cannot", "can't", "unable", "sorry")}
NEGATIONS = frozenset("never not no don't dont do-not avoid without stop drop omit remove skip nor none "
                      "refrain forbid forbidden".split())
CAUSE_RULE = ("A learned line mentions a check when it names the check's words. It is shown as a possible cause "
              "only when its direction agrees with the miss: an answer that has what a not_contains check forbids is "
              "pushed by a line added that asks for it (or removed that forbade it); an answer that lacks what a "
              "contains check wants, by a line added that forbids it (or removed that asked for it); an answer too short "
              "for a min_chars check, by a line asking for brevity (too long for max_chars: asking for detail). A line "
              "that forbids what a missed not_contains check looks for is a mention, never its cause.")
STOP_WORDS = frozenset("the and for with that this not are from your you its into than then when what which "
                       "line lines counts count top".split())
MARKER = re.compile(r"^\s*<!--.*-->\s*$")
TOP_CHECKS = 3
TOP_LINES = 4


def missed_tasks(evaluation: ArmRecord | None) -> dict[str, set[str]]:
    """Per check, the ids of the tasks on which any sample missed it."""
    missed: dict[str, set[str]] = {}
    for task in evaluation.tasks if evaluation is not None else ():
        for sample in task.samples:
            for label in sample.failed:
                missed.setdefault(label, set()).add(task.task_id)
    return missed


def check_arms(result: ItemRecord) -> list[dict[str, Any]]:
    """Each check's missed tasks per arm (`direct` None without a direct run), the change transferred -
    baseline, and the tasks newly missed and fixed; the worst change first, then by name."""
    scores = result.scores
    by_arm = {arm: missed_tasks(getattr(scores, arm)) for arm in ARMS}
    tasks = len(scores.baseline.tasks) if scores.baseline is not None else 0
    rows = []
    for label in sorted(set().union(*by_arm.values())):
        base, moved = by_arm["baseline"].get(label, set()), by_arm["transferred"].get(label, set())
        direct = None if scores.direct is None else len(by_arm["direct"].get(label, set()))
        rows.append({"check": label, "tasks": tasks, "baseline": len(base), "transferred": len(moved),
                     "direct": direct, "change": len(moved) - len(base), "newly_missed": len(moved - base),
                     "fixed": len(base - moved)})
    return sorted(rows, key=lambda r: (-r["change"], -r["newly_missed"], -r["transferred"], r["check"]))


def run_checks(results: list[ItemRecord]) -> list[dict[str, Any]]:
    """Per check over the run's (seed, pair) items (`summary.unique`): the items whose transferred arm misses
    it, and its missed tasks per arm summed over items; the most missed with the learned skill first."""
    from ..evidence.summary import unique

    totals: dict[str, dict[str, Any]] = {}
    for result in unique(results):
        for row in result.checks or check_arms(result):
            total = totals.setdefault(row["check"], {"check": row["check"], "items": 0, "tasks": 0, "baseline": 0,
                                                     "transferred": 0, "direct": 0, "change": 0})
            total["items"] += row["transferred"] > 0
            total["tasks"] += row["tasks"]
            for key in ("baseline", "transferred", "change"):
                total[key] += row[key]
            total["direct"] += row["direct"] or 0
    return sorted(totals.values(), key=lambda r: (-r["transferred"], -r["change"], r["check"]))


def learned_lines(result: ItemRecord) -> list[str]:
    """The lines the accepted nights added (`+ ...`) or removed (`- ...`): the learned skill's diff against the
    seed's, without blank lines, markers and headings."""
    seed, learned = result.seed_skill, result.learned_skill
    if seed is None:
        return []
    lines = []
    for line in difflib.unified_diff(seed.splitlines(), learned.splitlines(), lineterm="", n=0):
        if line.startswith(("+++", "---", "@@")) or line[:1] not in "+-":
            continue
        text = line[1:].strip()
        if text and not MARKER.match(text) and not text.startswith("#"):
            lines.append(f"{line[0]} {text}")
    return lines


def _words(check: str) -> set[str]:
    kind, _, argument = check.partition("=")
    words = {w.lower() for w in re.findall(r"[A-Za-z][A-Za-z'-]{2,}", argument)} - STOP_WORDS
    return words | set(KIND_WORDS.get(kind.strip(), ()))


def _tokens(text: str) -> list[str]:
    return [w.lower() for w in re.findall(r"[A-Za-z][A-Za-z'-]*", text.replace("do not", "do-not"))]


def mentioning_lines(check: str, lines: list[str]) -> list[str]:
    """The learned lines that name the check's words (see the module's note)."""
    words = _words(check)
    return [line for line in lines if words & set(_tokens(line))]


def forbids(line: str, check: str) -> bool:
    """Whether the line speaks against the check's words: a negation before the first of them."""
    tokens, words = _tokens(line), _words(check)
    first = next((i for i, token in enumerate(tokens) if token in words), len(tokens))
    return any(token in NEGATIONS for token in tokens[:first])


def causes(line: str, check: str) -> bool:
    """Whether a line mentioning a missed check may have caused the miss (`CAUSE_RULE`)."""
    kind = check.partition("=")[0].strip()
    added = line.startswith("+")
    miss = miss_of(kind)
    if miss == LENGTH:  # too short / too long: a line pushing that way
        tokens = _tokens(line[1:])
        first = next((i for i, t in enumerate(tokens) if t in SHORT_WORDS or t in LONG_WORDS), None)
        if first is None:
            return False
        short = (tokens[first] in SHORT_WORDS) != any(t in NEGATIONS for t in tokens[:first])  # its first word rules
        return short == (kind == "min_chars") if added else short != (kind == "min_chars")
    if miss not in (PRESENT, ABSENT):
        return False
    pushes_presence = added != forbids(line[1:], check)  # added and asking, or removed and forbidding
    return pushes_presence if miss == PRESENT else not pushes_presence


def pointed_lines(check: str, lines: list[str]) -> list[str]:
    """The learned lines that may have caused a miss of the check: they mention it in the miss's direction."""
    return [line for line in mentioning_lines(check, lines) if causes(line, check)]


def why(result: ItemRecord) -> dict[str, Any]:
    """The checks most often newly missed with the learned skill (else the checks it still misses most), each
    with the learned lines it points at, and the learned lines in all."""
    rows = result.checks or check_arms(result)
    newly = sorted((r for r in rows if r["newly_missed"] > 0), key=lambda r: (-r["newly_missed"], r["check"]))
    kind = "newly missed"
    if not newly:
        newly = sorted((r for r in rows if r["transferred"] > 0), key=lambda r: (-r["transferred"], r["check"]))
        kind = "still missed"
    lines = learned_lines(result)
    checks = [{"check": r["check"], "tasks": r["newly_missed"] if kind == "newly missed" else r["transferred"],
               "of": r["tasks"], "lines": pointed_lines(r["check"], lines)[:TOP_LINES],
               "mentions": [line for line in mentioning_lines(r["check"], lines)
                            if not causes(line, r["check"])][:TOP_LINES]}
              for r in newly[:TOP_CHECKS]]
    return {"kind": kind, "checks": checks, "learned_lines": lines}


def changed(result: ItemRecord) -> bool:
    """Whether the item changed against the base ref (`--compare-to`): a regression verdict or another score."""
    compare = result.compare or {}
    return bool(compare) and (compare.get("verdict") not in (None, "pass")
                              or compare.get("before") != compare.get("after"))


def unlearnable(result: ItemRecord) -> bool:
    """Probably unlearnable as written: the result's `unlearnable` record (`engine.results.TransferResult`:
    the direct optimization on the target gains nothing over a baseline with room to grow, nor does the
    transferred skill): the seed's tasks or checks may ask what no edit of the skill can give."""
    return result.unlearnable is not None


def unlearnable_text(result: ItemRecord) -> str:
    return (f"unlearnable as written? even optimized directly on {result.target} the skill gains nothing: "
            f"baseline {result.baseline_target:.2f}, transferred {result.transferred:.2f}, direct "
            f"{result.direct_target:.2f}; look at the seed's tasks and checks")


def portable_text(result: ItemRecord) -> str | None:
    """A --validate-on item's outcome in one line (the word its record carries), None without one."""
    portable = result.portable
    if not portable:
        return None
    return (f"portable skill (validated on {', '.join(portable['validate_on'])}): {portable['outcome']} on "
            f"{result.target}; single-model {result.transferred:.2f}, multi-model "
            f"{portable['transferred']['hard']['mean']:.2f}, baseline {result.baseline_target:.2f}")


def is_hand_written(result: ItemRecord) -> bool:
    """A hand-written test (a `transfer` fixture call in a test function), not an item of the seed matrix."""
    return bool(result.item) and "::transfer[" not in (result.item or "")


def holm_outcomes(report_summary: dict[str, Any]) -> dict[tuple[str, str, str], str]:
    """(seed, source, target) -> the outcome after Holm, from a report's `summary`."""
    return {(i["seed"], i["source"], i["target"]): i["outcome"] for i in report_summary.get("items", [])}
