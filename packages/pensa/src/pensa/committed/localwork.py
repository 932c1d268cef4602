"""What the database holds that the committed files lack: the work `pn import` would forget.

`pn import` replaces the database with the files. With loops claiming, the files did not yet
hold the newest claims, and an import handed 247 of 300 held tasks to a second loop. So the
import first counts, under its write lock, what it would throw away, and refuses unless told
to (`--discard-local`): an issue the files lack or hold in an older version (by
`updated_at`, which every change of an issue moves), a dependency edge, a comment or a
tombstone the files lack. An edge only the files have is new to the database, unless the
last sync's base had it too: then it was removed here. `pn export` first keeps it all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pensa.errors import Conflict
from pensa.models import ISSUE_FIELDS

if TYPE_CHECKING:
    import sqlite3

    from pensa.committed.contents import Contents

_ID, _UPDATED = ISSUE_FIELDS.index("id"), ISSUE_FIELDS.index("updated_at")


def unsaved(conn: sqlite3.Connection, contents: Contents) -> int:
    """How many records of the database an import of `contents` would lose or undo."""
    in_files = {row[_ID]: row[_UPDATED] for row in contents.issues.rows}
    in_db: dict[str, str] = dict(conn.execute("SELECT id, updated_at FROM issues").fetchall())
    # the usual case, files and database alike, is one comparison of the two; else each issue
    lost = 0
    if in_db != in_files:
        lost = sum(
            1
            for issue_id, updated in in_db.items()
            if issue_id not in in_files or updated > in_files[issue_id]
        )
    edges = set(conn.execute("SELECT issue_id, depends_on_id FROM deps").fetchall())
    edges_in_files = set(map(tuple, contents.deps.rows))
    lost += len(edges - edges_in_files)
    if edges_in_files - edges:  # removed here since the last sync, or new in the files?
        lost += len((edges_in_files - edges) & _base_edges(conn))
    comment_ids = {row[0] for row in contents.comments.rows}
    lost += sum(1 for (cid,) in conn.execute("SELECT id FROM comments") if cid not in comment_ids)
    dead = {row[0] for row in contents.tombstones.rows}
    lost += sum(1 for (tid,) in conn.execute("SELECT id FROM tombstones") if tid not in dead)
    return lost


def _base_edges(conn: sqlite3.Connection) -> set[tuple[str, ...]]:
    """The edges of the last sync's base (`pensa.committed.sync`), from every deps file."""
    from pensa.committed.disk import kind_of
    from pensa.committed.records import read_table

    edges: set[tuple[str, ...]] = set()
    for name, content in conn.execute("SELECT name, content FROM sync_base"):
        if kind_of(name) == "deps.jsonl" and content:
            label = f"(sync base) {name}"
            edges.update(map(tuple, read_table(bytes(content), "deps.jsonl", label=label).rows))
    return edges


def refuse_if_unsaved(conn: sqlite3.Connection, contents: Contents) -> None:
    """Raise `Conflict` when the import would lose or undo anything the database holds."""
    count = unsaved(conn, contents)
    if count:
        changes = "change" if count == 1 else "changes"
        raise Conflict(
            f"pn import would lose {count} {changes} in the database that .pensa/*.jsonl "
            "lack; run `pn export` first to keep them, or `pn import --discard-local` "
            "to drop them"
        )
