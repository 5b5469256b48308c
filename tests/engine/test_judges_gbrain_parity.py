"""Our rule checks against gbrain skillopt-v1's `applyCheck`, case by case.

The oracle is a small JavaScript restatement of gbrain's documented semantics (`contains`: substring;
`regex`: `new RegExp(arg, "m").test(text)`, a pattern that throws fails; `section_present`: arg without
leading `#`s, escaped, `^#{1,6}\\s+<arg>\\s*$` with flags `mi`; `max_chars`: `text.length <= n`), run in
node when it is installed. Every case must agree, except the differences pinned in PINNED.
"""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from pytest_skilltransfer.engine.judges import Attempt, Check, Judge, check_passes, score

# (op, arg, text): agreed outcomes are computed by the oracle; our expectations are written out.
CASES: list[tuple[str, object, str, bool]] = [
    ("section_present", "Key Risks", "## Key Risks\n- a", True),
    ("section_present", "Key Risks", "   ## Key Risks", False),
    ("section_present", "Key Risks", "## Key Risks ##", False),
    ("section_present", "Key Risks", "##\nKey Risks", True),
    ("section_present", "C#", "## C#\n", True),
    ("section_present", "## Key Risks", "### key risks\n", True),
    ("section_present", "Key Risks", "## Key Risks:\n", False),
    ("section_present", "Key Risks", "intro\r\n## Key Risks\r\nmore", True),
    ("regex", "\\d", "\u0663", False),
    ("regex", "^\\w+$", "caf\u00e9", False),
    ("regex", "^Team: Web$", "Team: Web\r\nPriority: P1", True),
    ("regex", "^Team: Web$", "Team: Web\rPriority: P1", True),
    ("regex", "[Cc]onfidence\\s*[:=]", "Confidence: High", True),
    ("regex", "^Verdict[ \\t]*:[ \\t]*\\S.{9,}", "Verdict: ship it on Monday", True),
    ("regex", "(", "anything", None),  # does not compile: the loader rejects it, gbrain fails it
    ("contains", "Confidence:", "confidence: high", False),
    ("max_chars", 3, "\U0001F600\U0001F600", False),
    ("max_chars", 4, "\U0001F600\U0001F600", True),
    ("max_chars", 5, "caf\u00e9s", True),
]

# Differences that remain, each with what we do and what gbrain does.
PINNED: list[tuple[str, object, str, bool, bool, str]] = [
    ("regex", "(?m)^x", "x", True, False, "Python inline flags: JavaScript throws, gbrain fails the check; the loader warns"),
    ("regex", "\\Ax", "x", True, False, "\\A is Python-only: JavaScript reads it as the letter A; the loader warns"),
    ("regex", "(?P<n>x)", "x", True, False, "Python named groups: JavaScript throws; the loader warns"),
    ("regex", "^a\\sb$", "a\u00a0b", False, True, "\\s is ASCII whitespace here, Unicode in JavaScript"),
    ("regex", "x\\r$", "x\r\n", False, True, "a pattern matching \\r itself sees \\n: line ends are normalized"),
]

ORACLE = r"""
const cases = JSON.parse(require('fs').readFileSync(0, 'utf8'));
const out = cases.map(([op, arg, text]) => {
  if (op === 'contains') return text.includes(arg);
  if (op === 'max_chars') return text.length <= arg;
  if (op === 'regex') { try { return new RegExp(arg, 'm').test(text); } catch (e) { return false; } }
  if (op === 'section_present') {
    const heading = arg.replace(/^#+\s*/, '').trim().replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    return new RegExp('^#{1,6}\\s+' + heading + '\\s*$', 'mi').test(text);
  }
  return null;
});
process.stdout.write(JSON.stringify(out));
"""


def ours(op: str, arg: object, text: str) -> bool:
    return check_passes(Check(op, arg), Attempt(text))


@pytest.mark.parametrize("op, arg, text, expected", [c for c in CASES if c[3] is not None], ids=lambda v: repr(v)[:30])
def test_our_checks_give_the_documented_outcome(op, arg, text, expected):
    assert ours(op, arg, text) is expected


@pytest.mark.parametrize("op, arg, text, we, gbrain, why", PINNED, ids=lambda v: repr(v)[:30])
def test_each_remaining_difference_is_pinned(op, arg, text, we, gbrain, why):
    assert ours(op, arg, text) is we, why


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed; the JavaScript oracle cannot run")
def test_node_oracle_agrees_on_every_case_and_differs_exactly_where_pinned():
    rows = [(op, arg, text) for op, arg, text, _ in CASES] + [(op, arg, text) for op, arg, text, *_ in PINNED]
    run = subprocess.run(["node", "-e", ORACLE], input=json.dumps(rows), capture_output=True, text=True, check=True)
    verdicts = json.loads(run.stdout)
    for (op, arg, text, expected), js in zip(CASES, verdicts):
        assert js is (expected if expected is not None else False), (op, arg, text)
    for (op, arg, text, we, gbrain, why), js in zip(PINNED, verdicts[len(CASES):]):
        assert js is gbrain and we is not gbrain, why


def test_qrels_hard_is_a_top_k_hit_and_soft_is_gbrains_ndcg():
    judge = Judge("qrels", expected_slugs=("topics/x",), k=5)
    verdict = score(judge, Attempt("", ("search",), ("topics/a", "topics/b", "topics/x")))
    assert verdict.hard == 1.0  # gbrain has no pass/fail; its score is our soft
    assert verdict.soft == pytest.approx(0.5)
