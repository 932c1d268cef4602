"""The git merge driver's file handling: three versions of one .pensa/*.jsonl file in, one out
(a shard, or a kind's own file: `committed.disk`).

git calls `pn merge-driver %O %A %B %P` for every path marked `merge=pensa` in
.gitattributes, in merges, rebases, cherry-picks and `stash pop`. The merged text is written
over %A (ours), where git expects it. A version that cannot be parsed (say, conflict
markers left by an earlier text merge) fails the driver with `file:line`, and git then
reports a conflict as it would without us: nothing is silently dropped.
"""

from __future__ import annotations

import os

from pensa.committed.disk import kind_of
from pensa.committed.snapshot import Snapshot, parse
from pensa.errors import InvalidArgument


def _kind(path: str, ours: str) -> str:
    """The kind of file merged (its shard does not matter: any record may be in it)."""
    for candidate in (path, ours):
        kind = kind_of(os.path.basename(candidate.strip("'\"")))
        if kind is not None:
            return kind
    raise InvalidArgument(
        f"cannot tell which pensa file {path or ours!r} is; pass its path as the 4th argument"
    )


def _read(path: str, name: str, label: str) -> Snapshot:
    from pensa.safefile import read_regular

    return parse({name: read_regular(path) or b""}, prefix=f"{label} ")


def merge_paths(base: str, ours: str, theirs: str, path: str = "") -> int:
    """Merge the three files into `ours`; return how many lines it now holds."""
    from pensa.committed.merge import merge_file
    from pensa.safefile import write_atomically

    name = _kind(path, ours)
    merged = merge_file(
        name,
        _read(base, name, "(base)"),
        _read(ours, name, "(ours)"),
        _read(theirs, name, "(theirs)"),
    )
    write_atomically(ours, merged)
    return merged.count("\n")
