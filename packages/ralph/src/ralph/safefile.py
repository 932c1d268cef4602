"""Every file ralph writes on the host, written without following a link.

In Docker the agent can write the project, the repository's common git directory and
ralph's per-run directory; with `--sandbox none` anything. A symbolic link planted where
ralph writes (a run record, a lock, a log) would make ralph, running as the user, write
wherever it points: `~/.bashrc` gets a JSON line. So a whole file is written to an
`O_EXCL | O_NOFOLLOW` temporary sibling and renamed over its name (a rename replaces a link,
it never follows one), an appended file is opened `O_NOFOLLOW` and must be a plain file, and
a name that is a link is refused in one line naming it (docs/security.md). sgf has
its own copy of these few lines: the packages share no code.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from pathlib import Path
from typing import BinaryIO

from ralph.errors import LinkRefused

_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_PLAIN = os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


def refuse_link(path: Path) -> None:
    """Raise LinkRefused when `path` is a symbolic link."""
    if path.is_symlink():
        raise LinkRefused(path)


def replace(path: Path, data: bytes, *, mode: int = 0o644) -> Path:
    """Write `data` to a new temporary sibling, then rename it over `path`."""
    refuse_link(path)
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
            raise LinkRefused(path) from None
        raise
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        raise
    return path


def append(path: Path) -> BinaryIO:
    """Open `path` for appending, creating it; a link or anything but a plain file is refused."""
    return os.fdopen(open_plain(path, os.O_WRONLY | os.O_APPEND), "ab")


def open_plain(path: Path, flags: int) -> int:
    """Open (creating) the plain file `path` with `flags`; return its descriptor.

    `O_NONBLOCK` keeps a FIFO planted there from blocking the open; it is cleared once the
    file is known to be a plain one."""
    try:
        fd = os.open(path, flags | _PLAIN, 0o644)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise LinkRefused(path) from None
        if e.errno in (errno.ENXIO, errno.EISDIR):  # a FIFO nobody reads, a folder
            raise LinkRefused(path, what="not a plain file") from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise LinkRefused(path, what="not a plain file")
    os.set_blocking(fd, True)
    return fd
