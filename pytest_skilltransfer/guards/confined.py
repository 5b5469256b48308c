"""Reading a seed's files without leaving the seed: regular files only, resolving inside a given folder.

A seed is input from whoever writes a pull request, so every file the loader reads is checked the
same way: symlinks are resolved and the target must lie inside the folder the file belongs to (the
seed folder; the repository for a `skill =` file), it must be a regular file (a FIFO would block
the run, a device would stream forever), and nothing under `/proc`, `/sys` or `/dev` is read even
from inside (a seed folder there would still expose the process). The file is opened without
following links and checked on the open descriptor, so a link swapped in between is not followed,
and at most `max_bytes + 1` bytes are read.

`ConfinedFolder` reads the files directly inside one folder with the same guarantees, resolving the
folder once instead of resolving every file: each file is opened relative to the folder's open
descriptor without following links, so a plain file there is by construction inside the folder;
a symlink (or a folder under /proc, /sys or /dev) takes the resolving path above, which checks and
words the refusal exactly as for a single file.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from types import TracebackType

SYSTEM_FOLDERS = ("/proc", "/sys", "/dev")
_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder"))


class ConfinementError(OSError):
    """A seed file that may not be read: outside its folder, not a regular file, or a system path."""


def file_kind(mode: int) -> str:
    """What a file of this `st_mode` is, in words (`a regular file` when it is one)."""
    return next((name for test, name in _KINDS if test(mode)), "a regular file" if stat.S_ISREG(mode) else "a special file")


def _system_folder(path: Path | str) -> str | None:
    text = path if isinstance(path, str) else path.as_posix()
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


_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
_DIR_FD = (hasattr(os, "O_NOFOLLOW") and hasattr(os, "O_DIRECTORY") and {os.open, os.stat} <= os.supports_dir_fd
           and os.stat in os.supports_follow_symlinks)  # reading relative to a folder's descriptor (POSIX)
_ABSENT = (errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP)  # what pathlib's exists() / is_symlink() take for "absent"


def read_confined(path: Path, inside: Path, what: str = "the seed folder", max_bytes: int | None = None) -> bytes:
    """The bytes of a regular file that resolves inside `inside` (ConfinementError or OSError otherwise).

    With `max_bytes`, at most `max_bytes + 1` bytes are read: a longer result means the file is over
    the limit (its size is `path.stat().st_size`).
    """
    resolved = confined_path(path, inside, what)
    return _read_regular(os.open(resolved, _OPEN_FLAGS), max_bytes)


def _read_regular(fd: int, max_bytes: int | None) -> bytes:
    """Read an open descriptor that must be a regular file (checked on the descriptor), then close it."""
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ConfinementError(f"is {file_kind(info.st_mode)}, not a regular file; a seed file must be a regular "
                                   "file")
        os.set_blocking(fd, True)
        return _read_to_end(fd, info.st_size, None if max_bytes is None else max_bytes + 1)
    finally:
        os.close(fd)


def _read_to_end(fd: int, size: int, limit: int | None) -> bytes:
    """Everything up to the end of the file, or its first `limit` bytes; `size` (from fstat) sizes the
    first read, so a small file is not read into a buffer as large as the limit."""
    chunks: list[bytes] = []
    got = 0
    while limit is None or got < limit:
        want = size + 1 - got if got <= size else 1 << 16  # the file may have grown since fstat
        chunk = os.read(fd, want if limit is None else min(want, limit - got))
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


class ConfinedFolder:
    """A folder whose direct files are read as `read_confined(path, folder)` would, the folder resolved once.

    Use as a context manager (it holds the folder open). `read` and `present` take paths directly
    inside the folder; any other path, a symlink, and a folder that resolves under a system folder
    go through `read_confined` / pathlib unchanged.
    """

    def __init__(self, path: Path, what: str = "the seed folder") -> None:
        self.path = path
        self.what = what
        self.resolved = path.resolve()
        self._inside = self.resolved.as_posix().rstrip("/") + "/"  # a direct file's path is this plus its name
        self._prefix = os.path.join(str(path), "")  # how `path / name` spells itself
        self._fd: int | None = None
        if _system_folder(self.resolved) is None and _DIR_FD:
            try:  # not following a link swapped in since the resolution
                self._fd = os.open(self.resolved, os.O_RDONLY | os.O_DIRECTORY | _OPEN_FLAGS)
            except OSError:
                self._fd = None  # every read takes the resolving path, which says what is wrong

    def __enter__(self) -> "ConfinedFolder":
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _direct_name(self, path: Path) -> str | None:
        """The name of `path` when the descriptor can answer for it: a plain name directly inside the folder."""
        name = path.name
        if self._fd is None or name in ("", ".", "..") or str(path) != self._prefix + name or \
                (self._inside == "/" and _system_folder(self._inside + name) is not None):  # the folder is "/"
            return None
        return name

    def read(self, path: Path, max_bytes: int | None = None) -> bytes:
        """`read_confined(path, path.parent, what, max_bytes)`, without resolving a plain file in this folder."""
        name = self._direct_name(path)
        if name is None:
            return read_confined(path, path.parent, self.what, max_bytes)
        try:
            fd = os.open(name, _OPEN_FLAGS, dir_fd=self._fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:  # a symlink: resolve it and check where it leads
                return read_confined(path, path.parent, self.what, max_bytes)
            raise
        return _read_regular(fd, max_bytes)

    def present(self, path: Path) -> bool:
        """Whether anything is at `path`, a dangling symlink or a FIFO too (`path.is_symlink() or path.exists()`)."""
        name = self._direct_name(path)
        if name is None:
            return path.is_symlink() or path.exists()
        try:
            os.stat(name, dir_fd=self._fd, follow_symlinks=False)
        except OSError as exc:
            if exc.errno in _ABSENT:
                return False
            raise
        return True
