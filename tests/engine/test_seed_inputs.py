"""Seed inputs are confined and bounded: the corpus stays inside the seed, files are UTF-8, sizes have limits."""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_skilltransfer.engine.seeds import load_seed
from pytest_skilltransfer.engine.seed_data import SeedError, SeedLimits
from pytest_skilltransfer.engine.tools import CorpusError, load_corpus

RULE = {"kind": "rule", "checks": [{"op": "contains", "arg": "X"}]}


def task(i: int, prefix: str = "bm", text: str | None = None) -> str:
    return json.dumps({"task_id": f"{prefix}-{i:03d}", "task": text or f"Task {i}", "judge": RULE})


def write_seed(root: Path, toml: str | None = None, pages: dict[str, str] | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "SKILL.md").write_text("# Skill\nDo it.\n")
    (root / "benchmark.jsonl").write_text("\n".join(task(i) for i in range(1, 11)) + "\n")
    (root / "held-out.jsonl").write_text("\n".join(task(i, "hd") for i in range(1, 4)) + "\n")
    if toml is not None:
        (root / "seed.toml").write_text(toml)
    for slug, text in (pages or {}).items():
        page = root / "brain" / f"{slug}.md"
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(text)
    return root


def problems(path: Path, limits: SeedLimits | None = None) -> list[str]:
    with pytest.raises(SeedError) as info:
        load_seed(path, limits)
    return [str(p) for p in info.value.problems]


@pytest.mark.parametrize("corpus", ["../../../outside", "../outside", "brain/../../outside"])
def test_a_corpus_outside_the_seed_is_refused(tmp_path: Path, corpus: str) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("# Payroll\nNot for the provider.\n")
    seed = write_seed(tmp_path / "a" / "b" / "seed", toml=f'corpus = "{corpus}"\n') if corpus.startswith("../../") \
        else write_seed(tmp_path / "seed", toml=f'corpus = "{corpus}"\n')
    found = problems(seed)
    assert len(found) == 1 and "seed.toml corpus" in found[0] and "outside the seed folder" in found[0]


def test_an_absolute_corpus_is_refused_without_crawling(tmp_path: Path) -> None:
    started = time.monotonic()
    found = problems(write_seed(tmp_path / "seed", toml='corpus = "/"\n'))
    assert time.monotonic() - started < 5.0  # crawling / would take minutes
    assert any("'/' is an absolute path" in p for p in found)


def test_symlinks_out_of_the_seed_are_refused_and_symlinks_inside_allowed(tmp_path: Path) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("# Outside\nsecret\n")
    seed = write_seed(tmp_path / "seed", pages={"inside": "# Inside\nfine\n"})
    (seed / "brain" / "leak.md").symlink_to(outside)
    (seed / "notes.md").write_text("# Notes\nshared\n")
    (seed / "brain" / "shared.md").symlink_to(seed / "notes.md")
    found = problems(seed)
    assert len(found) == 1 and "leak.md: is a symlink to" in found[0] and "outside the seed folder" in found[0]
    with pytest.raises(CorpusError, match="leak.md"):
        load_corpus(seed / "brain", seed)
    (seed / "brain" / "leak.md").unlink()
    loaded = load_seed(seed)
    assert sorted(p.slug for p in load_corpus(loaded.corpus_dir, seed)) == ["inside", "shared"]


def test_a_symlinked_corpus_folder_pointing_out_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "page.md").write_text("# Page\n")
    seed = write_seed(tmp_path / "seed")
    (seed / "brain").symlink_to(elsewhere, target_is_directory=True)
    assert any("outside the seed folder" in p for p in problems(seed))


def test_files_that_are_not_utf8_name_the_file_and_byte_offset(tmp_path: Path) -> None:
    seed = write_seed(tmp_path / "seed", toml='description = "d"\n', pages={"ok": "# Ok\n"})
    (seed / "SKILL.md").write_bytes(b"# Skill\nCaf\xe9 au lait\n")
    (seed / "held-out.jsonl").write_bytes((task(1, "hd") + "\n").encode() + b'{"task_id": "\xff"}\n')
    (seed / "seed.toml").write_bytes(b'description = "\x80"\n')
    (seed / "brain" / "bad.md").write_bytes(b"# Bad\n\n\xc3\x28\n")
    found = "\n".join(problems(seed))
    assert "SKILL.md: is not UTF-8: byte 0xe9 at byte offset 11 (line 2)" in found
    assert "held-out.jsonl: is not UTF-8: byte 0xff at byte offset" in found and "(line 2)" in found
    assert "seed.toml: is not UTF-8: byte 0x80 at byte offset 15 (line 1)" in found
    assert "bad.md: is not UTF-8: byte 0xc3 at byte offset 7 (line 3)" in found


def test_oversize_inputs_name_the_option_that_raises_the_limit(tmp_path: Path) -> None:
    seed = write_seed(tmp_path / "seed", pages={"a": "# A\n" + "x" * 600, "b": "# B\n" + "y" * 600})
    (seed / "SKILL.md").write_text("# Skill\n" + "z" * 2000)
    with (seed / "held-out.jsonl").open("a") as handle:
        handle.write(task(9, "hd", text="w" * 300) + "\n")
    found = problems(seed, SeedLimits(skill_bytes=1000, task_bytes=200, corpus_bytes=1000))
    assert len(found) == 3  # every problem at once
    text = "\n".join(found)
    assert "SKILL.md: the file is 2008 bytes, over the limit of 1000 bytes" in text and "--max-skill-bytes" in text
    assert "held-out.jsonl:4: task 'hd-009': the text is 300 bytes" in text and "--max-task-bytes" in text
    assert "over the limit of 1000 bytes: remove pages, or raise the limit with --max-corpus-bytes" in text
    assert load_seed(seed)  # the defaults are generous


def test_the_default_skill_limit_refuses_a_multi_megabyte_skill(tmp_path: Path) -> None:
    seed = write_seed(tmp_path / "seed")
    (seed / "SKILL.md").write_text("# Skill\n" + "Be thorough. " * 420_000)
    started = time.monotonic()
    assert any("over the limit of 1000000 bytes" in p for p in problems(seed))
    assert time.monotonic() - started < 5.0


def test_the_plugin_options_set_the_limits(pytester: pytest.Pytester) -> None:
    write_seed(pytester.path / "seeds" / "big")
    (pytester.path / "seeds" / "big" / "SKILL.md").write_text("# Skill\n" + "q" * 500)
    pytester.makeini("[pytest]\nskilltransfer_max_skill_bytes = 100\n")
    result = pytester.runpytest("seeds", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["*SKILL.md: the file is 508 bytes, over the limit of 100 bytes*--max-skill-bytes*"])
    assert result.ret != 0
    assert pytester.runpytest("seeds", "--max-skill-bytes=abc").ret == pytest.ExitCode.USAGE_ERROR


SEED_FILES = ("SKILL.md", "benchmark.jsonl", "held-out.jsonl", "seed.toml", "judge-calibration.jsonl")


@pytest.mark.parametrize("name", SEED_FILES)
def test_every_seed_file_linked_out_of_the_seed_is_refused_naming_it(tmp_path: Path, name: str) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("DATABASE_PASSWORD=hunter2-correct-horse\n")
    seed = write_seed(tmp_path / "seed")
    (seed / name).unlink(missing_ok=True)
    (seed / name).symlink_to(outside)
    found = problems(seed)
    assert any(p.startswith(f"{seed / name}: is a symlink to {outside}") and "outside the seed folder" in p
               for p in found), found


@pytest.mark.parametrize("name", SEED_FILES)
def test_a_seed_file_linked_to_proc_is_refused_and_nothing_is_read(tmp_path: Path, name: str) -> None:
    seed = write_seed(tmp_path / "seed")
    (seed / name).unlink(missing_ok=True)
    (seed / name).symlink_to("/proc/self/environ")
    found = problems(seed)
    assert any(p.startswith(f"{seed / name}: is a symlink to /proc/") and "under /proc" in p for p in found), found


@pytest.mark.parametrize("name", ["SKILL.md", "held-out.jsonl", "brain/page.md"])
def test_a_fifo_or_device_is_refused_without_blocking(tmp_path: Path, name: str) -> None:
    import os

    seed = write_seed(tmp_path / "seed", pages={"page": "# Page\n"})
    (seed / name).unlink()
    os.mkfifo(seed / name)
    started = time.monotonic()
    found = problems(seed)
    assert time.monotonic() - started < 5.0  # a FIFO read would block for ever
    assert any(p.startswith(f"{seed / name}: is a FIFO") for p in found), found
    (seed / name).unlink()
    (seed / name).symlink_to("/dev/zero")
    found = problems(seed)
    assert any(p.startswith(f"{seed / name}: is a symlink to /dev/zero") for p in found), found


def test_a_symlink_inside_the_seed_is_still_read(tmp_path: Path) -> None:
    seed = write_seed(tmp_path / "seed")
    (seed / "skill-source.md").write_text("# Shared skill\nDo it well.\n")
    (seed / "SKILL.md").unlink()
    (seed / "SKILL.md").symlink_to(seed / "skill-source.md")
    assert load_seed(seed).skill.startswith("# Shared skill")


def test_a_named_skill_may_live_in_the_repository_but_not_link_out_of_it(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "skills").mkdir()
    (repo / "skills" / "shared.md").write_text("# Shared\nDo it.\n")
    seed = write_seed(repo / "seeds" / "one", toml='skill = "../../skills/shared.md"\n')
    (seed / "SKILL.md").unlink()
    assert load_seed(seed).skill.startswith("# Shared")
    (repo / "skills" / "shared.md").unlink()
    (repo / "skills" / "shared.md").symlink_to("/proc/self/environ")
    found = problems(seed)
    assert len(found) == 1 and "outside the repository" in found[0], found


@pytest.mark.parametrize("link", ["the seed folder", "the seeds folder"])
def test_a_seed_folder_linked_out_of_the_repository_is_refused_naming_it(tmp_path: Path, link: str) -> None:
    repo, outside = tmp_path / "repo", write_seed(tmp_path / "elsewhere" / "one")
    (repo / ".git").mkdir(parents=True)
    (repo / "seeds").mkdir()
    write_seed(repo / "seeds" / "inside")
    (repo / "seeds" / "linked-in").symlink_to(repo / "seeds" / "inside", target_is_directory=True)
    if link == "the seed folder":
        seed = repo / "seeds" / "one"
        seed.symlink_to(outside, target_is_directory=True)
    else:
        (repo / "more").symlink_to(outside.parent, target_is_directory=True)
        seed = repo / "more" / "one"
    found = problems(seed)
    assert found == [f"{seed}: is a symlink to {outside}, outside the repository {repo}; a seed folder is read only "
                     "inside it (copy the seed in instead of linking it)"], found
    assert load_seed(repo / "seeds" / "linked-in").skill.startswith("# Skill")  # a link inside the repository is read


@pytest.mark.parametrize("pattern", ["(?:x{50000}){50000}", "(a{1000}){1000}", "x{1000000}"])
def test_a_regex_that_would_take_long_to_compile_is_refused_at_once(tmp_path: Path, pattern: str) -> None:
    seed = write_seed(tmp_path / "seed")
    check = {"kind": "rule", "checks": [{"op": "regex", "arg": pattern}]}
    with (seed / "held-out.jsonl").open("a") as handle:
        handle.write(json.dumps({"task_id": "hd-slow", "task": "Answer", "judge": check}) + "\n")
    started = time.monotonic()
    found = problems(seed)
    assert time.monotonic() - started < 2.0
    assert any(p.startswith(f"{seed / 'held-out.jsonl'}:4: task 'hd-slow': check 1: regex") and "unroll to about" in p
               for p in found), found


def test_ordinary_regexes_are_far_below_the_compile_bound() -> None:
    from pytest_skilltransfer.guards.regex_size import MAX_EXPANDED_SIZE, expanded_size

    for pattern in (r"^(\w+\s?)+[^\w\s]{2}Q$", r"\d{3}-\d{3}-\d{4}", r"(?i)^Owner: @\w+$", r"[a-z]{2,5}(?:, [a-z]+){0,9}"):
        assert expanded_size(pattern) < MAX_EXPANDED_SIZE // 100


def _outcome(read: Any) -> tuple[str, Any]:
    try:
        return "read", read()
    except OSError as exc:  # ConfinementError included: its words are the refusal a seed problem shows
        return type(exc).__name__, exc.strerror or str(exc)


KINDS = ("file", "empty", "link out", "link to /proc", "link to /dev/zero", "fifo", "folder", "missing",
         "dangling link", "link inside", "relative link inside", "link via ..")


def _make(seed: Path, outside: Path, name: str, kind: str) -> None:
    import os

    path = seed / name
    if kind == "file":
        path.write_text("# Skill\n" * 100)
    elif kind == "empty":
        path.write_text("")
    elif kind == "link out":
        path.symlink_to(outside)
    elif kind == "link to /proc":
        path.symlink_to("/proc/self/environ")
    elif kind == "link to /dev/zero":
        path.symlink_to("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    elif kind == "dangling link":
        path.symlink_to(seed / "nothing-here")
    elif kind in ("link inside", "relative link inside"):
        (seed / "sub").mkdir(exist_ok=True)
        (seed / "sub" / "source.md").write_text("# Shared\n")
        path.symlink_to(seed / "sub" / "source.md" if kind == "link inside" else Path("sub") / "source.md")
    elif kind == "link via ..":
        path.symlink_to(Path("..") / outside.name)


@pytest.mark.parametrize("through", ["the folder", "a symlink to the folder"])
def test_a_seed_folder_read_through_its_descriptor_reads_and_refuses_as_each_file_alone(
        tmp_path: Path, through: str) -> None:
    """The seed loader resolves the seed folder once and opens its files relative to it: every outcome
    (the bytes, or the refusal and its words) is the one `read_confined` gives for the file on its own."""
    from pytest_skilltransfer.guards.confined import ConfinedFolder, read_confined

    outside = tmp_path / "outside.txt"
    outside.write_text("DATABASE_PASSWORD=hunter2\n")
    real = tmp_path / "seed"
    real.mkdir()
    for kind in KINDS:
        if kind != "missing":
            _make(real, outside, kind.replace(" ", "-").replace("/", "") + ".md", kind)
    seed = real
    if through != "the folder":
        seed = tmp_path / "linked-seed"
        seed.symlink_to(real, target_is_directory=True)
    outcomes = {}
    with ConfinedFolder(seed) as folder:
        for kind in KINDS:
            path = seed / (kind.replace(" ", "-").replace("/", "") + ".md")
            for limit in (None, 10):
                alone = _outcome(lambda: read_confined(path, seed, max_bytes=limit))
                assert _outcome(lambda: folder.read(path, limit)) == alone, kind
            assert folder.present(path) == (path.is_symlink() or path.exists()), kind
            outcomes[kind] = _outcome(lambda: folder.read(path))
    assert outcomes["file"] == ("read", b"# Skill\n" * 100) and outcomes["missing"][0] == "FileNotFoundError"
    assert "outside the seed folder" in outcomes["link out"][1] and "under /proc" in outcomes["link to /proc"][1]
    assert outcomes["fifo"][1].startswith("is a FIFO") and outcomes["folder"][1].startswith("is a folder")


def test_a_seed_folder_under_a_system_folder_is_read_as_each_file_alone(tmp_path: Path) -> None:
    from pytest_skilltransfer.guards.confined import ConfinedFolder, read_confined

    folder_path = Path("/dev/shm")
    if not folder_path.is_dir():
        pytest.skip("no /dev/shm here")
    seed = Path(tempfile.mkdtemp(dir=folder_path))
    try:
        (seed / "SKILL.md").write_text("# Skill\n")
        with ConfinedFolder(seed) as folder:
            refusal = _outcome(lambda: folder.read(seed / "SKILL.md"))
        assert refusal == _outcome(lambda: read_confined(seed / "SKILL.md", seed)) and "under /dev" in refusal[1]
    finally:
        shutil.rmtree(seed)
