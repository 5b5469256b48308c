"""Text from seeds and models reaches the terminal escaped: control and bidi characters are shown, not obeyed."""

from __future__ import annotations

import json

import pytest
from plugin_support import CHECKS, TOY_CONFTEST

from pytest_skilltransfer.guards.terminal import is_safe, safe

HOSTILE = "\x1b[2J\x1b]0;pwned\x07\x00\r\u202eevil\u2066"
EVIL_CONFTEST = TOY_CONFTEST + '''

class Evil(Toy):
    def complete(self, request):
        reply = super().complete(request)
        if "# Failing criteria" in request.messages[0].content:
            return reply
        return Reply(text=reply.text.split(" Owner")[0] + " ''' + HOSTILE.encode("unicode_escape").decode() + '''",
                     usage=reply.usage, model=self.name)


register_family("evil", lambda name: name.startswith("evil-"), Evil, "evil-<name>: answers with control characters")
'''


def test_safe_escapes_controls_and_bidi_but_keeps_lines_and_tabs() -> None:
    assert safe("a\tb\nc") == "a\tb\nc"
    assert safe(HOSTILE) == "\\x1b[2J\\x1b]0;pwned\\x07\\x00\\x0d\\u202eevil\\u2066"
    assert is_safe(safe(HOSTILE)) and not is_safe(HOSTILE)
    assert safe("\x85\x9b") == "\\x85\\x9b"  # C1 controls (NEL, CSI)
    assert safe("a\u200bb\u200dc\u2060d\ufeff") == "a\\u200bb\\u200dc\\u2060d\\ufeff"  # zero-width


def test_control_characters_from_tasks_and_answers_never_reach_the_terminal_raw(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(EVIL_CONFTEST)
    pytester.makeini("[pytest]\nskilltransfer_limit_replay = 0\nskilltransfer_limit_holdout = 0\n"
                     "skilltransfer_nights = 1\nskilltransfer_no_direct = true\n")
    seed = pytester.path / "seeds" / "alpha"
    seed.mkdir(parents=True)
    (seed / "SKILL.md").write_text("# alpha\n\nRoute the ticket.\n")
    line = lambda p, i: json.dumps({"task_id": f"{p}-{i:02d}", "task": f"Route {HOSTILE} ticket {i}", "judge": CHECKS})
    (seed / "benchmark.jsonl").write_text("\n".join(line("bm", i) for i in range(8)) + "\n")
    (seed / "held-out.jsonl").write_text("\n".join(line("hd", i) for i in range(4)) + "\n")
    (seed / "seed.toml").write_text("[thresholds]\nmin_gain = 0.5\n")
    result = pytester.runpytest_subprocess("--pair", "toy-a:evil-b", "-v")
    printed = result.stdout.str() + result.stderr.str()
    assert "FAILED" in printed  # the gate fails, so the diagnosis (tasks and answers) is printed
    assert is_safe(printed), sorted({hex(ord(c)) for c in printed if not is_safe(c)})
    assert "\\x1b[2J" in printed and "\\u202e" in printed
