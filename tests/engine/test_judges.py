"""Every judge op, its edge cases, and the scoring of rule and qrels judges."""

import pytest

from pytest_skilltransfer.engine.judges import Attempt, Check, Judge, check_passes, describe_check, ndcg_at_k, score


def passes(op, arg, text="", tools=()):
    return check_passes(Check(op, arg), Attempt(text=text, tools_called=tuple(tools)))


@pytest.mark.parametrize(
    "text, ok",
    [
        ("# Brief\n\n## Key Risks\n- a", True),
        ("## key risks", True),
        ("###### Key Risks  ", True),
        ("## Key Risks:", False),
        ("## Key Risks and Mitigations", False),
        ("Key Risks\n---", False),
        ("text ## Key Risks", False),
    ],
)
def test_section_present_needs_a_whole_heading(text, ok):
    assert passes("section_present", "Key Risks", text) is ok


def test_section_present_ignores_leading_hashes_in_arg():
    assert passes("section_present", "## Key Risks", "## Key Risks")


def test_section_contains_matches_part_of_any_heading():
    assert passes("section_contains", "risk", "## Top Risks and Mitigations")
    assert not passes("section_contains", "risk", "Risks are everywhere, but no heading")


def test_regex_is_multiline_and_case_sensitive():
    assert passes("regex", r"^Confidence: (High|Low)$", "intro\nConfidence: High\n")
    assert not passes("regex", r"^Confidence: (High|Low)$", "intro\nconfidence: high\n")
    assert passes("regex", r"(?i)^confidence", "CONFIDENCE: x")


def test_contains_is_case_sensitive_and_not_contains_is_not():
    assert passes("contains", "Owner:", "Owner: @infra")
    assert not passes("contains", "Owner:", "owner: @infra")
    assert not passes("not_contains", "great question", "Great Question! Here is...")
    assert passes("not_contains", "great question", "Here is the answer.")


def test_char_bounds_are_inclusive():
    assert passes("max_chars", 5, "12345")
    assert not passes("max_chars", 5, "123456")
    assert passes("min_chars", 5, "12345")
    assert not passes("min_chars", 5, "1234")


@pytest.mark.parametrize(
    "text, ok",
    [
        ("", False),
        ("   ", False),
        ("I can't help with that request.", False),
        ("**I'm sorry, but** that is out of scope.", False),
        ("I\u2019m unable to assist.", False),
        ("Sure. Restart the worker, then check the queue.", True),
        ("The answer: I cannot stress enough how useful this is.", True),
    ],
)
def test_no_refusal(text, ok):
    assert passes("no_refusal", None, text) is ok


def test_tool_called_counts_only_real_calls():
    assert passes("tool_called", "search", "answer", tools=["search"])
    assert not passes("tool_called", "search", "TOOL_CALL: search\nI searched the notes.")


def test_unknown_op_is_refused_not_passed():
    with pytest.raises(ValueError, match="unknown judge op 'contain'"):
        passes("contain", "x", "x")


def test_rule_score_hard_all_and_soft_fraction():
    judge = Judge("rule", (Check("contains", "A"), Check("contains", "B"), Check("max_chars", 3)))
    verdict = score(judge, Attempt(text="A C"))
    assert (verdict.hard, verdict.soft, verdict.failed) == (0.0, 2 / 3, ("contains=B",))
    assert score(judge, Attempt(text="AB")).hard == 1.0


def test_qrels_ndcg_and_hard():
    judge = Judge("qrels", expected_slugs=("topics/x",), k=5)
    first = score(judge, Attempt(text="", retrieved_slugs=("topics/x", "topics/y")))
    second = score(judge, Attempt(text="", retrieved_slugs=("topics/y", "topics/x")))
    missing = score(judge, Attempt(text="", retrieved_slugs=tuple(f"t/{i}" for i in range(5)) + ("topics/x",)))
    assert (first.hard, first.soft) == (1.0, 1.0)
    assert second.hard == 1.0 and second.soft == pytest.approx(1 / 1.5849625, rel=1e-6)
    assert (missing.hard, missing.soft) == (0.0, 0.0)
    assert score(judge, Attempt(text="")).soft == 0.0


def test_ndcg_with_several_relevant():
    assert ndcg_at_k(("a", "b"), ("a", "b"), 5) == pytest.approx(1.0)
    assert ndcg_at_k(("c", "a"), ("a", "b"), 1) == 0.0


def test_descriptions_name_the_argument():
    assert '"Key Risks"' in describe_check(Check("section_present", "Key Risks"))
    assert "900" in describe_check(Check("max_chars", 900))


def test_a_regex_past_its_time_limit_fails_that_check_with_file_line_and_pattern_and_scoring_goes_on(monkeypatch):
    from pytest_skilltransfer.engine import judges

    monkeypatch.setattr(judges, "REGEX_TIMEOUT_SECONDS", 0.05)
    judge = Judge("rule", (Check("regex", "(a|aa)+$"), Check("contains", "a")))
    with pytest.warns(judges.RegexTimeoutWarning) as caught:
        verdict = score(judge, Attempt("a" * 60 + "!"), origin="seeds/x/held-out.jsonl:7")
    assert verdict.hard == 0.0 and verdict.soft == 0.5
    assert verdict.failed == ("regex=(a|aa)+$ (timed out after 0.05 s)",)
    message = str(caught[0].message)
    assert "seeds/x/held-out.jsonl:7" in message and "'(a|aa)+$'" in message and "run goes on" in message


def test_regex_digits_and_words_are_ascii_as_in_javascript():
    assert not passes("regex", r"^\d+$", "\u0663\u0664")
    assert passes("regex", r"^\d+$", "34")
