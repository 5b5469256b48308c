"""Reading a seed's files without leaving the seed: regular files only, resolving inside a given folder.

A seed is input from whoever writes a pull request, so every file the loader reads is checked the
same way: symlinks are resolved and the target must lie inside the folder the file belongs to (the
seed folder; the repository for a `skill =` file), it must be a regular file (a FIFO would block
the run, a device would stream forever), and nothing under `/proc`, `/sys` or `/dev` is read even
from inside (a seed folder there would still expose the process). The file is opened without
following links and checked on the open descriptor, so a link swapped in between is not followed,
and at most `max_bytes + 1` bytes are read.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

SYSTEM_FOLDERS = ("/proc", "/sys", "/dev")
_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder"))


class ConfinementError(OSError):
    """A seed file that may not be read: outside its folder, not a regular file, or a system path."""


def file_kind(mode: int) -> str:
    """What a file of this `st_mode` is, in words (`a regular file` when it is one)."""
    return next((name for test, name in _KINDS if test(mode)), "a regular file" if stat.S_ISREG(mode) else "a special file")


def _system_folder(path: Path) -> str | None:
    text = path.as_posix()
    return next((folder for folder in SYSTEM_FOLDERS if text == folder or text.startswith(folder + "/")), None)


def confined_path(path: Path, inside: Path, what: str = "the seed folder") -> Path:
    """`path` with symlinks resolved, or ConfinementError saying why it may not be read."""
    resolved = path.resolve()
    root = inside.resolve()
    system = _system_folder(resolved)
    link = f"is a symlink to {resolved}, " if path.is_symlink() or resolved != path.absolute() else f"resolves to {resolved}, "
    if system:
        raise ConfinementError(f"{link}under {system}, which a seed may never read; replace it with a regular file "
                               "inside the seed")
    if not resolved.is_relative_to(root):
        raise ConfinementError(f"{link}outside {what} {root}; replace the link with a copy of the file")
    return resolved


def read_confined(path: Path, inside: Path, what: str = "the seed folder", max_bytes: int | None = None) -> bytes:
    """The bytes of a regular file that resolves inside `inside` (ConfinementError or OSError otherwise).

    With `max_bytes`, at most `max_bytes + 1` bytes are read: a longer result means the file is over
    the limit (its size is `path.stat().st_size`).
    """
    resolved = confined_path(path, inside, what)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(resolved, flags)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ConfinementError(f"is {file_kind(info.st_mode)}, not a regular file; a seed file must be a regular "
                                   "file")
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read() if max_bytes is None else handle.read(max_bytes + 1)
    finally:
        os.close(fd)
    return data
