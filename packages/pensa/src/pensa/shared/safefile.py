"""The link-refusing writer: every file pensa, ralph and sgf write on the host, written without
following a link and never into anything but a regular file.

A published contract module (see `pensa.shared`): ralph and sgf write through it too, so the
rule has one owner. The sandboxed agent can write the project (in Docker also the repository's
common git directory and ralph's per-run directory; with `--sandbox none` anything), and the
tools run on the host as the user. A symbolic link planted where a tool writes (a predictable
temp name, a run record, a log, a lock) would make it write wherever the link points: a
predictable temp name of `pn export` linked to `~/.bashrc` once made the host's pre-commit hook
write a task title into a shell start-up file. So:

- the folder written into is opened once, and every later step is taken relative to that
  descriptor. Given a `root` (a folder the caller trusts: the project, a cache folder), no
  folder below it on the way may be a link (a missing one is made, one level at a time) and
  the last one is opened `O_NOFOLLOW`, so swapping it for a link meanwhile changes nothing;
  without one, the caller trusts the folder as named (a path the user gave);
- a whole file goes to a new temporary sibling with an unguessable name, created
  `O_CREAT | O_EXCL | O_NOFOLLOW` (whatever was planted, it is a new file of ours), and is
  renamed over the name: a rename replaces a link, it never follows one. A name that is a link,
  or a directory, FIFO, device or socket, is refused all the same, so that the user hears of it;
- a file opened in place (appended to, emptied, locked) is opened `O_NOFOLLOW | O_NONBLOCK |
  O_NOCTTY` (a FIFO planted there cannot block the open, a terminal never becomes the tool's)
  and asked with `fstat` what it is: only a regular file is kept.

Each tool refuses in its own words: `SafeFiles(refuse)` raises `refuse(path, what=...)`, the
tool's own error class (pensa's `UnsafePath`, ralph's `LinkRefused`, sgf's `PathRefused`), so
a refusal reaches the user as that tool's one-line error. `what` says what stood there: `LINK`,
`NOT_A_FOLDER`, or `kind(mode)` ("a FIFO (named pipe), not a regular file").

Only the standard library, and no pathlib: `pn` imports this on every call.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from typing import TYPE_CHECKING, BinaryIO, Protocol, TypeVar

if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import TypeAlias

    Where: TypeAlias = str | os.PathLike[str]

P = TypeVar("P", bound="str | os.PathLike[str]")

LINK = "a symbolic link"
NOT_A_FOLDER = "not a folder"
_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)
_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: a FIFO opens without a reader; O_NOCTTY: a terminal device planted there never
# becomes the tool's controlling terminal.
_IN_PLACE = os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_READ = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_NOFOLLOW | os.O_CLOEXEC


def kind(mode: int) -> str:
    """What a file of `mode` is, in a refusal's words: `LINK`, or e.g. "a socket, not a
    regular file"."""
    if stat.S_ISLNK(mode):
        return LINK
    what = next((name for test, name in _KINDS if test(mode)), "a special file")
    return f"{what}, not a regular file"


class Refuse(Protocol):
    """A tool's refusal: its own error, built from the path and what stands there."""

    def __call__(self, path: str, *, what: str) -> Exception: ...


class Refused(Exception):
    """The refusal of a caller with no error family of its own (the crash report)."""

    def __init__(self, path: str, *, what: str) -> None:
        super().__init__(f"refusing to write {path}: it is {what}")


class SafeFiles:
    """The rules above, refusing with `refuse`."""

    def __init__(self, refuse: Refuse) -> None:
        self.refuse = refuse

    def folder(self, path: P, *, root: Where) -> P:
        """Make the folder `path` below `root` and its missing parents; a link or a file on
        the way is refused."""
        here = os.path.abspath(root)
        relative = os.path.relpath(os.path.abspath(_text(path)), here)
        if relative == os.pardir or relative.startswith(os.pardir + os.sep):
            raise ValueError(f"{_text(path)} is not below {_text(root)}")
        for part in [] if relative == os.curdir else relative.split(os.sep):
            here = os.path.join(here, part)
            with contextlib.suppress(FileExistsError):
                os.mkdir(here, 0o755)
            mode = os.lstat(here).st_mode
            if stat.S_ISLNK(mode):
                raise self.refuse(here, what=LINK)
            if not stat.S_ISDIR(mode):
                raise self.refuse(here, what=NOT_A_FOLDER)
        return path

    def replace(self, path: P, data: bytes, *, root: Where | None = None, mode: int = 0o644) -> P:
        """Write `data` to a new temporary sibling of `path`, then rename it over `path`."""
        self._write(path, data, root=root, mode=mode, unless_same=False)
        return path

    def update(
        self,
        path: Where,
        data: bytes,
        *,
        root: Where | None = None,
        mode: int = 0o644,
    ) -> bool:
        """`replace`, skipped (False) when `path` already holds exactly `data`, so that its
        time stamp stays and nothing watching it sees a change."""
        return self._write(path, data, root=root, mode=mode, unless_same=True)

    def create(self, path: P, data: bytes, *, root: Where | None = None, mode: int = 0o644) -> P:
        """Write `data` to `path`, which must not exist yet (FileExistsError; a link there is
        refused)."""
        shown = _text(path)
        name = os.path.basename(shown)
        with self._folder(os.path.dirname(shown), root) as dir_fd:
            try:
                fd = os.open(name, _NEW, mode, dir_fd=dir_fd)
            except FileExistsError:
                if stat.S_ISLNK(_mode(name, dir_fd) or 0):
                    raise self.refuse(shown, what=LINK) from None
                raise
            _fill(fd, data, name, dir_fd)
        return path

    def new_file(self, folder: str, prefix: str, *, root: Where | None = None) -> str:
        """The path of a new empty file in `folder` named `<prefix><random>.tmp`, made by us and
        nobody else: even a planted link by that name cannot make it another file."""
        with self._folder(folder, root) as dir_fd:
            return os.path.join(folder, _new(prefix, b"", dir_fd, 0o644))

    def append(self, path: Where, *, root: Where | None = None) -> BinaryIO:
        """Open `path` for appending, creating it; a link or anything but a regular file is
        refused."""
        return os.fdopen(self.open_plain(path, os.O_WRONLY | os.O_APPEND, root=root), "ab")

    def truncate(self, path: Where, *, root: Where | None = None) -> BinaryIO:
        """Open `path` empty for writing, creating it; a link or anything but a regular file
        is refused."""
        fd = self.open_plain(path, os.O_WRONLY, root=root)
        os.ftruncate(fd, 0)
        return os.fdopen(fd, "wb")

    def open_plain(
        self,
        path: Where,
        flags: int,
        *,
        root: Where | None = None,
    ) -> int:
        """Open (creating) the regular file `path` with `flags`; return its descriptor.

        `O_NONBLOCK` keeps a FIFO planted there from blocking the open; it is cleared once the
        file is known to be a regular one."""
        shown = _text(path)
        name = os.path.basename(shown)
        with self._folder(os.path.dirname(shown), root) as dir_fd:
            try:
                fd = os.open(name, flags | _IN_PLACE, 0o644, dir_fd=dir_fd)
            except OSError as e:
                # ELOOP: a link; ENXIO: a FIFO nobody reads (or a socket); EISDIR: a folder
                if e.errno in (errno.ELOOP, errno.ENXIO, errno.EISDIR):
                    found = _mode(name, dir_fd)
                    raise self.refuse(shown, what=LINK if found is None else kind(found)) from None
                raise
        found = os.fstat(fd).st_mode
        if not stat.S_ISREG(found):
            os.close(fd)
            raise self.refuse(shown, what=kind(found))
        os.set_blocking(fd, True)
        return fd

    def _write(
        self,
        path: Where,
        data: bytes,
        *,
        root: Where | None,
        mode: int,
        unless_same: bool,
    ) -> bool:
        shown = _text(path)
        name = os.path.basename(shown)
        with self._folder(os.path.dirname(shown), root) as dir_fd:
            found = _mode(name, dir_fd)
            if found is not None:
                if not stat.S_ISREG(found):
                    raise self.refuse(shown, what=kind(found))
                if unless_same and _holds(name, data, dir_fd):
                    return False
            tmp = _new(f".{name}.", data, dir_fd, mode)
            try:
                os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            finally:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp, dir_fd=dir_fd)
        return True

    @contextlib.contextmanager
    def _folder(self, folder: str, root: Where | None) -> Iterator[int]:
        """A descriptor of `folder` (the current one when empty). Below `root`, every folder
        on the way is checked (and made) and this one is never a link; `root` itself, or the
        folder when there is no root, is the caller's to trust."""
        folder = folder or os.curdir
        below = root is not None and os.path.abspath(folder) != os.path.abspath(root)
        if root is not None:
            self.folder(folder, root=root)
        try:
            fd = os.open(folder, _FOLDER | (os.O_NOFOLLOW if below else 0))
        except OSError as e:
            if below and os.path.islink(folder):
                raise self.refuse(folder, what=LINK) from e
            raise
        try:
            yield fd
        finally:
            os.close(fd)


def _text(path: Where) -> str:
    return os.fspath(path)


def _mode(name: str, folder: int) -> int | None:
    """The `lstat` mode of `name` in `folder`, or None when there is nothing by that name."""
    try:
        return os.lstat(name, dir_fd=folder).st_mode
    except FileNotFoundError:
        return None


def _holds(name: str, data: bytes, folder: int) -> bool:
    """Whether the regular file `name` in `folder` holds exactly `data`."""
    try:
        fd = os.open(name, _READ, dir_fd=folder)
    except FileNotFoundError:
        return False
    with os.fdopen(fd, "rb") as f:
        return stat.S_ISREG(os.fstat(fd).st_mode) and f.read(len(data) + 1) == data


def _new(prefix: str, data: bytes, folder: int, mode: int) -> str:
    """A new file `<prefix><random>.tmp` in `folder` holding `data`; its name."""
    while True:
        name = f"{prefix}{os.urandom(6).hex()}.tmp"
        try:
            fd = os.open(name, _NEW, mode, dir_fd=folder)
        except FileExistsError:  # a planted file (or link) by that name: pick another
            continue
        _fill(fd, data, name, folder)
        return name


def _fill(fd: int, data: bytes, name: str, folder: int) -> None:
    """Write `data` to the new file `fd` and close it; on any failure, remove it."""
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name, dir_fd=folder)
        raise
