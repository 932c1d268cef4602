"""Every file pensa writes, written one way: never through a link an agent planted.

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
"""

from __future__ import annotations

import contextlib
import os
import stat
from typing import TYPE_CHECKING

from pensa.errors import UnsafePath

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

# POSIX: pensa runs on Linux and macOS, where every one of these exists.
_NOFOLLOW = os.O_NOFOLLOW
_DIRECTORY = os.O_DIRECTORY
_CLOEXEC = os.O_CLOEXEC


def link_refusal(path: str) -> UnsafePath:
    """The one line that refuses a planted link."""
    return UnsafePath(
        f"{path} is a symbolic link; pensa never reads or writes through one (it may have been "
        "planted to redirect a write): remove it and run the command again (nothing was changed)"
    )


def refuse_links(paths: Iterable[str]) -> None:
    """Raise `UnsafePath` for the first of `paths` that is a symbolic link (missing is fine)."""
    for path in paths:
        with contextlib.suppress(FileNotFoundError, NotADirectoryError):
            if stat.S_ISLNK(os.lstat(path).st_mode):
                raise link_refusal(path)


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
        # O_NONBLOCK: a fifo planted by that name must not hang pn (no effect on a file)
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | _NOFOLLOW | _CLOEXEC, dir_fd=folder)
    except FileNotFoundError:
        return False
    with os.fdopen(fd, "rb") as f:
        return f.read(len(data) + 1) == data


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
                raise UnsafePath(
                    f"{os.path.join(folder, name)} is not a regular file; move it away and run "
                    "the command again (nothing was changed)"
                )
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
