"""The commands every report prints for an item: rerun it as it ran and, when its snapshot differs, accept
the new result; and, on a cassette miss, the command that re-records it. One source, so the terminal
diagnosis, the Markdown report and the HTML page agree and a test that runs one of them vouches for all."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pytest

    from .collect import TransferSpec

SNAPSHOT_AS_COMMITTED = (None, "ok", "not compared", "updated")


def rerun_commands(result: dict[str, Any]) -> list[tuple[str, str]]:
    """(what, command) for an item's JSON result (its `item` node id, `source`, `target`, `gate`). The
    pair is named (`--transfer-pair`, a spelling no other plugin owns) so the item is collected whichever
    matrix the run had."""
    if not result.get("item"):
        return []
    rerun = shlex.join(["pytest", result["item"], "--transfer-pair", f"{result['source']}->{result['target']}"])
    commands = [("rerun", rerun)]
    if (result.get("gate") or {}).get("snapshot") not in SNAPSHOT_AS_COMMITTED:
        commands.append(("accept the new result once reviewed", f"{rerun} --snapshot-update"))
    return commands


REQUEST_SHAPING = ("optimizer", "nights", "edit-budget", "limit-replay", "limit-holdout", "samples", "no-direct",
                   "prompt-cache", "transfer-service-tier")


def rerecord_command(item: "pytest.Item", spec: "TransferSpec") -> str:
    """`pytest <node id> --pair SRC->TGT [the command line's protocol options] --record-mode=new_episodes
    --snapshot-update`: the failing item, with the options that shape its requests (ini keys apply again
    by themselves); its result will change with the new recordings, so its snapshot is written too."""
    from .options import dest, flag

    config = item.config
    parts = ["pytest", item.nodeid, flag(config, "pair"), f"{spec.source}->{spec.target}"]
    if item.nodeid.startswith("/") and config.inipath is not None:
        parts[1:1] = ["-c", str(config.inipath)]  # pytest finds the configuration from the paths it is given
    for option in REQUEST_SHAPING:
        value = getattr(config.option, dest(option), None)
        if value is True:
            parts.append(flag(config, option))
        elif value not in (None, False):
            parts += [flag(config, option), str(value)]
    if _uses_local_model(spec):  # brings the local server up and down, whatever the ini says
        parts.append(f"{flag(config, 'local-server')}=auto")
    return shlex.join([*parts, f"{flag(config, 'record-mode')}=new_episodes", "--snapshot-update"])


def _uses_local_model(spec: "TransferSpec") -> bool:
    from ..models.aliases import local_aliases

    return any(name in local_aliases() for name in (spec.source, spec.target, spec.optimizer) if name)
