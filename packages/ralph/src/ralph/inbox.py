"""What crosses from the sandbox: git objects in one bundle, checked as git checks a fetch.

The workspace's bundle (inside/workspace.sh) is a file the agent can write, so everything
about it is attacker input. It is opened without following a link and without blocking
(a FIFO planted there cannot hang ralph), must be a plain file under a size cap, and is read
as data: its header names the refs the sandbox offers and the commits it builds on; only the
refs ralph asked for are taken, each a plain commit id. Its pack goes to `git index-pack
--strict` in the project's own repository, which checks every object the way
`transfer.fsckObjects` checks a fetch (git's own fetch from a bundle does not), with a cap on
its size; then the new tips must be complete (`rev-list --objects`), and only then does a ref
the host owns (`refs/sgf/incoming/<loop>`) point at them. Nothing else crosses: no other ref,
no replace refs (every host git runs with them off), no reflog, no config, no hooks.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ralph import git
from ralph.errors import RalphError

SIGNATURE = b"# v2 git bundle\n"
MAX_HEADER = 64 * 1024
# Far more than an iteration's commits; a bundle past it is refused whole, never unpacked.
MAX_BUNDLE = 2 * 1024**3
_ID = re.compile(rb"[0-9a-f]{40}|[0-9a-f]{64}")


class CrossingRefused(RalphError):
    """The sandbox's bundle is not what it must be: nothing of it was taken."""

    code = "crossing_refused"


@dataclass(frozen=True, slots=True)
class Header:
    """A bundle's header: the commits it needs, and the refs it offers."""

    prerequisites: tuple[str, ...]
    refs: dict[str, str]  # ref name -> commit id
    size: int  # bytes before the pack


def parse_header(data: bytes) -> Header:
    """The header at the start of `data`; CrossingRefused when it is not a v2 bundle's."""
    if not data.startswith(SIGNATURE):
        raise CrossingRefused("not a git bundle (v2)")
    end = data.find(b"\n\n")
    if end < 0:
        raise CrossingRefused(f"the bundle's header is not ended within {MAX_HEADER} bytes")
    prerequisites: list[str] = []
    refs: dict[str, str] = {}
    for line in data[len(SIGNATURE) : end].split(b"\n"):
        if line.startswith(b"-"):
            ident = line[1:].split(b" ", 1)[0]
            if not _ID.fullmatch(ident):
                raise CrossingRefused("the bundle names a malformed prerequisite")
            prerequisites.append(ident.decode())
            continue
        ident, _, name = line.partition(b" ")
        well_formed = re.fullmatch(rb"refs/[A-Za-z0-9/_.-]{1,200}", name) and not re.search(
            rb"\.\.|//|/\.|/$|\.lock$", name
        )  # git check-ref-format's rules that matter here
        if not _ID.fullmatch(ident) or not well_formed:
            raise CrossingRefused("the bundle names a malformed ref")
        if name.decode() in refs:
            raise CrossingRefused(f"the bundle names {name.decode()} twice")
        refs[name.decode()] = ident.decode()
    return Header(tuple(prerequisites), refs, end + 2)


def _open(path: Path) -> int:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return -1
    except OSError as e:
        raise CrossingRefused(f"{path} cannot be opened as a plain file ({e.strerror})") from e
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise CrossingRefused(f"{path} is not a plain file")
    os.set_blocking(fd, True)
    return fd


def receive(
    repo: Path,
    bundle: Path,
    wanted: Mapping[str, str],
    *,
    env: Mapping[str, str] | None,
    max_bytes: int = MAX_BUNDLE,
) -> dict[str, str]:
    """Take the refs `wanted` names (bundle ref -> host ref) from `bundle` into `repo`.

    Returns host ref -> commit for each one the bundle held; {} when there is no bundle.
    Raises CrossingRefused, having taken nothing, when the bundle is not sound."""
    fd = _open(bundle)
    if fd < 0:
        return {}
    try:
        size = os.fstat(fd).st_size
        if size > max_bytes:
            raise CrossingRefused(
                f"the iteration's commits take {size} bytes, over the crossing's {max_bytes}"
            )
        header = parse_header(os.pread(fd, MAX_HEADER, 0))
        taken = {wanted[name]: ident for name, ident in header.refs.items() if name in wanted}
        if not taken:
            return {}
        missing = [p for p in header.prerequisites if not git.has_commit(repo, p, env=env)]
        if missing:
            raise CrossingRefused(
                f"the bundle builds on {missing[0][:12]}, which this repository does not have"
            )
        os.lseek(fd, header.size, os.SEEK_SET)
        packed = git.index_pack(repo, fd, max_bytes=max_bytes, env=env)
        if not packed.ok:
            lines = packed.stderr.strip().splitlines()
            raise CrossingRefused(
                "git refused the bundle's objects: " + (lines[-1] if lines else "no output")
            )
    finally:
        os.close(fd)
    for ident in taken.values():
        if not git.complete_commit(repo, ident, header.prerequisites, env=env):
            raise CrossingRefused(f"{ident[:12]} is not a complete commit")
    for ref, ident in taken.items():
        git.set_ref(repo, ref, ident, env=env)
    return taken
