"""The commands a report prints for an item from its record: rerun it as it ran and, when its snapshot
differs, accept the new result. One source, so the terminal diagnosis, the Markdown report and the HTML page
agree (the re-record command, which needs the run's options, is `plugin.rerecord_command`'s)."""

from __future__ import annotations

import shlex

from ..evidence.item_record import ItemRecord
from .report import pair_names

SNAPSHOT_AS_COMMITTED = (None, "ok", "not compared", "updated")


def rerun_commands(result: ItemRecord) -> list[tuple[str, str]]:
    """(what, command) for an item's record (its `item` node id, `source`, `target`, `gate`). The
    pair is named (`--transfer-pair`, a spelling no other plugin owns) so the item is collected whichever
    matrix the run had."""
    if not result.item:
        return []
    source, target = pair_names(result)  # the names the node id was made from
    parts = ["pytest", result.item, "--transfer-pair", f"{source}->{target}"]
    portable = result.portable
    if portable:  # the validation set shapes what the item reports: rerun it with the same one
        parts += ["--transfer-validate-on", ",".join(portable["validate_on"])]
        parts += ["--transfer-validate-tolerance", f"{portable['tolerance']:g}"] if portable["tolerance"] else []
    rerun = shlex.join(parts)
    commands = [("rerun", rerun)]
    if (result.gate.snapshot if result.gate else None) not in SNAPSHOT_AS_COMMITTED:
        commands.append(("accept the new result once reviewed", f"{rerun} --snapshot-update"))
    return commands
