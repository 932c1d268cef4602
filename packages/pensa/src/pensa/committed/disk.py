"""The committed files on disk, one owner: their names, whether they changed since the last
sync, reading them and writing them.

The tracker is sharded by id: the records of issue `pn-1a2b3c4d` (the issue, its outgoing
dependencies, its comments, its tombstone) live in `issues-1.jsonl`, `deps-1.jsonl`,
`comments-1.jsonl` and `deleted-1.jsonl`, so a change rewrites, stages and merges a
sixteenth of the tracker, not all of it (a 38 MB `issues.jsonl` at 100,000 issues made every
commit in git cost an export and a `git add` of it). The id's first hex digit after `pn-` is
random (`pensa.ids`), so the shards fill evenly. Sixteen, not more: git runs the merge
driver once per file both sides changed, a process each, so a merge of two busy branches
costs about one driver run per shard; and a small tracker stays a few dozen files. The
files stay `.pensa/*.jsonl`, the pattern `pn init` gave `.gitattributes`, which an agent
cannot change.

Every shard file exists from the first export on, empty or not, and no file is ever
deleted. A file pn created and git did not track yet (after a commit a later hook aborted,
say) made `git switch` refuse ("untracked working tree files would be overwritten"), and a
deleted one conflicts (modify/delete) with a branch that changed it, outside the driver.

`issues.jsonl`, `deps.jsonl`, `comments.jsonl` and `deleted.jsonl`, the files of earlier
versions, are the shards of ids that are not `pn-` and a hex digit (written by hand), and
otherwise stay empty: a repository moves to the shards at its first export, and a branch
that still has the old layout merges into them through the driver as into any file (its
records, read from there, move to their shards at the next export).

`is_stale` is asked by every `pn` command: one listing of the folder, a `stat` of each of its
few dozen files and one SELECT, and neither json nor the merge code is imported (`pn ready`'s
start-up target in bench/bench_pensa.py).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

# The four kinds of record, named by the file of each that earlier versions committed, in
# the order they are written (`Project` owns the names). `deleted.jsonl` holds tombstones: a
# deletion must travel through git, or a clone that still has the issue would bring it back.
from pensa.project import KINDS

if TYPE_CHECKING:
    from collections.abc import Iterable

    from pensa.project import Project
    from pensa.store import Store

SHARDS = "0123456789abcdef"
# Written even when empty (`pn init` commits them; `deleted.jsonl` comes with a first
# deletion of an id that has no shard, or from an earlier version).
KEPT = (
    *KINDS[:3],
    *(f"{kind[: -len('.jsonl')]}-{part}.jsonl" for kind in KINDS for part in SHARDS),
)
MISSING = "-"
_HEX = frozenset("0123456789abcdef")
_STEMS = {kind[: -len(".jsonl")]: kind for kind in KINDS}


def shard(key: str) -> str:
    """The shard of an issue id: its hex digit after `pn-`, or "" (the kind's own file) for
    any other id. `pensa.committed.snapshot` asks SQLite the same with GLOB and ranges."""
    if key.startswith("pn-") and len(key) >= 4 and key[3] in _HEX:
        return key[3]
    return ""


def file_name(kind: str, key: str) -> str:
    """The file holding the record of `kind` keyed by issue id `key`."""
    part = shard(key)
    return f"{kind[: -len('.jsonl')]}-{part}.jsonl" if part else kind


def kind_of(name: str) -> str | None:
    """The kind (`KINDS`) of a committed file's name, or None for any other name."""
    if name in KINDS:
        return name
    stem, dash, rest = name.partition("-")
    if not dash or stem not in _STEMS or len(rest) != 7 or not rest.endswith(".jsonl"):
        return None
    return _STEMS[stem] if rest[0] in _HEX else None


def shard_of(name: str) -> str:
    """The shard a committed file holds ("" for a kind's own file)."""
    return "" if name in KINDS else name.partition("-")[2][:1]


def ordered(names: Iterable[str]) -> list[str]:
    """Committed file names by kind (`KINDS` order), each kind's own file first, then its
    shards: the order records are read in, so that a shard's copy wins over an old one."""
    return sorted(names, key=lambda n: (KINDS.index(kind_of(n) or KINDS[0]), n not in KINDS, n))


def fingerprint(path: str) -> str:
    """The file's identity for "changed since the last sync?": mtime, size, inode."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return MISSING
    return f"{st.st_mtime_ns}:{st.st_size}:{st.st_ino}"


def jsonl_files(project: Project) -> list[str]:
    """The committed files that exist (every shard of every kind), in reading order."""
    return [os.path.join(project.dir, n) for n in ordered(fingerprints(project))]


def has_files(project: Project) -> bool:
    """Whether any committed file exists (a fresh clone to import, say)."""
    return os.path.exists(project.issues_jsonl) or bool(jsonl_files(project))


def fingerprints(project: Project) -> dict[str, str]:
    """Each committed file on disk and its fingerprint (a link or FIFO by a committed name is
    listed too, and refused when read)."""
    out: dict[str, str] = {}
    try:
        entries = os.scandir(project.dir)
    except (FileNotFoundError, NotADirectoryError):
        return out
    with entries:
        for entry in entries:
            if kind_of(entry.name) is None:
                continue
            st = entry.stat(follow_symlinks=False)
            out[entry.name] = f"{st.st_mtime_ns}:{st.st_size}:{st.st_ino}"
    return out


def changed(stored: dict[str, str], current: dict[str, str]) -> list[str]:
    """The committed files whose fingerprint is not the one recorded, in reading order."""
    names = {n for n in (*stored, *current) if kind_of(n) is not None}
    return ordered(n for n in names if stored.get(n, MISSING) != current.get(n, MISSING))


def is_stale(store: Store, project: Project) -> bool:
    """Whether any committed file changed (by fingerprint) since the last sync."""
    stored: dict[str, str] = dict(store.rows("SELECT name, fingerprint FROM sync_base"))
    return bool(changed(stored, fingerprints(project)))


def read_file(project: Project, name: str) -> bytes:
    """One committed file's bytes (missing: empty); anything but a regular file, or one past
    `safefile.JSONL_MAX`, is refused without blocking (`safefile.read_regular`)."""
    from pensa.safefile import read_regular

    return read_regular(os.path.join(project.dir, name)) or b""


def read_files(project: Project, names: Iterable[str]) -> dict[str, bytes]:
    """The committed files' bytes (missing: empty), in reading order."""
    return {name: read_file(project, name) for name in ordered(names)}


def write_files(
    project: Project, texts: dict[str, str], *, existing: Iterable[str] = ()
) -> dict[str, bytes]:
    """Write the committed files atomically (`texts` by name); unchanged ones are not
    touched, and a file with nothing left in it is emptied, never deleted (`existing`: the
    files on disk). The shards and the kinds' own files (`KEPT`) are made, empty, when
    missing. Returns the bytes of each file written or found current."""
    from pensa.safefile import write_atomically

    project.ensure()
    on_disk = set(existing)
    wanted = {**{n: "" for n in KEPT if n not in on_disk}, **texts}
    out = {}
    for name in ordered(wanted):
        data = wanted[name]
        if not data and name not in KEPT and name not in on_disk:
            continue  # nothing in it, and no file to empty
        write_atomically(os.path.join(project.dir, name), data)
        out[name] = data.encode()
    return out
