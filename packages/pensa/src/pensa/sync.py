"""The merging sync between the database and the committed JSONL (issue 8).

`pn import` used to replace the database with the JSONL, so a `git switch` or a
`git pull --rebase` silently dropped uncommitted issues and claims. Now every path that brings
JSONL into the database merges instead: the JSONL on disk ("theirs") and the database
("ours") are merged against the files as they were at the last sync ("base", kept in the
database's `sync_base` table, so it is written in the same transaction as the merge). The
rules live in `pensa.merge`.

It runs in the git hooks (post-checkout, post-merge, post-rewrite: `pn sync`), before every
export (so a hand edit or a hand-resolved conflict is never overwritten), and on any `pn`
command that finds the files changed since the last sync (four `stat` calls and one indexed
SELECT), so a repository whose hooks did not run (a host git with hooks off, a teammate
without pensa) still converges. It all happens inside one `BEGIN IMMEDIATE` transaction:
a concurrent `pn claim-next` sees the state before or after, never half of it.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, NamedTuple

from pensa.errors import InvalidData
from pensa.models import ISSUE_FIELDS
from pensa.snapshot import COMMENT_FIELDS, FILES, Snapshot, split_extra

if TYPE_CHECKING:
    import sqlite3

    from pensa.project import Project
    from pensa.store import Store

MISSING = "-"


class Synced(NamedTuple):
    """What a sync changed in the database."""

    added: int
    updated: int
    removed: int
    changed: bool

    def to_json(self) -> dict[str, int | bool]:
        """The JSON object of `pn sync --json`."""
        return {
            "added": self.added,
            "updated": self.updated,
            "removed": self.removed,
            "changed": self.changed,
        }


def fingerprint(path: str) -> str:
    """The file's identity for "changed since the last sync?": mtime, size, inode."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return MISSING
    except NotADirectoryError:
        return MISSING
    return f"{st.st_mtime_ns}:{st.st_size}:{st.st_ino}"


def fingerprints(project: Project) -> dict[str, str]:
    """Each committed file's fingerprint."""
    return {name: fingerprint(os.path.join(project.dir, name)) for name in FILES}


def read_files(project: Project) -> dict[str, bytes]:
    """The committed files' bytes (missing: empty); a directory in the way is an error."""
    out: dict[str, bytes] = {}
    for name in FILES:
        path = os.path.join(project.dir, name)
        try:
            with open(path, "rb") as f:
                out[name] = f.read()
        except FileNotFoundError:
            out[name] = b""
        except IsADirectoryError as e:
            raise InvalidData(f"{path} is a directory, not a JSONL file; move it away") from e
        except OSError as e:
            raise InvalidData(f"cannot read {path}: {e.strerror or e}") from e
    return out


def _base(conn: sqlite3.Connection) -> dict[str, tuple[bytes, str]]:
    return {
        name: (bytes(content), fp)
        for name, content, fp in conn.execute("SELECT name, content, fingerprint FROM sync_base")
    }


def is_stale(store: Store, project: Project) -> bool:
    """Whether any committed file changed (by fingerprint) since the last sync."""
    stored: dict[str, str] = dict(store.rows("SELECT name, fingerprint FROM sync_base"))
    current = fingerprints(project)
    if not stored:
        return any(fp != MISSING for fp in current.values())
    return any(stored.get(name, MISSING) != fp for name, fp in current.items())


def record_base(conn: sqlite3.Connection, files: dict[str, bytes], prints: dict[str, str]) -> None:
    """Remember `files` as the base of the next sync, inside the caller's transaction.

    Nothing is written when nothing changed, so a no-op export or `pn init` leaves the
    database file byte-identical."""
    wanted = {name: (files.get(name, b""), prints.get(name, MISSING)) for name in FILES}
    if _base(conn) == wanted:
        return
    conn.executemany(
        "INSERT OR REPLACE INTO sync_base (name, content, fingerprint) VALUES (?, ?, ?)",
        [(name, files.get(name, b""), prints.get(name, MISSING)) for name in FILES],
    )


def reconcile(conn: sqlite3.Connection, files: dict[str, bytes], prints: dict[str, str]) -> Synced:
    """Merge `files` (the JSONL on disk) into the database, inside the caller's transaction."""
    from pensa.merge import merge
    from pensa.snapshot import parse, read_db

    stored = _base(conn)
    if stored and all(stored.get(n, (b"", ""))[0] == files.get(n, b"") for n in FILES):
        if any(stored[n][1] != prints.get(n, MISSING) for n in stored):
            record_base(conn, files, prints)  # touched, not changed: only remember the stat
        return Synced(0, 0, 0, changed=False)
    theirs = parse(files)
    base = parse({n: content for n, (content, _) in stored.items()}, prefix="(sync base) ")
    ours = read_db(conn)
    result = merge(base, ours, theirs)
    done = apply(conn, ours, result)
    record_base(conn, files, prints)
    return done


def sync(store: Store, project: Project) -> Synced:
    """Merge the committed JSONL into the database (the hooks' `pn sync`)."""
    prints = fingerprints(project)
    files = read_files(project)
    with store.write() as conn:
        return reconcile(conn, files, prints)


def apply(conn: sqlite3.Connection, ours: Snapshot, result: Snapshot) -> Synced:
    """Change the database from `ours` to `result` with the fewest writes."""
    conn.execute("PRAGMA defer_foreign_keys = ON")  # a new issue may fix one added after it
    gone = [i for i in ours.issues if i not in result.issues]
    conn.executemany("DELETE FROM issues WHERE id = ?", [(i,) for i in gone])
    new = [r for i, r in result.issues.items() if i not in ours.issues]
    changed = [r for i, r in result.issues.items() if i in ours.issues and ours.issues[i] != r]
    columns = (*ISSUE_FIELDS, "extra")
    rows = []
    for record in sorted(new, key=lambda r: (r["created_at"], r["id"])):
        known, extra = split_extra(record, ISSUE_FIELDS)
        rows.append((*(known.get(k) for k in ISSUE_FIELDS), extra))
    conn.executemany(
        f"INSERT INTO issues ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
        rows,
    )
    updates = []
    for record in changed:
        known, extra = split_extra(record, ISSUE_FIELDS)
        updates.append((*(known.get(k) for k in ISSUE_FIELDS[1:]), extra, record["id"]))
    assignments = ", ".join(f"{c} = ?" for c in (*ISSUE_FIELDS[1:], "extra"))
    conn.executemany(f"UPDATE issues SET {assignments} WHERE id = ?", updates)
    conn.executemany(
        "DELETE FROM deps WHERE issue_id = ? AND depends_on_id = ?",
        [key for key in ours.deps if key not in result.deps],
    )
    conn.executemany(
        "INSERT OR REPLACE INTO deps (issue_id, depends_on_id, extra) VALUES (?, ?, ?)",
        [
            (*key, split_extra(record, ("issue_id", "depends_on_id"))[1])
            for key, record in result.deps.items()
            if ours.deps.get(key) != record
        ],
    )
    conn.executemany(
        "DELETE FROM comments WHERE id = ?",
        [(c,) for c in ours.comments if c not in result.comments],
    )
    comment_rows = []
    for cid, record in sorted(result.comments.items(), key=lambda kv: kv[1]["created_at"]):
        if ours.comments.get(cid) != record:
            known, extra = split_extra(record, COMMENT_FIELDS)
            comment_rows.append((*(known.get(k) for k in COMMENT_FIELDS), extra))
    conn.executemany(
        "INSERT OR REPLACE INTO comments (id, issue_id, actor, text, created_at, extra) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        comment_rows,
    )
    conn.executemany(
        "INSERT OR REPLACE INTO tombstones (id, deleted_at, extra) VALUES (?, ?, ?)",
        [
            (tid, record["deleted_at"], split_extra(record, ("id", "deleted_at"))[1])
            for tid, record in result.deleted.items()
            if ours.deleted.get(tid) != record
        ],
    )
    touched = (len(new) + len(changed) + len(gone)) > 0 or ours != result
    return Synced(len(new), len(changed), len(gone), changed=touched)


def write_files(project: Project, texts: dict[str, str]) -> dict[str, bytes]:
    """Write the committed files atomically (unchanged ones are not touched)."""
    from pathlib import Path

    from pensa.jsonl import write_atomically

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


def export(store: Store, project: Project) -> Snapshot:
    """Reconcile with the files on disk, then write the database out; one transaction.

    Holding the write lock from the first read to the last write gives the export one
    snapshot: a `pn create --dep X` committing meanwhile can no longer produce a deps.jsonl
    naming an issue missing from issues.jsonl."""
    from pensa.snapshot import read_db

    prints = fingerprints(project)
    files = read_files(project)
    with store.write() as conn:
        reconcile(conn, files, prints)
        snapshot = read_db(conn)
        written = write_files(project, snapshot.render())
        record_base(conn, written, fingerprints(project))
    return snapshot
