"""How an option is spelled and registered: its ini key, its prefixed flag (`--transfer-nights`) and its short
flag (`--nights`) where no other plugin owns it, and help texts computed only for --help (see `options`)."""

from __future__ import annotations

import argparse
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable

import pytest


def ini_name(option: str) -> str:
    """The ini key of an option: `transfer-min-gain` -> `skilltransfer_min_gain`."""
    for prefix in ("skilltransfer-", "transfer-"):
        option = option.removeprefix(prefix)
    return "skilltransfer_" + option.replace("-", "_")


def dest(option: str) -> str:
    return "skilltransfer_" + option.replace("-", "_")


PREFIX = "transfer-"
SPELLINGS = pytest.StashKey["Spellings"]()


@dataclass
class Spellings:
    """Which short spellings this run answers to, and which belong to another plugin here."""

    short: dict[str, str] = field(default_factory=dict)  # option -> its short flag, where ours
    yielded: dict[str, str] = field(default_factory=dict)  # option -> its short flag, owned by another plugin

    def flag(self, option: str) -> str:
        """The spelling to print for an option: the short one where it is ours, else the prefixed one."""
        return self.short.get(option) or f"--{prefixed(option)}"

    def note(self) -> str:
        """The one line that says which short spellings another plugin owns (empty when none)."""
        if not self.yielded:
            return ""
        theirs = ", ".join(self.yielded.values())
        ours = ", ".join(f"--{prefixed(option)}" for option in self.yielded)
        return f"{theirs} belong to another plugin in this environment; this plugin's spelling: {ours}"


@dataclass(frozen=True)
class _ShortSpelling:
    option: str
    kwargs: dict[str, Any]


_PENDING: "weakref.WeakKeyDictionary[Any, list[_ShortSpelling]]" = weakref.WeakKeyDictionary()


def prefixed(option: str) -> str:
    """The spelling no other plugin uses: `nights` -> `transfer-nights`; `transfer-…`/`skilltransfer-…` stay."""
    return option if option.startswith(("transfer-", "skilltransfer-")) else PREFIX + option


def flag(config: pytest.Config, option: str) -> str:
    """An option's flag as this run spells it (`--source`, or `--transfer-source` where another
    plugin owns `--source`)."""
    spellings = config.stash.get(SPELLINGS, None)
    return spellings.flag(option) if spellings is not None else f"--{option}"


HelpText = str | Callable[[], str]  # a callable computes its defaults only when --help is shown
LAZY_HELP = "(computed for --help)"
_LAZY_HELP: "weakref.WeakKeyDictionary[Any, dict[str, Callable[[], str]]]" = weakref.WeakKeyDictionary()
DESTS: set[str] = set()  # every option's dest, to tell whether a command line names any
INI_KEYS: set[str] = set()


def _add(group: Any, parser: Any, option: str, help_text: HelpText, ini_type: str | None = None,
         **kwargs: Any) -> None:
    """Register an option under its prefixed spelling and its ini key. The CLI's parser
    (`adds_short_spellings_now`) takes the short spelling and the whole help at once; pytest's gets
    them in `add_short_spellings`, once every plugin has registered its options."""
    key = ini_name(option)
    names = [f"--{prefixed(option)}"]
    has_short = prefixed(option) != option
    eager = getattr(parser, "adds_short_spellings_now", False)
    if has_short and eager:
        names.append(f"--{option}")
    elif has_short:
        _PENDING.setdefault(parser, []).append(_ShortSpelling(option, kwargs))
    if callable(help_text) and not eager:
        _LAZY_HELP.setdefault(parser, {})[dest(option)] = help_text
        help_text = LAZY_HELP
    elif callable(help_text):
        help_text = help_text()
    group.addoption(*names, dest=dest(option), help=f"{help_text} (ini: {key})", **kwargs)
    parser.addini(key, help_text if help_text != LAZY_HELP else f"see --{prefixed(option)}", type=ini_type)
    DESTS.add(dest(option))
    INI_KEYS.add(key)


def add_short_spellings(config: pytest.Config, parser: pytest.Parser) -> Spellings:
    """Give each option its short spelling unless another plugin or initial conftest registered
    that flag; with --help, each option's help gets its defaults and names its other spelling."""
    spellings = Spellings()
    lazy = _LAZY_HELP.pop(parser, {})
    taken = {name for group in parser._groups for opt in group.options for name in opt.names()}
    group = parser.getgroup("skilltransfer")
    by_dest = {opt.dest: opt for opt in group.options}
    for pending in _PENDING.pop(parser, []):
        short = f"--{pending.option}"
        if short in taken:
            spellings.yielded[pending.option] = short
            continue
        try:
            group.addoption(short, dest=dest(pending.option), help=argparse.SUPPRESS, **pending.kwargs)
        except (ValueError, argparse.ArgumentError):
            spellings.yielded[pending.option] = short
            continue
        spellings.short[pending.option] = short
    config.stash[SPELLINGS] = spellings
    if not getattr(config.known_args_namespace, "help", False):
        return spellings
    for name, text in lazy.items():
        if name in by_dest:
            _set_help(by_dest[name], str(by_dest[name].attrs().get("help", "")).replace(LAZY_HELP, text(), 1))
    for option, short in [*spellings.short.items(), *spellings.yielded.items()]:
        visible = by_dest.get(dest(option))
        if visible is not None:
            where = f"also {short}" if option in spellings.short else f"{short} is another plugin's here"
            _set_help(visible, str(visible.attrs().get("help", "")).replace("(ini: ", f"({where}; ini: ", 1))
    return spellings


def _set_help(option: Any, text: str) -> None:
    """Change a registered option's help text (pytest >= 9.2 keeps the argparse action in `attrs()`)."""
    option.attrs()["help"] = text
    if hasattr(option, "help"):  # older pytest builds its argparse parser from the attribute
        option.help = text
