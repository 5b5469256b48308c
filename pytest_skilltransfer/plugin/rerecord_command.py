"""On a cassette miss, the command that re-records the item with the options that shaped its requests (the
rerun and accept commands every report prints are `reports.rerun`'s)."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pytest

    from .collect import TransferSpec

REQUEST_SHAPING = ("optimizer", "nights", "edit-budget", "limit-replay", "limit-holdout", "samples", "no-direct",
                   "direct-on-demand", "design", "prompt-cache", "transfer-service-tier", "validate-on", "validate-tolerance")


def rerecord_command(item: "pytest.Item", spec: "TransferSpec") -> str:
    """`pytest <node id> --pair SRC->TGT [the command line's protocol options] --record-mode=new_episodes
    --snapshot-update`: the failing item, with the options that shape its requests (ini keys apply again
    by themselves); its result will change with the new recordings, so its snapshot is written too."""
    from .spellings import dest, flag

    config = item.config
    parts = ["pytest", item.nodeid, flag(config, "pair"), f"{spec.source}->{spec.target}"]
    if item.nodeid.startswith("/") and config.inipath is not None:
        parts[1:1] = ["-c", str(config.inipath)]  # pytest finds the configuration from the paths it is given
    for option in REQUEST_SHAPING:
        value = getattr(config.option, dest(option), None)
        if value is True:
            parts.append(flag(config, option))
        elif isinstance(value, list):  # a repeatable option: its values joined as one
            parts += [flag(config, option), ",".join(str(v) for v in value)]
        elif value not in (None, False):
            parts += [flag(config, option), str(value)]
    if _uses_local_model(spec):  # brings the local server up and down, whatever the ini says
        parts.append(f"{flag(config, 'local-server')}=auto")
    return shlex.join([*parts, f"{flag(config, 'record-mode')}=new_episodes", "--snapshot-update"])


def _uses_local_model(spec: "TransferSpec") -> bool:
    from ..models.aliases import local_aliases

    return any(name in local_aliases() for name in (spec.source, spec.target, spec.optimizer) if name)
