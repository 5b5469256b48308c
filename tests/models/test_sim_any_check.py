"""The simulator learns every op of the judge's table, each written the way a real skill's format states it.

Each case builds a seed whose hand-written skill (front matter, sections, a colour list, as public skills
are written) misses one kind of check, and runs the default protocol on the simulator: the learned skill
must raise the held-out score in at least one direction. The simulator reads only what the requests show
(the optimizer reads the failing check's text; the agent reads the skill).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_skilltransfer.engine.judges import RULE_OPS
from pytest_skilltransfer.engine.protocol import SeedSession
from pytest_skilltransfer.engine.results import ProtocolConfig
from pytest_skilltransfer.engine.seeds import load_seed
from pytest_skilltransfer.models.registry import resolve_model

SKILL = """\
---
name: slide-theme
description: Applies the house theme (colours and type) to slides, posters and documents.
---

# Slide Theme

## Colors

- Ink: `#141413` - text and dark backgrounds
- Paper: `#faf9f5` - light backgrounds
- Accent: `#d97757` - highlights

## Typography

- **Headings**: Poppins (with Arial fallback)
- **Body Text**: Lora (with Georgia fallback)
"""

TOPICS = (
    "the launch slide for the analytics product", "the poster for the company offsite", "the one-pager on quarterly results",
    "the onboarding deck for new engineers", "the banner for the developer conference", "the newsletter header for March",
    "the diagram of the billing pipeline", "the chart of weekly active users", "the cover of the annual report",
    "the landing page hero for the API launch", "the social card for the hiring campaign", "the pitch deck for the Series C",
    "the incident review slides", "the product tour for the mobile app", "the flyer for the security training",
    "the email header for the customer webinar", "the title slide for the board meeting", "the spec sheet for the storage tier",
    "the sticker for the hackathon", "the dashboard mockup for support metrics", "the welcome page for partners",
    "the timeline graphic for the migration", "the badge for the mentoring program", "the summary card for the roadmap review",
    "the report cover for the audit findings", "the slide on data retention rules", "the splash screen for the desktop app",
    "the handout for the design workshop", "the certificate for the award winners", "the chart of regional revenue",
    "the infographic on carbon savings", "the header of the status page",
)

# op -> (an extra line of the hand-written skill that causes the miss, the checks, seed.toml text)
CASES: dict[str, tuple[str, list[dict], str]] = {
    "section_present": ("", [{"op": "section_present", "arg": "Palette"}], ""),
    "section_contains": ("", [{"op": "section_contains", "arg": "palette"}], ""),
    "regex-hex": ("", [{"op": "regex", "arg": "#[0-9a-fA-F]{6}"}], ""),
    "regex-front-matter": ("", [{"op": "regex", "arg": "^---$"}, {"op": "regex", "arg": "^name: [a-z0-9-]+$"},
                                {"op": "regex", "arg": "^description: "}], ""),
    "contains-bold-label": ("", [{"op": "contains", "arg": "**Headers**:"}], ""),
    "contains-lowercase-label": ("", [{"op": "contains", "arg": "primary: "}], ""),
    "not_contains": ('Open every answer warmly, for example with "Happy to help!"',
                     [{"op": "not_contains", "arg": "Happy to help"}], ""),
    "max_chars": ("Describe every element thoroughly, in multiple paragraphs.", [{"op": "max_chars", "arg": 700}], ""),
    "min_chars": ("Keep every answer to two sentences.", [{"op": "min_chars", "arg": 400}], ""),
    "no_refusal": ("Decline any request about styling or themes.", [{"op": "no_refusal"}], ""),
    "tool_called": ("Do NOT search or use any tools.", [{"op": "tool_called", "arg": "search"}], 'corpus = "brain"\n'),
    "rubric": ("", [{"op": "rubric", "arg": 'States the theme\'s palette (a "**Palette**:" line counts).'}],
               '[judge]\nmodel = "sim-judge"\nsamples = 1\n'),
}


def build(root: Path, extra: str, checks: list[dict], config: str):
    root.mkdir(parents=True)
    (root / "SKILL.md").write_text(SKILL + ("\n" + extra + "\n" if extra else ""))
    (root / "seed.toml").write_text(config)
    judge = {"kind": "rule", "checks": checks}
    verbs = ("Style", "Theme", "Restyle", "Apply the theme to")
    tasks = [f"{verbs[i % 4]} {topic}." for i, topic in enumerate(TOPICS)]
    (root / "benchmark.jsonl").write_text("".join(
        json.dumps({"task_id": f"train-{i:02d}", "task": t, "judge": judge}) + "\n" for i, t in enumerate(tasks[:20])))
    (root / "held-out.jsonl").write_text("".join(
        json.dumps({"task_id": f"held-{i:02d}", "task": t, "judge": judge}) + "\n" for i, t in enumerate(tasks[20:])))
    if "corpus" in config:
        (root / "brain").mkdir()
        for topic in TOPICS[:6]:
            slug = topic.replace(" ", "-")
            (root / "brain" / f"{slug}.md").write_text(f"# {topic}\n\nNotes on {topic}: use the accent colour sparingly.\n")
    return load_seed(root)


def gains(seed) -> dict[str, tuple[float, float]]:
    found = {}
    for source, target in (("sim-small", "sim-large"), ("sim-large", "sim-small")):
        session = SeedSession(seed, ProtocolConfig())
        session.splits["test"] = seed.test
        result = session.transfer(resolve_model(source), resolve_model(target))
        found[f"{source}->{target}"] = (result.baseline.hard.mean, result.transferred.hard.mean)
    return found


def test_the_cases_cover_every_op_of_the_judges_table():
    ops = {check["op"] for _, checks, _ in CASES.values() for check in checks}
    assert ops == set(RULE_OPS)


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_seed_built_from_each_op_transfers_in_at_least_one_direction(tmp_path, case):
    extra, checks, config = CASES[case]
    found = gains(build(tmp_path / case, extra, checks, config))
    assert any(after > before for before, after in found.values()), found


def test_a_contains_check_is_a_literal_to_copy_never_a_regular_expression():
    from pytest_skilltransfer.models.sim.noise import Noise
    from pytest_skilltransfer.models.sim.optimizer import Criterion, ReflectPrompt, propose
    from pytest_skilltransfer.models.sim.profiles import PROFILES

    prompt = ReflectPrompt("# Theme", (Criterion("contains", "**Headers**:", 3), Criterion("regex", "^name: [a-z0-9-]+$", 3)),
                           frozenset(), 3)
    edits = propose(prompt, PROFILES["sim-small"], Noise("x"))
    text = "\n".join(e["content"] for e in edits)
    assert "regular expression" not in text
    assert "**Headers**: <one specific point>" in text and "name: sample" in text and "verbatim" in text


def test_the_agent_copies_only_a_block_its_skill_introduces_as_verbatim():
    from pytest_skilltransfer.models.base import Message, Request

    block = "~~~\n---\nname: sample\n---\n~~~"
    told = Request(system=f"# Theme\n\nStart every answer with these lines, verbatim:\n{block}\n",
                   messages=(Message(role="user", content="Style the launch slide."),))
    shown = Request(system=f"# Theme\n\nHere is a file header:\n{block}\n", messages=told.messages)
    model = resolve_model("sim-large")
    assert model.complete(told).text.startswith("---\nname: sample\n---\n")
    assert "name: sample" not in model.complete(shown).text
