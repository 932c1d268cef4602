"""A database SQLite cannot read, set aside and rebuilt: `pn doctor --fix` and `pn import`.

The damaged file (or whatever stands where it belongs) is renamed, never deleted: it is the
only copy of what was never exported, and evidence of what happened to it.
"""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping
    from datetime import datetime

    from pensa.project import Project

# Where a damaged database is kept: `*.tmp` (and `*.tmp-journal`) are in every `.pensa/
# .gitignore` pensa ever wrote, so an agent's `git add -A` never commits the copy.
KEPT = "db.sqlite.damaged-{stamp}{n}.tmp"


def rebuild(project: Project, *, now: datetime, env: Mapping[str, str] | None = None) -> str:
    """Move the database (a file, or whatever stands in its place) and its journal aside
    under a git-ignored name, build a new one from the JSONL files (`pn import`'s rebuild),
    and say so (where the old one is). Only the database goes: every committed line is read
    back, and what it held that was never exported stays in the copy."""
    from pensa.committed import jsonl

    kept = move(project, now)
    summary = jsonl.import_(project, env)
    if summary is None:  # no committed files: start empty rather than fail on next use
        from pensa.store import Store

        Store.open(project.db).close()
        built = f"made a new, empty {project.db} (there are no committed JSONL files)"
    else:
        built = (
            f"rebuilt {project.db} from the committed JSONL: {summary.issues} issues, "
            f"{summary.deps} deps, {summary.comments} comments"
        )
    where = f"; the damaged one is kept as {kept}" if kept else ""
    never = "anything it held that was never exported is only there"
    return f"{built}{where} ({never})"


def move(project: Project, now: datetime) -> str | None:
    """Rename the database and its journal to a free `KEPT` name; that name, or None when
    there was nothing to move."""
    if not os.path.lexists(project.db):
        return None
    stamp = now.strftime("%Y%m%dT%H%M%SZ")
    n = 0
    while True:
        kept = os.path.join(project.dir, KEPT.format(stamp=stamp, n=f"-{n}" if n else ""))
        if not os.path.lexists(kept) and not os.path.lexists(kept + "-journal"):
            break
        n += 1
    os.rename(project.db, kept)
    with contextlib.suppress(FileNotFoundError):  # a hot journal belongs to the old file
        os.rename(project.db + "-journal", kept + "-journal")
    return kept
