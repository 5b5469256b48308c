"""Whether a pytest run is a skill-transfer run, decided before collection from cheap facts.

The plugin is installed in every pytest run of its environment. A run engages it when its command
line names one of the plugin's options, its ini file sets a `skilltransfer_` key, its
pyproject.toml has a `[tool.skilltransfer]` table, or a path it collects (the arguments, else
`testpaths`) is, lies in or directly holds a seed folder. Only an engaged run reads the settings,
schedules by seed under xdist, keeps syrupy off the seeds' Markdown snapshots and registers the
reports; any other run is left exactly as pytest runs it, with nothing imported beyond the option
table. Should such a run still meet a seed (deeper down, with its pairs in seed.toml) or a test
using `transfer_result`, the plugin engages then, without the seed scheduler (xdist has chosen).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ..engine.seed_layout import holds_seeds

ENGAGED = pytest.StashKey[bool]()


def engaged(config: pytest.Config) -> bool:
    """Whether this run is a skill-transfer run (decided once per run)."""
    if ENGAGED not in config.stash:
        config.stash[ENGAGED] = _decide(config)
    return config.stash[ENGAGED]


def _decide(config: pytest.Config) -> bool:
    from .spellings import DESTS, INI_KEYS

    if any(getattr(config.option, name, None) not in (None, False, []) for name in DESTS):
        return True
    if _ini_mentions_keys(config) and any(_ini_set(config, key) for key in INI_KEYS):
        return True
    if _project_table(config.rootpath / "pyproject.toml"):
        return True
    return any(holds_seeds(path) for path in _collected_paths(config))


def _ini_mentions_keys(config: pytest.Config) -> bool:
    """Whether the ini file or an `-o` override could set a `skilltransfer_` key: a cheap look at the text
    before asking pytest for every key (which parses each one)."""
    if any(str(o).startswith("skilltransfer_") for o in getattr(config.option, "override_ini", None) or ()):
        return True
    if config.inipath is None:
        return False
    try:
        return "skilltransfer_" in config.inipath.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return True  # unreadable here: ask pytest for each key


def _ini_set(config: pytest.Config, key: str) -> bool:
    try:
        return config.getini(key) not in ("", [], None, False)
    except ValueError:  # not registered in this parser
        return False


def _project_table(pyproject: Path) -> bool:
    try:
        return "[tool.skilltransfer" in pyproject.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False


def _collected_paths(config: pytest.Config) -> list[Path]:
    paths = []
    for arg in config.args or []:
        path = config.invocation_params.dir / str(arg).split("::")[0]
        if path.exists():
            paths.append(path)
    return paths
