"""The seeds shipped in seeds/: they load, cover every judge op, and are calibrated on the simulator."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest
from shared_runs import computed_once

from pytest_skilltransfer.engine import judges
from pytest_skilltransfer.engine.agent import AgentContext, run_task
from pytest_skilltransfer.engine.judges import RULE_OPS, Attempt
from pytest_skilltransfer.engine.ledger import CallCache, Meter
from pytest_skilltransfer.engine.protocol import SeedSession, seed_judge
from pytest_skilltransfer.engine.results import ProtocolConfig
from pytest_skilltransfer.engine.rubric import RubricJudge
from pytest_skilltransfer.engine.seeds import discover_seeds, load_seed
from pytest_skilltransfer.engine.seed_data import Seed
from pytest_skilltransfer.engine.tools import load_corpus, search
from pytest_skilltransfer.guards.edits import render_skill, split_skill
from pytest_skilltransfer.models.registry import resolve_model

SEEDS_DIR = Path(__file__).resolve().parents[2] / "seeds"
SEED_PATHS = discover_seeds(SEEDS_DIR)
SAMPLES = 5

# Hand-written fixes per seed: (literal rules, abstract rules). Literal rules name exact headings,
# label lines, limits, phrases and tools; abstract rules say the same in general words.
FIXES: dict[str, tuple[list[str], list[str]]] = {
    "incident-summary": (
        ["Every answer must end with these parts, copied exactly:\n~~~\n## Customer Impact\n- <one specific point>\n"
         "## Follow-up\n- <one specific action with an owner>\n~~~",
         "Hard limit: keep every answer under 800 characters."],
        ["Include a section on customer impact, as bullet points.", "Include a section on follow-up, as bullet points.",
         "Be concise."]),
    "release-advisor": (
        ["End every answer with these two lines:\n~~~\nVerdict: <your call in one line, with the main reason>\n"
         "Confidence: <High|Medium|Low>\n~~~", "Hard limit: keep every answer under 800 characters."],
        ["Close with a clear verdict and your confidence level (High, Medium or Low).", "Be concise."]),
    "alert-intake": (
        ["Reply with ONLY this JSON object, no prose and no code fence:\n~~~\n{\n  \"service\": \"<the service>\",\n"
         "  \"severity\": \"<sev1|sev2|sev3>\",\n  \"page_oncall\": <true|false>\n}\n~~~"],
        ["Reply with only a JSON object with the keys service, severity (one of sev1, sev2 or sev3) "
         "and page_oncall (true or false)."]),
    "standup-digest": (
        ["Hard limit: keep every answer under 700 characters."],
        ["Be concise."]),
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
    "review-tagger": (
        ["End every answer with these two lines:\n~~~\nSentiment: <Positive|Negative|Mixed>\n"
         "Topic: <Price|Quality|Delivery|Support>\n~~~", "Hard limit: keep every answer under 500 characters."],
        ["Close with your sentiment (Positive, Negative or Mixed).",
         "End by stating your topic (Price, Quality, Delivery or Support).", "Be concise."]),
    "review-tagger-context": (  # review-tagger's skill and tasks after a fixed worked example the simulator ignores
        ["End every answer with these two lines:\n~~~\nSentiment: <Positive|Negative|Mixed>\n"
         "Topic: <Price|Quality|Delivery|Support>\n~~~", "Hard limit: keep every answer under 500 characters."],
        ["Close with your sentiment (Positive, Negative or Mixed).",
         "End by stating your topic (Price, Quality, Delivery or Support).", "Be concise."]),
    "review-tagger-other-example": (  # review-tagger's skill and tasks after a fixed movie-review example
        ["End every answer with these two lines:\n~~~\nSentiment: <Positive|Negative|Mixed>\n"
         "Topic: <Price|Quality|Delivery|Support>\n~~~", "Hard limit: keep every answer under 500 characters."],
        ["Close with your sentiment (Positive, Negative or Mixed).",
         "End by stating your topic (Price, Quality, Delivery or Support).", "Be concise."]),
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


# Seeds whose learned rule hurts one model: (the rule, the model it hurts, the model it helps or leaves alone).
# Their deficient skill already passes the held-out checks on the model it hurts.
HARMS: dict[str, tuple[str, str, str]] = {
    "status-report": ("Hard limit: keep every answer under 900 characters, even when other rules ask for detail.",
                      "sim-large", "sim-small"),
    "howto-answers": ("Keep answers short and to the point.", "sim-small", "sim-large"),
}


def test_there_are_at_least_six_seeds_and_each_has_a_fix_table_entry():
    names = [p.name for p in SEED_PATHS]
    assert len(names) >= 6
    assert sorted(names) == sorted([*FIXES, *HARMS])


@pytest.mark.parametrize("path", SEED_PATHS, ids=lambda p: p.name)
def test_seed_loads_with_enough_tasks_and_a_description(path: Path):
    seed = load_seed(path)
    assert len(seed.train) + len(seed.val) >= 24
    assert len(seed.test) >= 24
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


# Seeds whose deficient skill already scores above 0 on a model, with the expected band per model.
ALREADY_PASSING: dict[str, dict[str, tuple[float, float]]] = {
    "support-triage": {"sim-small": (0.2, 0.7), "sim-large": (0.2, 0.7)},
    "standup-digest": {"sim-small": (0.9, 1.0), "sim-large": (0.1, 0.6)},
}


# Seeds whose held-out checks also ask for each review's own label (`^Sentiment: Negative$`) beside the format: the
# simulator never knows a value the request does not show, so a fix gives it the format, and labels only by chance.
LABELLED = {"review-tagger", "review-tagger-context", "review-tagger-other-example"}
LABEL_CHECK = re.compile(r"\^(Sentiment|Topic): \(?[A-Z][a-z]+(\|[A-Z][a-z]+)?\)?\$")  # one label, or two alike


def format_only(seed: Seed) -> Seed:
    """The seed with each held-out task's own label checks left out (its format checks kept)."""
    def plain(task):
        checks = tuple(c for c in task.judge.checks if not (c.op == "regex" and LABEL_CHECK.fullmatch(str(c.arg))))
        return replace(task, judge=replace(task.judge, checks=checks))

    return replace(seed, test=tuple(plain(task) for task in seed.test))


@pytest.mark.parametrize("name", sorted(LABELLED))
def test_a_labelled_seed_checks_each_review_and_the_simulator_cannot_guess_it(name: str):
    """Every held-out task names its own label; a literal fix gives the simulator the format (>= 0.75 on the format
    checks) but not the labels (<= 0.35 with them), and no single answer passes more than 5 of the 24 tasks."""
    seed = load_seed(SEEDS_DIR / name)
    assert all(len(t.judge.checks) - len(f.judge.checks) == 2 for t, f in zip(seed.test, format_only(seed).test))
    body, _ = split_skill(seed.skill)
    literal = render_skill(body, FIXES[name][0])
    for model in ("sim-small", "sim-large"):
        assert held_out_rate(model, format_only(seed), literal) >= 0.75, f"{model} fails the literal fix's format"
        assert held_out_rate(model, seed, literal) <= 0.35, f"{model} guesses the labels"
    labels = {(s, t) for s in ("Positive", "Negative", "Mixed") for t in ("Price", "Quality", "Delivery", "Support")}
    passes = [sum(judges.score(task.judge, Attempt(f"Tagged.\nSentiment: {s}\nTopic: {t}")).hard for task in seed.test)
              for s, t in labels]
    assert max(passes) == 5  # Negative / Delivery: the most common pair of labels


@pytest.mark.parametrize("path", [p for p in SEED_PATHS if p.name not in HARMS and p.name not in LABELLED],
                         ids=lambda p: p.name)
def test_seed_is_calibrated_on_the_simulator(path: Path):
    """Deficient: low (or in its declared band). Literal fixes: high on both. Abstract: high on large, low on small."""
    seed = load_seed(path)
    body, _ = split_skill(seed.skill)
    literal, abstract = (render_skill(body, rules) for rules in FIXES[seed.name])
    bands = ALREADY_PASSING.get(seed.name, {})
    for model in ("sim-small", "sim-large"):
        low, high = bands.get(model, (0.0, 0.2))
        assert low <= held_out_rate(model, seed, seed.skill) <= high, f"{model} on the deficient skill"
        assert held_out_rate(model, seed, literal) >= 0.75, f"{model} fails the literal fix"
    assert held_out_rate("sim-large", seed, abstract) >= 0.55
    # sim-small over-reads a lone "Be concise." as three sentences, which can fit a pure length budget by accident
    if "sim-small" not in bands and FIXES[seed.name][1] != ["Be concise."]:
        assert held_out_rate("sim-small", seed, abstract) <= 0.3


@pytest.mark.parametrize("name", sorted(HARMS))
def test_a_harm_seed_passes_at_baseline_and_its_rule_hurts_one_model_only(name: str):
    """The model the rule hurts passes the deficient skill; the rule takes it down by at least 0.4, and not the other."""
    seed = load_seed(SEEDS_DIR / name)
    rule, hurt, other = HARMS[name]
    body, _ = split_skill(seed.skill)
    learned = render_skill(body, [rule])
    assert held_out_rate(hurt, seed, seed.skill) >= 0.8
    assert held_out_rate(hurt, seed, learned) <= held_out_rate(hurt, seed, seed.skill) - 0.4
    assert held_out_rate(other, seed, learned) >= held_out_rate(other, seed, seed.skill) - 0.1


# What each seed is there to show, sim-small -> sim-large with the default protocol (its seed.toml says why).
KINDS = {
    "alert-intake": "full", "changelog-writer": "full", "docs-style": "full", "incident-summary": "partial",
    "notes-first": "full", "release-advisor": "partial", "standup-digest": "none", "support-triage": "full",
    "ticket-router": "full", "postmortem-cause": "full", "change-review": "full",
    # the labelled seeds: "full" as the direct reference gets no further (0.08 each: the simulator guesses labels)
    "review-tagger": "full", "review-tagger-context": "full", "review-tagger-other-example": "full",
    "status-report": "harm", "howto-answers": "none",
}
# The direction in which a harm seed's learned skill hurts the target (its seed.toml says why).
HURTS_IN = {"status-report": ("sim-small", "sim-large"), "howto-answers": ("sim-large", "sim-small")}


def default_run(seed: Seed, source: str, target: str):
    """The default protocol with every held-out task scored (the fixed design)."""
    session = SeedSession(seed, ProtocolConfig(design="fixed"))
    session.splits["test"] = seed.test
    return session.transfer(resolve_model(source), resolve_model(target))


@pytest.fixture(scope="module")
def both_directions(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple]:
    """Every seed both ways, once per test run (`computed_once`: the module's tests may run on several workers)."""
    def compute() -> dict[str, tuple]:
        seeds = [load_seed(p) for p in SEED_PATHS]
        return {s.name: (default_run(s, "sim-small", "sim-large"), default_run(s, "sim-large", "sim-small"))
                for s in seeds}
    return computed_once(tmp_path_factory, "both-directions", compute)


def _kind(result) -> str:
    base, gain, headroom = result.baseline.hard.mean, result.gain.mean, result.direct.hard.mean - result.baseline.hard.mean
    if result.gain.high < 0:
        return "harm"
    if abs(gain) <= 0.05 and headroom >= 0.3:
        return "none"
    if gain > 0 and gain >= headroom - 0.1:
        return "full"
    return "partial" if 0 < gain < headroom else f"other (gain {gain:+.2f}, headroom {headroom:+.2f}, baseline {base:.2f})"


def test_every_seed_shows_the_kind_of_transfer_it_declares(both_directions):
    assert sorted(both_directions) == sorted(KINDS)
    found = {name: _kind(up) for name, (up, _) in both_directions.items()}
    assert found == KINDS


def test_harm_seeds_hurt_the_target_in_their_direction_with_the_interval_below_zero(both_directions):
    for name, (source, target) in HURTS_IN.items():
        up, down = both_directions[name]
        hurt = up if source == "sim-small" else down
        assert (hurt.source, hurt.target) == (source, target)
        assert hurt.gain.high < 0 and hurt.gain.mean <= -0.4, f"{name} {source}->{target}: {hurt.gain}"
        assert hurt.baseline.hard.mean >= 0.8
    assert sum(_kind(r) == "harm" for pair in both_directions.values() for r in pair) == len(HURTS_IN), \
        "no other seed shows harm in either direction"


def test_the_seed_mix_covers_partial_failed_already_passing_and_json(both_directions):
    ups = [up for up, _ in both_directions.values()]
    assert sum(0 < r.gain.mean < r.direct.hard.mean - r.baseline.hard.mean for r in ups) >= 2
    assert any(_kind(r) == "none" for r in ups)
    assert any(r.baseline.hard.mean > 0 for r in ups)
    assert any(t.judge.kind == "rule" and any('"' in str(c.arg) and "{" in str(c.arg) for c in t.judge.checks)
               for t in load_seed(SEEDS_DIR / "alert-intake").test)
    assert all(len(r.baseline.tasks) >= 24 for r in ups)


def test_skills_learned_on_small_transfer_better_than_the_reverse(both_directions):
    up = [u.gain.mean for u, _ in both_directions.values()]
    down = [d.gain.mean for _, d in both_directions.values()]
    assert sum(down) / len(down) < sum(up) / len(up) - 0.15
