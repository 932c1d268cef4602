"""What the database changed since the last export, one owner: `export_dirty`, which triggers
on every table fill (`pensa.schema.m007_shards`), read as the committed files to render.

The export writes exactly these files; `settle` forgets the ones the files already hold (a sync
that took them in, a write undone), so that pensa's marker (`committed.writeback`) says only
what is still to commit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pensa.committed.disk import file_name, read_files

if TYPE_CHECKING:
    import sqlite3

    from pensa.project import Project


def dirty_files(conn: sqlite3.Connection) -> set[str] | None:
    """The files the database changed since the last export (None: every file)."""
    out: set[str] = set()
    for kind, key in conn.execute("SELECT kind, key FROM export_dirty"):
        if kind == "all":
            return None
        out.add(key if kind == "file" else file_name(f"{kind}.jsonl", key))
    return out


def settle(conn: sqlite3.Connection, project: Project, read: dict[str, bytes]) -> bool:
    """Forget the changes the files already hold (a sync that took them in, or a write
    undone); whether the database still holds any they lack. `read`: files already read."""
    from pensa.committed.snapshot import render_db
    from pensa.committed.waiting import keep

    names = dirty_files(conn)
    if names is None:
        return True
    if not names:
        return False
    on_disk = {**read_files(project, [n for n in names if n not in read]), **read}
    texts = keep(conn, render_db(conn, sorted(names)), on_disk)
    clean = {n for n in names if texts[n].encode() == on_disk.get(n, b"")}
    keys = [
        (kind, key)
        for kind, key in conn.execute("SELECT kind, key FROM export_dirty")
        if (key if kind == "file" else file_name(f"{kind}.jsonl", key)) in clean
    ]
    conn.executemany("DELETE FROM export_dirty WHERE kind = ? AND key = ?", keys)
    return len(clean) < len(names)
