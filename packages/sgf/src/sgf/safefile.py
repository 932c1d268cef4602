"""Every file sgf writes inside the project, written without following a link.

The agent can write the project (all but `.sgf/`, read-only in its container) and, in a
worktree loop, its whole worktree under `.sgf/worktrees/`; with `--sandbox none` anything.
A symbolic link where sgf writes a log, a PID file, a run record or an assembled prompt
would make sgf, running as the user, write wherever it points. So below the project root
no folder on the way may be a link (a missing one is made, one level at a time), a whole
file goes to an `O_EXCL | O_NOFOLLOW` temporary sibling renamed over its name (a rename
replaces a link, it never follows one), an appended file is opened `O_NOFOLLOW` and must be
a plain file, and what is refused is one line naming it (docs/security.md). ralph
has its own copy of these few lines: the packages share no code.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from pathlib import Path
from typing import BinaryIO

from sgf.errors import PathRefused

_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_PLAIN = os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


def folder(path: Path, *, root: Path) -> Path:
    """Make the folder `path` (under `root`) and its missing parents; refuse a link on the way."""
    here = root
    for part in path.relative_to(root).parts:
        here = here / part
        with contextlib.suppress(FileExistsError):
            here.mkdir(mode=0o755)
        mode = here.lstat().st_mode
        if stat.S_ISLNK(mode):
            raise PathRefused(here)
        if not stat.S_ISDIR(mode):
            raise PathRefused(here, what="not a folder")
    return path


def _check(path: Path, *, root: Path) -> None:
    folder(path.parent, root=root)
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return
    if stat.S_ISLNK(mode):
        raise PathRefused(path)
    if not stat.S_ISREG(mode):
        raise PathRefused(path, what="not a plain file (a folder?)")


def replace(path: Path, data: bytes, *, root: Path, mode: int = 0o644) -> Path:
    """Write `data` to a new temporary sibling of `path`, then rename it over `path`."""
    _check(path, root=root)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    create(tmp, data, mode=mode)
    try:
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    return path


def create(path: Path, data: bytes, *, mode: int = 0o644) -> Path:
    """Write `data` to `path`, which must not exist yet (a link there is refused)."""
    try:
        fd = os.open(path, _NEW, mode)
    except FileExistsError:
        if path.is_symlink():
            raise PathRefused(path) from None
        raise
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        raise
    return path


def append(path: Path, *, root: Path) -> BinaryIO:
    """Open `path` for appending, creating it; a link or anything but a plain file is refused."""
    _check(path, root=root)
    return os.fdopen(_open_plain(path, os.O_WRONLY | os.O_APPEND), "ab")


def truncate(path: Path, *, root: Path) -> BinaryIO:
    """Open `path` empty for writing, creating it; a link or anything but a plain file is
    refused."""
    _check(path, root=root)
    fd = _open_plain(path, os.O_WRONLY)
    os.ftruncate(fd, 0)
    return os.fdopen(fd, "wb")


def _open_plain(path: Path, flags: int) -> int:
    """`O_NONBLOCK` keeps a FIFO planted there from blocking the open; it is cleared once the
    file is known to be a plain one."""
    try:
        fd = os.open(path, flags | _PLAIN, 0o644)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise PathRefused(path) from None
        if e.errno in (errno.ENXIO, errno.EISDIR):
            raise PathRefused(path, what="not a plain file") from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise PathRefused(path, what="not a plain file")
    os.set_blocking(fd, True)
    return fd
