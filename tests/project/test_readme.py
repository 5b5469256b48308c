"""The README's quick start stays true: CI runs exactly its two commands."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def quick_start_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Quick start", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    return [line for line in block.splitlines() if line.strip() and not line.startswith("#")]


def test_quick_start_has_exactly_two_commands_and_ci_runs_both():
    commands = quick_start_commands()
    ci_lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert len(commands) == 2
    assert [c for c in commands if c in ci_lines] == commands
