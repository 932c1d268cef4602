"""Every file pensa reads or writes, one way: never through a link an agent planted, never
blocking on or flooding from something that is not a plain file.

Writing is the shared rule's (`pensa.shared.safefile`, which ralph and sgf write through too):
this module binds it to pensa's refusal, `UnsafePath`. pensa trusts the folder above the one it
writes into, so `.pensa/` (or the repository's top, for `.gitattributes`) is never followed
as a link: a predictable temp name (`.issues.jsonl.<pid>.tmp`) linked to `~/.bashrc` once
made the host's pre-commit `pn export` write a task title into a shell start-up file.

Reading has its own traps. A FIFO planted at `.pensa/issues.jsonl` hung `pn list` (and every
host `pn` after a loop), and a character device (`/dev/zero`, made with `mknod` in a root
container) had the host's `pn` read on past 4 GB. So `read_regular` opens without following
a link and without blocking (`O_NONBLOCK`: a FIFO opens at once), asks the descriptor itself
what it is (`fstat`, so nothing can be swapped in between), refuses anything but a regular
file with one line naming the path, and reads at most a cap. `refuse_unsafe` refuses the same
by name before a command starts (SQLite opens its files itself: they are checked there).
"""

from __future__ import annotations

import contextlib
import os
import stat
from typing import TYPE_CHECKING

from pensa.errors import InvalidData, UnsafePath
from pensa.shared.safefile import LINK, SafeFiles, kind

if TYPE_CHECKING:
    from collections.abc import Iterable

FILES = SafeFiles(UnsafePath)
# O_NONBLOCK: a FIFO opens without a writer (and a read of it ends at once); O_NOCTTY: a
# terminal device planted there never becomes pn's controlling terminal.
_READ = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_NOFOLLOW | os.O_CLOEXEC
# Reading a file pensa committed (the JSONL) stops here: generous for a million issues in
# the one file of earlier versions, and a bound on what a planted file can make pn hold.
JSONL_MAX = 512 << 20


def refuse_unsafe(files: Iterable[str], *, folders: Iterable[str] = ()) -> None:
    """Raise `UnsafePath` for the first of `folders` that is a symbolic link, or of `files`
    that is a link or anything but a regular file (missing is fine): one `lstat` each."""
    for path in folders:
        with contextlib.suppress(FileNotFoundError, NotADirectoryError):
            if stat.S_ISLNK(os.lstat(path).st_mode):
                raise UnsafePath(path, what=LINK)
    for path in files:
        try:
            mode = os.lstat(path).st_mode
        except (FileNotFoundError, NotADirectoryError):
            continue
        if not stat.S_ISREG(mode):
            raise UnsafePath(path, what=kind(mode))


def read_regular(path: str, *, limit: int = JSONL_MAX) -> bytes | None:
    """The bytes of the regular file `path`, or None when there is none. `UnsafePath` for a
    link, FIFO, device, socket or directory, `InvalidData` past `limit` bytes: neither is
    read, and nothing blocks."""
    try:
        fd = os.open(path, _READ)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as e:  # ELOOP: a link; ENXIO: a socket (or a FIFO on some systems)
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            mode = stat.S_IFREG
        if not stat.S_ISREG(mode):
            raise UnsafePath(path, what=kind(mode)) from e
        raise InvalidData(f"cannot read {path}: {e.strerror or e}") from e
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise UnsafePath(path, what=kind(st.st_mode))
    with os.fdopen(fd, "rb") as f:
        want = min(st.st_size, limit) + 1
        try:
            data = f.read(want)
            if len(data) == want <= limit:  # it grew since fstat: read on, within the limit
                data += f.read(limit + 1 - len(data))
        except OSError as e:
            raise InvalidData(f"cannot read {path}: {e.strerror or e}") from e
    if len(data) > limit:
        raise InvalidData(
            f"{path} is larger than {limit >> 20} MiB, more than pensa reads from one file "
            "(it may have been planted to exhaust memory): move it away and run the command "
            "again (nothing was changed)"
        )
    return data


def open_lock(path: str) -> int:
    """A descriptor of the lock file `path` (created if missing), for `flock`: never a link,
    and never anything but a regular file (a FIFO or device there is refused)."""
    return FILES.open_plain(path, os.O_RDWR)


def write_atomically(path: str | os.PathLike[str], text: str | bytes) -> bool:
    """Write `text` to `path` via a new temp file and a rename; skip (return False) when it
    already holds exactly that. `UnsafePath` when `path` or its folder is a link."""
    data = text.encode() if isinstance(text, str) else text
    folder = os.path.dirname(os.path.abspath(os.fspath(path)))
    return FILES.update(path, data, root=os.path.dirname(folder))


def new_file(folder: str, prefix: str) -> str:
    """The path of a new empty file in `folder` named `<prefix><random>.tmp`, made by pensa
    and nobody else: even a planted link by that name cannot make it another file."""
    return FILES.new_file(folder, prefix, root=os.path.dirname(os.path.abspath(folder)))
