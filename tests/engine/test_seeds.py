"""Seed loading: every validation error (reported together, with file and line) and the split."""

import json
from pathlib import Path

import pytest

from pytest_skilltransfer.engine.seeds import discover_seeds, load_seed
from pytest_skilltransfer.engine.seed_data import SeedError, SplitSettings, Task, split_train_val
from pytest_skilltransfer.engine.judges import Judge, Check

GBRAIN = Path(__file__).resolve().parents[3] / "shared" / "external" / "gbrain-skillopt-v1"
RULE = {"kind": "rule", "checks": [{"op": "contains", "arg": "X"}]}


def task(i, judge=RULE, prefix="bm"):
    return json.dumps({"task_id": f"{prefix}-{i:03d}", "task": f"Task {i}", "judge": judge})


def write_seed(root: Path, train=None, test=None, skill="# Skill\nDo it.\n", toml=None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    if skill is not None:
        (root / "SKILL.md").write_text(skill)
    (root / "benchmark.jsonl").write_text("\n".join(train if train is not None else [task(i) for i in range(1, 11)]) + "\n")
    (root / "held-out.jsonl").write_text("\n".join(test if test is not None else [task(i, prefix="hd") for i in range(1, 4)]) + "\n")
    if toml is not None:
        (root / "seed.toml").write_text(toml)
    return root


def problems(path):
    with pytest.raises(SeedError) as info:
        load_seed(path)
    return [str(p) for p in info.value.problems]


def test_valid_seed_loads_with_disjoint_splits(tmp_path):
    seed = load_seed(write_seed(tmp_path / "good", toml='description = "d"\n[thresholds]\nmin_gain = 0.1\n'))
    ids = [t.id for t in seed.train] + [t.id for t in seed.val]
    assert sorted(ids) == [f"bm-{i:03d}" for i in range(1, 11)]
    assert seed.train and seed.val and len(seed.test) == 3
    assert not {t.id for t in seed.train} & {t.id for t in seed.val}
    assert seed.thresholds.min_gain == 0.1 and seed.description == "d"
    assert seed.test[0].origin.endswith("held-out.jsonl:1")


def test_all_problems_reported_at_once_with_file_and_line(tmp_path):
    lines = [
        task(1),
        "{not json",
        json.dumps({"task_id": "bm-003", "task": "t"}),
        task(1),
        json.dumps({"task_id": "bm-005", "task": "t", "judge": {"kind": "llm"}}),
        json.dumps({"task_id": "bm-006", "task": "t", "judge": {"kind": "rule", "checks": [{"op": "contain", "arg": "x"}]}}),
        json.dumps({"task_id": "bm-007", "task": "t", "judge": {"kind": "rule", "checks": [{"op": "regex", "arg": "([a-"}]}}),
        json.dumps({"task_id": "bm-008", "task": "t", "judge": {"kind": "rule", "checks": [{"op": "contains", "arg": ""}]}}),
        json.dumps({"task_id": "bm-009", "task": "t", "judge": {"kind": "rule", "checks": [{"op": "max_chars", "arg": "900"}]}}),
        json.dumps({"task_id": "bm-010", "task": "t", "judge": {"kind": "rule", "checks": [{"op": "min_chars", "arg": -1}]}}),
        json.dumps({"task_id": "bm-011", "task": "t", "judge": {"kind": "rule", "checks": []}}),
        json.dumps({"task_id": "bm-012", "task": "t", "judge": {"kind": "qrels", "expected_slugs": [], "k": 0}}),
    ]
    root = write_seed(tmp_path / "bad", train=lines, skill=None)
    found = problems(root)
    text = "\n".join(found)
    bench = str(root / "benchmark.jsonl")
    assert f"{root / 'SKILL.md'}: missing" in text
    assert f"{bench}:2: malformed JSON" in text
    assert f"{bench}:3: missing field(s): judge" in text
    assert f"{bench}:4: duplicate task_id 'bm-001' (first at line 1)" in text
    assert f"{bench}:5: task 'bm-005': unknown judge kind 'llm'" in text
    assert "unknown op 'contain'" in text
    assert "does not compile" in text
    assert "contains needs a non-empty string" in text
    assert "max_chars needs a non-negative integer, got '900'" in text
    assert "min_chars needs a non-negative integer, got -1" in text
    assert f"{bench}:11: task 'bm-011': rule judge needs 'checks'" in text
    assert "expected_slugs" in text and "'k' must be a positive integer" in text
    assert len(found) == 13


def test_seed_without_test_tasks_is_an_error(tmp_path):
    assert any("holds no tasks" in p for p in problems(write_seed(tmp_path / "s", test=[])))


def test_missing_heldout_file(tmp_path):
    root = write_seed(tmp_path / "s")
    (root / "held-out.jsonl").unlink()
    assert any("held-out.jsonl: missing" in p for p in problems(root))


def test_empty_split_is_an_error(tmp_path):
    found = problems(write_seed(tmp_path / "s", train=[task(1)]))
    assert any("the split left train=" in p for p in found)


def test_bad_seed_toml(tmp_path):
    found = problems(write_seed(tmp_path / "s", toml='colour = "red"\n[thresholds]\nmin_gian = 1\nmin_score = "high"\n[split]\nval_fraction = 1.5\n'))
    text = "\n".join(found)
    assert "unknown key 'colour'" in text and "unknown key 'min_gian'" in text
    assert "'min_score' must be a number" in text and "val_fraction must be between 0 and 1" in text


def test_a_seed_sets_the_agent_reply_limit(tmp_path):
    assert load_seed(write_seed(tmp_path / "default")).max_tokens == 512
    assert load_seed(write_seed(tmp_path / "short", toml="max_tokens = 128\n")).max_tokens == 128


@pytest.mark.parametrize("value", ["8", "100000", "true", '"256"', "256.0"])
def test_a_bad_reply_limit_names_the_file_and_the_range(tmp_path, value):
    found = problems(write_seed(tmp_path / "s", toml=f"max_tokens = {value}\n"))
    assert len(found) == 1 and found[0].startswith(str(tmp_path / "s" / "seed.toml max_tokens")), found
    assert "must be an integer from 16 to 8192" in found[0], found


def test_invalid_toml_names_the_file(tmp_path):
    found = problems(write_seed(tmp_path / "s", toml="[thresholds\n"))
    assert found[0].startswith(str(tmp_path / "s" / "seed.toml")) and "invalid TOML" in found[0]


def test_split_is_deterministic_and_follows_fraction():
    tasks = [Task(f"bm-{i:03d}", "t", Judge("rule", (Check("contains", "x"),))) for i in range(200)]
    train, val = split_train_val(tasks, SplitSettings(0.34, 42))
    _, reversed_val = split_train_val(list(reversed(tasks)), SplitSettings(0.34, 42))
    assert {t.id for t in reversed_val} == {t.id for t in val}
    assert 0.25 < len(val) / 200 < 0.43
    other_train, other_val = split_train_val(tasks, SplitSettings(0.34, 7))
    assert {t.id for t in val} != {t.id for t in other_val}
    again = split_train_val(tasks, SplitSettings(0.34, 42))
    assert [t.id for t in again[1]] == [t.id for t in val]


def test_split_never_leaves_val_empty():
    tasks = [Task(f"t{i}", "t", Judge("rule", (Check("contains", "x"),))) for i in range(2)]
    train, val = split_train_val(tasks, SplitSettings(0.01, 42))
    assert len(train) == 1 and len(val) == 1


def test_discovery_skips_private_and_sorts(tmp_path):
    write_seed(tmp_path / "b-seed")
    write_seed(tmp_path / "a-seed")
    write_seed(tmp_path / "_old")
    (tmp_path / "notes").mkdir()
    assert [p.name for p in discover_seeds(tmp_path)] == ["a-seed", "b-seed"]
    assert discover_seeds(tmp_path / "a-seed") == [tmp_path / "a-seed"]


@pytest.mark.skipif(not GBRAIN.is_dir(), reason=f"gbrain skillopt-v1 data not present at {GBRAIN}")
def test_gbrain_seeds_load_as_they_are():
    seeds = [load_seed(p) for p in discover_seeds(GBRAIN)]
    assert sorted(s.name for s in seeds) == ["seed-missing-structure", "seed-no-brain-first", "seed-no-verdict", "seed-verbose"]
    brain = next(s for s in seeds if s.name == "seed-no-brain-first")
    assert brain.corpus_dir is not None and brain.test[0].judge.kind == "qrels"
    assert all(len(s.train) + len(s.val) == 15 and len(s.test) == 6 for s in seeds)


def test_seed_pairs_parse_and_bad_ones_are_named(tmp_path):
    seed = load_seed(write_seed(tmp_path / "ok", toml='pairs = ["sim-small:sim-large", "openai:m@http://127.0.0.1:1/v1->sim-large"]\n'))
    assert seed.pairs == (("sim-small", "sim-large"), ("openai:m@http://127.0.0.1:1/v1", "sim-large"))
    found = problems(write_seed(tmp_path / "bad", toml='pairs = ["sim-small", 3]\n'))
    assert [p.split(": ", 1)[1] for p in found] == ["expected SRC:TGT or SRC->TGT, got 'sim-small'",
                                                    "expected SRC:TGT or SRC->TGT, got 3"]


def test_a_regex_javascript_rejects_loads_with_a_portability_warning_naming_file_and_line(tmp_path):
    from pytest_skilltransfer.engine.seed_data import SeedPortabilityWarning

    seed = tmp_path / "portable"
    seed.mkdir()
    (seed / "SKILL.md").write_text("# Skill\n\nDo the task.\n", encoding="utf-8")
    line = json.dumps({"task_id": "t1", "task": "Do it.", "judge": {"kind": "rule", "checks": [{"op": "regex", "arg": "(?m)^ok"}]}})
    ok = json.dumps({"task_id": "t2", "task": "Do it again.", "judge": {"kind": "rule", "checks": [{"op": "regex", "arg": "^ok$"}]}})
    (seed / "benchmark.jsonl").write_text(f"{ok}\n{line}\n" + json.dumps({"task_id": "t3", "task": "Once more.", "judge": {"kind": "rule", "checks": [{"op": "contains", "arg": "x"}]}}) + "\n", encoding="utf-8")
    (seed / "held-out.jsonl").write_text(ok + "\n", encoding="utf-8")
    with pytest.warns(SeedPortabilityWarning) as caught:
        loaded = load_seed(seed)
    assert len(caught) == 1
    message = str(caught[0].message)
    assert f"{seed / 'benchmark.jsonl'}:2" in message and "(?m)^ok" in message and "JavaScript rejects" in message
    assert len(loaded.train) + len(loaded.val) == 3


def test_project_seeds_are_portable_to_javascript():
    import warnings

    from pytest_skilltransfer.engine.seeds import discover_seeds

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for path in discover_seeds(Path(__file__).resolve().parents[2] / "seeds"):
            load_seed(path)


def test_tasks_that_repeat_a_judge_share_it_and_every_line_still_reports_its_own_problems(tmp_path):
    """A file's repeated judge is parsed once (the frozen Judge is shared); a repeated bad judge is an error on
    each of its lines, and a repeated regex portability problem warns on each of its lines."""
    from pytest_skilltransfer.engine.seed_data import SeedPortabilityWarning

    shared = {"kind": "rule", "checks": [{"op": "min_chars", "arg": 20}, {"op": "no_refusal"}]}
    lines = [{"task_id": f"t{i}", "task": f"Task {i}.", "judge": shared} for i in range(4)]
    seed = tmp_path / "shared"
    seed.mkdir()
    (seed / "SKILL.md").write_text("# Skill\n\nDo the task.\n", encoding="utf-8")
    (seed / "benchmark.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    (seed / "held-out.jsonl").write_text(json.dumps({**lines[0], "task_id": "h1"}) + "\n", encoding="utf-8")
    loaded = load_seed(seed)
    judges = {id(t.judge) for t in (*loaded.train, *loaded.val)}
    assert len(judges) == 1 and loaded.train[0].judge == Judge("rule", (Check("min_chars", 20), Check("no_refusal")))

    bad = {"kind": "rule", "checks": [{"op": "min_chars", "arg": -1}]}
    (seed / "benchmark.jsonl").write_text("".join(json.dumps({**line, "judge": bad}) + "\n" for line in lines[:2]),
                                          encoding="utf-8")
    with pytest.raises(SeedError) as info:
        load_seed(seed)
    assert f"{seed / 'benchmark.jsonl'}:1" in str(info.value) and f"{seed / 'benchmark.jsonl'}:2" in str(info.value)

    unportable = {"kind": "rule", "checks": [{"op": "regex", "arg": "(?m)^ok"}]}
    (seed / "benchmark.jsonl").write_text("".join(json.dumps({**line, "judge": unportable}) + "\n" for line in lines[:2]),
                                          encoding="utf-8")
    with pytest.warns(SeedPortabilityWarning) as caught:
        load_seed(seed)
    assert sorted(str(w.message).split(": ")[0] for w in caught) == [f"{seed / 'benchmark.jsonl'}:{n}" for n in (1, 2)]


def test_a_split_key_that_is_not_text_names_the_file(tmp_path):
    found = problems(write_seed(tmp_path / "s", toml="[split]\nkey = 3\n"))
    assert found == [f"{tmp_path / 's' / 'seed.toml'} [split]: key must be a string, got 3"], found
