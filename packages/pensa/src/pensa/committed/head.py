"""What the last commit holds of `.pensa/`: the base of the merging sync in a git repository.

The sync (`committed.sync`) merges the files on disk into the database against a base. That base
used to be the files as pensa last wrote them, so after a `pn export` (or the export of a
commit another hook then aborted) a file put back to its committed version (`git checkout --`,
`git restore`, `git reset --hard`, `git stash`) looked like a deletion of every issue, claim,
comment and dependency never committed: they were removed, with no tombstone. In a git work
tree the base is what HEAD holds instead: what exists only in the database is then never
in the base, so no way of throwing files away can look like its removal, while what a commit
held and a later checkout no longer holds still follows the checkout.

HEAD's files are listed with their object ids (`git ls-tree`, one process), and only those
whose id differs from the recorded base are read (`git cat-file --batch`, one more): a
commit that changed one shard costs one shard, at any size of the tracker.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, NamedTuple

from pensa.committed.disk import kind_of
from pensa.errors import InvalidData
from pensa.shared.hardgit import OPTIONS as HARDENED  # the repository's config runs nothing

if TYPE_CHECKING:
    from collections.abc import Collection, Mapping

    from pensa.project import Project


class Head(NamedTuple):
    """The committed files HEAD holds (none before the first commit): object id and size."""

    blobs: dict[str, tuple[str, int]]


def blob_id(data: bytes) -> str:
    """git's object id of a blob holding `data`."""
    import hashlib

    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def in_git(project: Project) -> bool:
    """Whether `project` sits at the top of a git work tree (its parent holds `.git`)."""
    return os.path.exists(os.path.join(os.path.dirname(project.dir), ".git"))


def head_tree(project: Project, env: Mapping[str, str] | None) -> Head | None:
    """The committed files in HEAD; None outside a git work tree or when no `env` is given
    (then the files on disk are the base)."""
    if env is None or not in_git(project):
        return None
    from pensa import git
    from pensa.safefile import JSONL_MAX

    done = git.run([*HARDENED, "ls-tree", "-z", "-l", "HEAD", "--", "./"], cwd=project.dir, env=env)
    if done.code != 0:  # no commit yet: HEAD holds nothing
        return Head({})
    blobs: dict[str, tuple[str, int]] = {}
    for entry in done.out.split("\0"):
        meta, tab, name = entry.partition("\t")
        fields = meta.split()
        if tab and len(fields) == 4 and fields[1] == "blob" and kind_of(name) is not None:
            if int(fields[3]) > JSONL_MAX:  # a commit can carry anything: never read it
                raise InvalidData(
                    f"{name} in HEAD is larger than {JSONL_MAX >> 20} MiB, more than pensa "
                    "reads from one file"
                )
            blobs[name] = (fields[2], int(fields[3]))
    return Head(blobs)


def read_blobs(project: Project, oids: Collection[str], env: Mapping[str, str]) -> dict[str, bytes]:
    """The contents of these blobs, by object id, in one `git cat-file --batch`."""
    if not oids:
        return {}
    from pensa import git

    done = git.run_with_input(
        [*HARDENED, "cat-file", "--batch"],
        "".join(f"{oid}\n" for oid in oids).encode(),
        cwd=project.dir,
        env=env,
    )
    out: dict[str, bytes] = {}
    data, at = done.raw_out, 0
    while at < len(data):
        end = data.index(b"\n", at)
        header = data[at:end].split()
        if len(header) != 3 or header[1] != b"blob":
            raise InvalidData(f"git cat-file could not read {header[0].decode()} from HEAD")
        size = int(header[2])
        out[header[0].decode()] = data[end + 1 : end + 1 + size]
        at = end + 1 + size + 1
    return out


def head_contents(
    project: Project,
    head: Head,
    env: Mapping[str, str],
    files: Mapping[str, bytes],
    known: Mapping[str, str],
) -> tuple[dict[str, bytes], dict[str, str]]:
    """Every committed file HEAD holds and its object id; `files` (already read, by name)
    stand for the blobs they are, so that git is asked only for the others. `known`: the
    object ids of some of `files`, which need no hashing."""
    have = {}
    for name, data in files.items():
        oid = head.blobs.get(name, ("", 0))[0]
        if oid and (known.get(name) == oid or (oid not in have and blob_id(data) == oid)):
            have[oid] = data
    blobs = read_blobs(project, {oid for oid, _ in head.blobs.values()} - set(have), env)
    blobs.update(have)
    return (
        {name: blobs[oid] for name, (oid, _) in head.blobs.items()},
        {name: oid for name, (oid, _) in head.blobs.items()},
    )
