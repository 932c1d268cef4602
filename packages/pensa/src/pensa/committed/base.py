"""The sync base, one owner: what each committed file was at the last sync (in git: what HEAD
held, `committed.head`), its fingerprint on disk then, and what pn last wrote there.

The merging sync (`committed.sync`) diffs a changed file against its base; the base moves on
to HEAD's copy after every sync, reading from git only the files whose object id changed.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, NamedTuple

from pensa.committed.disk import MISSING

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Iterable, Mapping

    from pensa.committed.head import Head
    from pensa.project import Project


class Base(NamedTuple):
    """What sync_base remembers of one file (its content aside)."""

    fingerprint: str  # the file on disk at the last sync or export
    oid: str | None  # the base's git object id (in git: what HEAD held), if known
    written: str | None  # the object id of what pn last wrote there, while it stands


def stored(conn: sqlite3.Connection) -> dict[str, Base]:
    """Every file's row, by name (contents left in the database)."""
    return {
        name: Base(fp, oid, written)
        for name, fp, oid, written in conn.execute(
            "SELECT name, fingerprint, oid, written FROM sync_base"
        )
    }


def contents(conn: sqlite3.Connection, names: Iterable[str]) -> dict[str, bytes]:
    """The recorded base of these files (none recorded: empty)."""
    wanted = sorted(set(names))
    found = {
        name: bytes(content)
        for name, content in conn.execute(
            "SELECT name, content FROM sync_base WHERE name IN (SELECT value FROM json_each(?))",
            (json.dumps(wanted),),
        )
    }
    return {name: found.get(name, b"") for name in wanted}


def save(
    conn: sqlite3.Connection,
    name: str,
    *,
    fingerprint: str | None = None,
    base: tuple[str | None, bytes] | None = None,
    written: tuple[str | None] | None = None,
) -> None:
    """Update one file's row: its fingerprint, its base (oid, content), what pn wrote. What
    is already so is not written again: a no-op export leaves the database file as it was."""
    conn.execute(
        "INSERT OR IGNORE INTO sync_base (name, fingerprint, content) VALUES (?, ?, x'')",
        (name, MISSING),
    )
    if fingerprint is not None:
        conn.execute(
            "UPDATE sync_base SET fingerprint = ?1 WHERE name = ?2 AND fingerprint IS NOT ?1",
            (fingerprint, name),
        )
    if base is not None:
        conn.execute(
            "UPDATE sync_base SET oid = ?1, content = ?2 WHERE name = ?3 "
            "AND (oid IS NOT ?1 OR content IS NOT ?2)",
            (base[0], base[1], name),
        )
    if written is not None:
        conn.execute(
            "UPDATE sync_base SET written = ?1 WHERE name = ?2 AND written IS NOT ?1",
            (written[0], name),
        )


def from_head(
    conn: sqlite3.Connection, project: Project, head: Head, env: Mapping[str, str] | None
) -> None:
    """Make each file's base what HEAD holds, reading from git only what differs."""
    from pensa.committed.head import read_blobs

    stored = dict(conn.execute("SELECT name, oid FROM sync_base"))
    wanted = {name: oid for name, (oid, _) in head.blobs.items() if stored.get(name) != oid}
    blobs = read_blobs(project, set(wanted.values()), env or {})
    for name, oid in wanted.items():
        save(conn, name, base=(oid, blobs[oid]))
    gone = [n for n, oid in stored.items() if n not in head.blobs and oid is not None]
    for name in gone:
        save(conn, name, base=(None, b""))
    # a base that was the files (outside git, or an adopted export) and HEAD lacks
    conn.execute(
        "UPDATE sync_base SET content = x'' WHERE oid IS NULL AND length(content) > 0 "
        "AND name NOT IN (SELECT value FROM json_each(?))",
        (json.dumps(sorted(head.blobs)),),
    )


def forget_gone(conn: sqlite3.Connection) -> None:
    """Drop the rows of files that are gone from disk and from HEAD, and hold nothing."""
    conn.execute(
        "DELETE FROM sync_base WHERE fingerprint = ? AND oid IS NULL AND written IS NULL "
        "AND length(content) = 0",
        (MISSING,),
    )


def replace(
    conn: sqlite3.Connection,
    base: dict[str, bytes],
    prints: dict[str, str],
    oids: dict[str, str] | None = None,
    written: dict[str, str] | None = None,
) -> None:
    """Replace the recorded state of every file: `base` (by name) is the next sync's base,
    `prints` the files' fingerprints (`oids`: the base's git object ids, when known;
    `written`: the object ids of files on disk that are the database's own)."""
    oids, written = oids or {}, written or {}
    names = sorted(set(base) | set(prints))
    conn.execute(
        "DELETE FROM sync_base WHERE name NOT IN (SELECT value FROM json_each(?))",
        (json.dumps(names),),
    )
    # A row already as wanted is left alone: an import rewrote every file's whole content
    # (tens of MB at 100k issues) though most files had not changed.
    conn.executemany(
        "INSERT INTO sync_base (name, fingerprint, oid, written, content) VALUES (?, ?, ?, ?, ?) "
        "ON CONFLICT (name) DO UPDATE SET fingerprint = excluded.fingerprint, "
        "oid = excluded.oid, written = excluded.written, content = excluded.content "
        "WHERE (fingerprint, oid, written, content) "
        "IS NOT (excluded.fingerprint, excluded.oid, excluded.written, excluded.content)",
        [
            (
                name,
                prints.get(name, MISSING),
                oids.get(name),
                written.get(name),
                base.get(name, b""),
            )
            for name in names
        ],
    )
