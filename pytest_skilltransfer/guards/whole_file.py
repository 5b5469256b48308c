"""Replacing a file whole: a temporary file beside it, fsync, `os.replace`, then the folder's fsync, so a reader
(a replay, a browser reloading a running run's page) sees the old file or the new one, never half of either, and
the new one survives a crash once written. A temporary file is named `.<name>.<random>.tmp`."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Iterable

TEMP_SUFFIX = ".tmp"


def replace_whole(path: Path, chunks: Iterable[bytes]) -> None:
    """Write `chunks`, in order, as the whole new content of `path` (its folder made when missing)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=TEMP_SUFFIX)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.writelines(chunks)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    fsync_folder(path.parent)


def fsync_folder(folder: Path) -> None:
    """Make a rename or a new file in `folder` durable (a no-op where folders cannot be opened)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
