"""Every file pensa reads or writes, one way: never through a link an agent planted, never
blocking on or flooding from something that is not a plain file.

The sandboxed agent can write anything under `.pensa/` (and the rest of the project), and
files there are git-ignored, so a planted link shows nowhere. A predictable temp name
(`.issues.jsonl.<pid>.tmp`) linked to `~/.bashrc` once made the host's pre-commit
`pn export` write a task title into a shell start-up file. So:

- the folder is opened once, refusing a link (`O_NOFOLLOW`), and every later step is taken
  relative to that descriptor: swapping the folder for a link meanwhile changes nothing;
- the temp file has an unguessable name and is created with `O_CREAT|O_EXCL|O_NOFOLLOW`:
  whatever was planted, it is a new file of ours;
- it is renamed over the target, which replaces a link rather than writing through it; a
  target that is a link is refused all the same, so that the user hears of it.

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
import errno
import os
import stat
from typing import TYPE_CHECKING

from pensa.errors import InvalidData, UnsafePath

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

# POSIX: pensa runs on Linux and macOS, where every one of these exists.
_NOFOLLOW = os.O_NOFOLLOW
_DIRECTORY = os.O_DIRECTORY
_CLOEXEC = os.O_CLOEXEC
# O_NONBLOCK: a FIFO opens without a writer (and a read of it ends at once); O_NOCTTY: a
# terminal device planted there never becomes pn's controlling terminal.
_READ = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | _NOFOLLOW | _CLOEXEC
# Reading a file pensa committed (the JSONL) stops here: generous for a million issues in
# the one file of earlier versions, and a bound on what a planted file can make pn hold.
JSONL_MAX = 512 << 20
_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def link_refusal(path: str) -> UnsafePath:
    """The one line that refuses a planted link."""
    return UnsafePath(
        f"{path} is a symbolic link; pensa never reads or writes through one (it may have been "
        "planted to redirect a write): remove it and run the command again (nothing was changed)"
    )


def not_regular_refusal(path: str, mode: int) -> UnsafePath:
    """The one line that refuses a FIFO, device, socket or directory where a file belongs."""
    what = next((name for test, name in _KINDS if test(mode)), "not a regular file")
    return UnsafePath(
        f"{path} is {what}, not a regular file; pensa reads and writes only regular files "
        "there (it may have been planted to hang or flood pn): remove it and run the command "
        "again (nothing was changed)"
    )


def refuse_unsafe(files: Iterable[str], *, folders: Iterable[str] = ()) -> None:
    """Raise `UnsafePath` for the first of `folders` that is a symbolic link, or of `files`
    that is a link or anything but a regular file (missing is fine): one `lstat` each."""
    for path in folders:
        with contextlib.suppress(FileNotFoundError, NotADirectoryError):
            if stat.S_ISLNK(os.lstat(path).st_mode):
                raise link_refusal(path)
    for path in files:
        try:
            mode = os.lstat(path).st_mode
        except (FileNotFoundError, NotADirectoryError):
            continue
        if stat.S_ISLNK(mode):
            raise link_refusal(path)
        if not stat.S_ISREG(mode):
            raise not_regular_refusal(path, mode)


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
        if stat.S_ISLNK(mode):
            raise link_refusal(path) from e
        if not stat.S_ISREG(mode):
            raise not_regular_refusal(path, mode) from e
        raise InvalidData(f"cannot read {path}: {e.strerror or e}") from e
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise not_regular_refusal(path, st.st_mode)
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
    flags = os.O_RDWR | os.O_CREAT | os.O_NONBLOCK | os.O_NOCTTY | _NOFOLLOW | _CLOEXEC
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as e:
        if e.errno == errno.ELOOP or os.path.islink(path):
            raise link_refusal(path) from e
        raise
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise not_regular_refusal(path, mode)
    return fd


@contextlib.contextmanager
def _folder(path: str) -> Iterator[int]:
    """A descriptor of the folder `path`, which must not be a link."""
    try:
        fd = os.open(path, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC)
    except OSError as e:
        if os.path.islink(path):
            raise link_refusal(path) from e
        raise
    try:
        yield fd
    finally:
        os.close(fd)


def _same(name: str, data: bytes, folder: int) -> bool:
    """Whether the plain file `name` already holds exactly `data`."""
    try:
        fd = os.open(name, _READ, dir_fd=folder)  # (the caller saw a regular file by lstat)
    except FileNotFoundError:
        return False
    with os.fdopen(fd, "rb") as f:
        return stat.S_ISREG(os.fstat(fd).st_mode) and f.read(len(data) + 1) == data


def write_atomically(path: str | os.PathLike[str], text: str | bytes) -> bool:
    """Write `text` to `path` via a new temp file and a rename; skip (return False) when it
    already holds exactly that. `UnsafePath` when `path` or its folder is a link."""
    data = text.encode() if isinstance(text, str) else text
    folder, name = os.path.split(os.path.abspath(os.fspath(path)))
    with _folder(folder) as dir_fd:
        try:
            mode = os.lstat(name, dir_fd=dir_fd).st_mode
        except FileNotFoundError:
            pass
        else:
            if stat.S_ISLNK(mode):
                raise link_refusal(os.path.join(folder, name))
            if not stat.S_ISREG(mode):
                raise not_regular_refusal(os.path.join(folder, name), mode)
            if _same(name, data, dir_fd):
                return False
        tmp = _create(f".{name}.", data, dir_fd)  # `*.tmp`: git-ignored in .pensa/
        try:
            os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp, dir_fd=dir_fd)
    return True


def new_file(folder: str, prefix: str) -> str:
    """The path of a new empty file in `folder` named `<prefix><random>.tmp`, made by pensa
    and nobody else: even a planted link by that name cannot make it another file."""
    with _folder(folder) as dir_fd:
        return os.path.join(folder, _create(prefix, b"", dir_fd))


def _create(prefix: str, data: bytes, folder: int) -> str:
    """A new file `<prefix><random>.tmp` in `folder` holding `data`; its name."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
    while True:
        tmp = f"{prefix}{os.urandom(6).hex()}.tmp"
        try:
            fd = os.open(tmp, flags, 0o666, dir_fd=folder)
        except FileExistsError:  # a planted file (or link) by that name: pick another
            continue
        break
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp, dir_fd=folder)
        raise
    return tmp
