"""Has the committed JSONL changed since the last sync? Asked by every `pn` command.

Kept apart from `committed.sync` so the question costs four `stat` calls and one indexed SELECT,
and no import of json or the merge code: `pn ready` must stay within 1.3x of
`python -c "import click"` (issue 8's benchmark), and `pensa.committed.sync` with its imports costs
about 6 ms of that.
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
