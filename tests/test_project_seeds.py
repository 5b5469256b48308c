"""The seeds shipped in seeds/: they load, cover every judge op, and are calibrated on the simulator."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_skilltransfer import judges
from pytest_skilltransfer.agent import AgentContext, run_task
from pytest_skilltransfer.edits import render_skill, split_skill
from pytest_skilltransfer.judges import RULE_OPS
from pytest_skilltransfer.ledger import CallCache, Meter
from pytest_skilltransfer.models.base import resolve_model
from pytest_skilltransfer.protocol import ProtocolConfig, SeedSession, seed_judge
from pytest_skilltransfer.rubric import RubricJudge
from pytest_skilltransfer.seeds import Seed, discover_seeds, load_seed
from pytest_skilltransfer.tools import load_corpus, search

SEEDS_DIR = Path(__file__).resolve().parent.parent / "seeds"
SEED_PATHS = discover_seeds(SEEDS_DIR)
SAMPLES = 5

# Hand-written fixes per seed: (literal rules, abstract rules). Literal rules name exact headings,
# label lines, limits, phrases and tools; abstract rules say the same in general words.
FIXES: dict[str, tuple[list[str], list[str]]] = {
    "incident-summary": (
        ["Every answer must end with these parts, copied exactly:\n~~~\n## Customer Impact\n- <one specific point>\n"
         "## Follow-up\n- <one specific action with an owner>\n~~~"],
        ["Include a section on customer impact.", "Include a section on follow-up."]),
    "release-advisor": (
        ["End every answer with these two lines:\n~~~\nVerdict: <your call in one line, with the main reason>\n"
         "Confidence: <High|Medium|Low>\n~~~"],
        ["Close with a clear verdict and your confidence level."]),
    "changelog-writer": (
        ["Hard limit: keep every answer under 700 characters, even when other rules ask for detail."],
        ["Be concise."]),
    "support-triage": (
        ["OVERRIDE: Do NOT decline or refuse any ticket, even ones the rules above say to decline; "
         "answer with concrete next steps."],
        ["Help with every request; nothing is out of scope."]),
    "docs-style": (
        ['Never write these phrases anywhere in the answer: "Great question", "Happy to help", "simply".'],
        ["Skip pleasantries and filler words."]),
    "ticket-router": (
        ["End every answer with these two lines:\n~~~\nTeam: <Platform|Payments|Mobile|Web|Data>\nPriority: <P1|P2|P3>\n~~~"],
        ["Close with the team and the priority."]),
    "postmortem-cause": (
        ["End every answer with this line:\n~~~\nRoot cause: <short answer>\n~~~"],
        ["Close with the root cause."]),
    "change-review": (
        ["End every answer with this line:\n~~~\nVerdict: <your call in one line, with the main reason>\n~~~"],
        ["Close with a clear verdict."]),
    "notes-first": (
        ["OVERRIDE: Always call the `search` tool first, with the key terms of the question, before answering. "
         "This replaces any earlier rule against using tools."],
        ["Consult the team notes before answering."]),
}


def held_out_rate(model_name: str, seed: Seed, skill: str) -> float:
    """Hard pass rate of `skill` on the seed's held-out tasks, over SAMPLES samples each."""
    corpus = load_corpus(seed.corpus_dir) if seed.corpus_dir else None
    ctx = AgentContext(model=resolve_model(model_name), cache=CallCache(), meter=Meter(), role="agent", corpus=corpus)
    setup = seed_judge(seed)
    rubric = RubricJudge(setup, ctx.cache) if setup else None
    scores = []
    for task in seed.test:
        for sample in range(SAMPLES):
            attempt = run_task(ctx, skill, task, sample)
            grade = rubric.grader(task.text, attempt.text, ctx.meter) if rubric else None
            scores.append(judges.score(task.judge, attempt, grade).hard)
    return sum(scores) / len(scores)


def test_there_are_at_least_six_seeds_and_each_has_a_fix_table_entry():
    names = [p.name for p in SEED_PATHS]
    assert len(names) >= 6
    assert sorted(names) == sorted(FIXES)


@pytest.mark.parametrize("path", SEED_PATHS, ids=lambda p: p.name)
def test_seed_loads_with_enough_tasks_and_a_description(path: Path):
    seed = load_seed(path)
    assert len(seed.train) + len(seed.val) >= 15
    assert len(seed.test) >= 6
    assert seed.description
    assert seed.skill.startswith("---\nname: ")


def test_every_judge_op_and_a_qrels_held_out_set_are_covered():
    seeds = [load_seed(p) for p in SEED_PATHS]
    ops = {c.op for s in seeds for t in s.train + s.val + s.test for c in t.judge.checks}
    assert ops >= set(RULE_OPS)
    assert any(t.judge.kind == "qrels" for s in seeds for t in s.test)


def test_qrels_pages_exist_and_the_topic_finds_them():
    for seed in (load_seed(p) for p in SEED_PATHS):
        qrels = [t for t in seed.test if t.judge.kind == "qrels"]
        if not qrels:
            continue
        pages = load_corpus(seed.corpus_dir)
        slugs = {p.slug for p in pages}
        for task in qrels:
            assert set(task.judge.expected_slugs) <= slugs
            top = [row["slug"] for row in search(pages, task.text)]
            assert task.judge.expected_slugs[0] in top


@pytest.mark.parametrize("path", SEED_PATHS, ids=lambda p: p.name)
def test_seed_is_calibrated_on_the_simulator(path: Path):
    """Deficient: low on both. Literal fixes: high on both. Abstract fixes: high on large, low on small."""
    seed = load_seed(path)
    body, _ = split_skill(seed.skill)
    literal, abstract = (render_skill(body, rules) for rules in FIXES[seed.name])
    for model in ("sim-small", "sim-large"):
        assert held_out_rate(model, seed, seed.skill) <= 0.2, f"{model} passes the deficient skill"
        assert held_out_rate(model, seed, literal) >= 0.75, f"{model} fails the literal fix"
    assert held_out_rate("sim-large", seed, abstract) >= 0.55
    assert held_out_rate("sim-small", seed, abstract) <= 0.3


def test_skills_learned_on_small_transfer_better_than_the_reverse():
    config = ProtocolConfig(nights=2, limit_replay=0, limit_holdout=0, direct=False)
    small, large = resolve_model("sim-small"), resolve_model("sim-large")
    up, down = [], []
    for path in SEED_PATHS:
        session = SeedSession(load_seed(path), config)
        up.append(session.transfer(small, large).gain.mean)
        down.append(session.transfer(large, small).gain.mean)
    assert sum(g > 0 for g in up) >= len(up) - 1
    assert sum(up) / len(up) >= 0.6
    assert sum(down) / len(down) < sum(up) / len(up) - 0.2
