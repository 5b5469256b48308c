"""`python -m pytest_skilltransfer init`: a seed that loads, runs green after --snapshot-update, and a
`skill = "<path>"` key for a skill kept elsewhere in the repository."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_skilltransfer.commands.scaffold import InitError, init_seed
from pytest_skilltransfer.engine.seeds import load_seed
from pytest_skilltransfer.engine.seed_data import SeedError

PAIR = ("--source", "sim-small", "--target", "sim-large")


def repository(root: Path) -> Path:
    (root / ".git").mkdir(parents=True)
    return root


def test_init_writes_a_seed_that_runs_green_after_snapshot_update(pytester: pytest.Pytester) -> None:
    repository(pytester.path)
    proc = subprocess.run([sys.executable, "-m", "pytest_skilltransfer", "init", "seeds/status-update"],
                          cwd=pytester.path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "next: pytest seeds/status-update --source sim-small --target sim-large --snapshot-update" in proc.stdout
    seed = load_seed(pytester.path / "seeds" / "status-update")
    assert seed.train and seed.val and len(seed.test) == 25  # 24 held-out updates: a run can decide
    first = pytester.runpytest("seeds/status-update", *PAIR, "--snapshot-update")
    first.assert_outcomes(passed=1)
    first.stdout.fnmatch_lines(["status-update *transfers*"])  # the sample decides
    again = pytester.runpytest("seeds/status-update", *PAIR, "-v")
    again.assert_outcomes(passed=1)
    again.stdout.fnmatch_lines(["seeds/status-update/SKILL.md::transfer?sim-small->sim-large? PASSED*"])


def test_init_never_overwrites(tmp_path: Path) -> None:
    init_seed(tmp_path / "seed")
    with pytest.raises(InitError, match="would overwrite"):
        init_seed(tmp_path / "seed")


def test_init_with_a_skill_elsewhere_in_the_repository(pytester: pytest.Pytester) -> None:
    repository(pytester.path)
    skill = pytester.path / "skills" / "status" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("# Status\n\nWrite a friendly paragraph.\n")
    init_seed(pytester.path / "seeds" / "status", skill)
    config = (pytester.path / "seeds" / "status" / "seed.toml").read_text()
    assert 'skill = "../../skills/status/SKILL.md"' in config
    assert not (pytester.path / "seeds" / "status" / "SKILL.md").exists()
    assert load_seed(pytester.path / "seeds" / "status").skill.startswith("# Status")
    ran = pytester.runpytest("seeds/status", *PAIR, "--snapshot-update", "-v")
    ran.assert_outcomes(passed=1)
    ran.stdout.fnmatch_lines(["seeds/status/seed.toml::transfer?sim-small->sim-large? PASSED*"])
    rerun = pytester.runpytest("seeds/status/seed.toml::transfer[sim-small->sim-large]", *PAIR)
    rerun.assert_outcomes(passed=1)


def test_skill_key_must_stay_inside_the_repository(tmp_path: Path) -> None:
    repo = repository(tmp_path / "repo")
    (tmp_path / "outside.md").write_text("# Outside\n")
    with pytest.raises(InitError, match="outside the repository"):
        init_seed(repo / "seeds" / "s", tmp_path / "outside.md")
    seed = repo / "seeds" / "s"
    init_seed(seed)
    (seed / "seed.toml").write_text('skill = "../other/SKILL.md"\n')
    with pytest.raises(SeedError, match="holds a SKILL.md too"):
        load_seed(seed)
    (seed / "SKILL.md").unlink()
    (seed / "seed.toml").write_text('skill = "../../../outside.md"\n')
    with pytest.raises(SeedError, match="outside the repository"):
        load_seed(seed)
    (seed / "seed.toml").write_text('skill = "../other/SKILL.md"\n')
    with pytest.raises(SeedError, match="other/SKILL.md: missing"):
        load_seed(seed)


THEME = """\
---
name: slide-theme
description: Applies the house theme (colours and type) to slides and documents.
license: Complete terms in LICENSE.txt
---

# Slide Theme

## Colors

- Ink: `#141413` - text and dark backgrounds
- Accent: `#d97757` - highlights

## Typography

- **Headings**: Poppins (with Arial fallback)

Never write "Lorem ipsum" in a finished slide.

```markdown
---
name: my-theme
description: What the theme is for
---
```
"""
ASKS = ("Style", "Theme", "Restyle", "Apply the theme to")
THINGS = ("the launch slide", "the offsite poster", "the quarterly one-pager", "the onboarding deck", "the conference banner",
          "the March newsletter header", "the billing diagram", "the weekly users chart", "the annual report cover",
          "the API launch hero", "the hiring social card", "the Series C deck", "the incident review slides",
          "the mobile product tour", "the security training flyer", "the webinar email header")


def write_tasks(seed: Path) -> None:
    """Replace each slot's placeholder with a request, as a person does after `init --from`."""
    for name in ("benchmark.jsonl", "held-out.jsonl"):
        lines = (seed / name).read_text().splitlines()
        done = []
        for i, line in enumerate(lines):
            task = json.loads(line)
            task["task"] = f"{ASKS[i % 4]} {THINGS[i % len(THINGS)]} ({name[:5]} {i})."
            done.append(json.dumps(task))
        (seed / name).write_text("\n".join(done) + "\n")


def test_init_from_a_skill_keeps_it_as_written_and_suggests_its_checks(tmp_path: Path, monkeypatch) -> None:
    repo = repository(tmp_path / "repo")
    skills = tmp_path / "skills" / "slide-theme"
    skills.mkdir(parents=True)
    (skills / "SKILL.md").write_text(THEME)
    monkeypatch.chdir(repo)
    proc = subprocess.run([sys.executable, "-m", "pytest_skilltransfer", "init", "--from", str(skills.parent)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    seed = repo / "seeds" / "slide-theme"  # named by the front matter
    assert (seed / "SKILL.md").read_text() == THEME  # as written, front matter kept
    config = (seed / "seed.toml").read_text()
    assert "#   name: slide-theme" in config and "Applies the house theme" in config
    for check in ('{"op": "regex", "arg": "#[0-9a-fA-F]{6}"}', '{"op": "contains", "arg": "**Headings**:"}',
                  '{"op": "not_contains", "arg": "Lorem ipsum"}', '{"op": "regex", "arg": "^---$"}',
                  '{"op": "regex", "arg": "^name: [a-z0-9-]+$"}', '{"op": "regex", "arg": "^description: "}'):
        assert f"#   {check}   # line " in config, check
    train = (seed / "benchmark.jsonl").read_text().splitlines()
    held = (seed / "held-out.jsonl").read_text().splitlines()
    assert len(train) >= 24 and len(held) >= 24
    with pytest.raises(SeedError, match="still a placeholder .and 23 more"):
        load_seed(seed)


def test_a_seed_from_a_skill_runs_and_decides_on_the_simulator_once_its_tasks_are_written(pytester: pytest.Pytester) -> None:
    from pytest_skilltransfer.commands.scaffold import init_from

    repository(pytester.path)
    (pytester.path / "theme.md").write_text(THEME)
    folder, _ = init_from(pytester.path / "seeds" / "theme", pytester.path / "theme.md")
    assert 'skill = "../../theme.md"' in (folder / "seed.toml").read_text()  # inside the repository: named, not copied
    write_tasks(folder)
    ran = pytester.runpytest("seeds/theme", *PAIR, "--snapshot-update", "-p", "no:randomly")
    ran.assert_outcomes(passed=1)
    ran.stdout.fnmatch_lines(["theme * transfers *"])


def test_init_from_a_skills_repository_names_its_skills(tmp_path: Path) -> None:
    from pytest_skilltransfer.commands.scaffold import init_from

    for name in ("one", "two"):
        (tmp_path / "skills" / name).mkdir(parents=True)
        (tmp_path / "skills" / name / "SKILL.md").write_text(f"---\nname: {name}\n---\n# {name}\n")
    with pytest.raises(InitError, match="a skills repository with 2 skills .one, two.; name one"):
        init_from(tmp_path / "seed", tmp_path / "skills")
    (tmp_path / "bad.md").write_text("---\nname: [unclosed\n---\n# Bad\n")
    with pytest.raises(InitError, match=r"bad.md line \d: the front matter is not valid YAML"):
        init_from(tmp_path / "seed", tmp_path / "bad.md")


@pytest.mark.parametrize("name", ["brand-guidelines", "internal-comms", "template"])
def test_init_from_the_public_skill_copies(tmp_path: Path, name: str) -> None:
    from pytest_skilltransfer.commands.scaffold import init_from

    source = Path(__file__).resolve().parents[3] / "shared" / "external" / "anthropic-skills" / name
    if not source.is_dir():
        pytest.skip("the public SKILL.md copies are not on this machine")
    folder, _ = init_from(repository(tmp_path) / "seeds" / name, source)
    assert (folder / "SKILL.md").read_text() == (source / "SKILL.md").read_text()
    assert f"#   name: {yaml_name(source)}" in (folder / "seed.toml").read_text()


def yaml_name(source: Path) -> str:
    return next(line.split(":", 1)[1].strip() for line in (source / "SKILL.md").read_text().splitlines()
                if line.startswith("name:"))
