"""The committed files on disk, one owner: which they are, whether they changed since the last
sync, reading them and writing them.

`is_stale` is asked by every `pn` command, so this module costs four `stat` calls and one
indexed SELECT and imports neither json nor the merge code (`pn ready`'s start-up target in
bench/bench_pensa.py). Writes go through `committed.files`, never through a planted link.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pensa.project import Project
    from pensa.store import Store

# The committed files, in the order they are written. `deleted.jsonl` holds tombstones: a
# deletion must travel through git, or a clone that still has the issue would bring it back.
FILES = ("issues.jsonl", "deps.jsonl", "comments.jsonl", "deleted.jsonl")
MISSING = "-"


def fingerprint(path: str) -> str:
    """The file's identity for "changed since the last sync?": mtime, size, inode."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return MISSING
    return f"{st.st_mtime_ns}:{st.st_size}:{st.st_ino}"


def fingerprints(project: Project) -> dict[str, str]:
    """Each committed file's fingerprint."""
    return {name: fingerprint(os.path.join(project.dir, name)) for name in FILES}


def is_stale(store: Store, project: Project) -> bool:
    """Whether any committed file changed (by fingerprint) since the last sync."""
    stored: dict[str, str] = dict(store.rows("SELECT name, fingerprint FROM sync_base"))
    current = fingerprints(project)
    if not stored:
        return any(fp != MISSING for fp in current.values())
    return any(stored.get(name, MISSING) != fp for name, fp in current.items())


def read_files(project: Project) -> dict[str, bytes]:
    """The committed files' bytes (missing: empty); a directory in the way is an error."""
    return {name: read_file(project, name) for name in FILES}


def read_file(project: Project, name: str) -> bytes:
    """One committed file's bytes (missing: empty); anything but a regular file, or one past
    `files.JSONL_MAX`, is refused without blocking (`committed.files.read_regular`)."""
    from pensa.committed.files import read_regular

    return read_regular(os.path.join(project.dir, name)) or b""


def write_files(project: Project, texts: dict[str, str]) -> dict[str, bytes]:
    """Write the committed files atomically (unchanged ones are not touched)."""
    from pathlib import Path

    from pensa.committed.files import write_atomically

    project.ensure()
    out = {}
    for name in FILES:
        data = texts[name]
        path = os.path.join(project.dir, name)
        if name == "deleted.jsonl" and not data and not os.path.exists(path):
            out[name] = b""  # no tombstones yet: no file to commit
            continue
        write_atomically(Path(path), data)
        out[name] = data.encode()
    return out
