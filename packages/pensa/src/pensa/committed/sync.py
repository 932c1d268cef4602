"""The merging sync between the database and the committed JSONL.

`pn import` used to replace the database with the JSONL, so a `git switch` or a
`git pull --rebase` silently dropped uncommitted issues and claims. Now every path that brings
JSONL into the database merges instead: the JSONL on disk ("theirs") and the database
("ours") are merged against the files as they were at the last sync ("base", kept in the
database's `sync_base` table, so it is written in the same transaction as the merge). The
rules live in `pensa.committed.merge`.

It runs in the git hooks (post-checkout, post-merge, post-rewrite: `pn sync`), before every
export (so a hand edit or a hand-resolved conflict is never overwritten), and on any `pn`
command that finds the files changed since the last sync (four `stat` calls and one indexed
SELECT), so a repository whose hooks did not run (a host git with hooks off, a teammate
without pensa) still converges. It all happens inside one `BEGIN IMMEDIATE` transaction:
a concurrent `pn claim-next` sees the state before or after, never half of it.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, NamedTuple

from pensa.committed.disk import FILES, MISSING, fingerprints, read_files, write_files
from pensa.committed.records import COMMENT_FIELDS, Record
from pensa.committed.snapshot import Snapshot, issue_row, split_extra
from pensa.errors import InvalidData
from pensa.models import ISSUE_FIELDS

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Mapping

    from pensa.project import Project
    from pensa.store import Store


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


def _base(conn: sqlite3.Connection) -> dict[str, tuple[bytes, str]]:
    return {
        name: (bytes(content), fp)
        for name, content, fp in conn.execute("SELECT name, content, fingerprint FROM sync_base")
    }


# Blobs are compared a slice at a time: reading a large issues.jsonl back whole made a
# second copy of it, page by page.
BLOB_SLICE = 1 << 20


def _base_is(conn: sqlite3.Connection, files: dict[str, bytes], prints: dict[str, str]) -> bool:
    """Whether the recorded base is exactly `files` with fingerprints `prints`."""
    stored = {
        name: (size, fp, rowid)
        for name, size, fp, rowid in conn.execute(
            "SELECT name, length(content), fingerprint, rowid FROM sync_base"
        )
    }
    wanted = {name: (files.get(name, b""), prints.get(name, MISSING)) for name in FILES}
    if {n: (size, fp) for n, (size, fp, _) in stored.items()} != {
        n: (len(data), fp) for n, (data, fp) in wanted.items()
    }:
        return False
    for name, (data, _) in wanted.items():
        with conn.blobopen("sync_base", "content", stored[name][2]) as blob:
            for start in range(0, len(data), BLOB_SLICE):
                # bytes against bytes: a memcmp (a memoryview compares byte by byte)
                if blob.read(BLOB_SLICE) != data[start : start + BLOB_SLICE]:
                    return False
    return True


def record_base(conn: sqlite3.Connection, files: dict[str, bytes], prints: dict[str, str]) -> None:
    """Remember `files` as the base of the next sync, inside the caller's transaction.

    Nothing is written when nothing changed, so a no-op export or `pn init` leaves the
    database file byte-identical."""
    if _base_is(conn, files, prints):
        return
    conn.executemany(
        "INSERT OR REPLACE INTO sync_base (name, content, fingerprint) VALUES (?, ?, ?)",
        [(name, files.get(name, b""), prints.get(name, MISSING)) for name in FILES],
    )


def reconcile(
    conn: sqlite3.Connection,
    files: dict[str, bytes],
    prints: dict[str, str],
    committed: dict[str, bytes] | None = None,
) -> Synced:
    """Merge `files` (the JSONL on disk) into the database, inside the caller's transaction;
    then `committed` (what HEAD holds, `pensa.committed.head`; None: the files) is the next base.

    Files whose fingerprints are the ones recorded are as pn last wrote or read them:
    nothing came in, and merging them against a committed base would bring back what was
    changed here since (an edge removed after the export that wrote it).

    Only the lines that differ from the base are parsed and merged: a record whose line is
    the same in the base and in the files merges to the database's own version (`committed.merge`:
    changed on our side only), so the cost follows the size of the change, not of the
    tracker (the hooks' target in bench/bench_pensa.py)."""
    stored = _base(conn)
    base_files = {n: content for n, (content, _) in stored.items()}
    nothing_came = stored and (
        all(stored.get(n, (b"", ""))[1] == prints.get(n, MISSING) for n in FILES)
        or all(base_files.get(n, b"") == files.get(n, b"") for n in FILES)
    )
    if nothing_came:
        # touched, not changed: only remember the stat (and what HEAD holds now)
        record_base(conn, files if committed is None else committed, prints)
        return Synced(0, 0, 0, changed=False)
    done = _merge_changes(conn, _diff(base_files, files), base_files)
    record_base(conn, files if committed is None else committed, prints)
    return done


def _base_contents(conn: sqlite3.Connection) -> dict[str, bytes]:
    return {n: content for n, (content, _) in _base(conn).items()}


class _Diff(NamedTuple):
    """The records whose lines differ between the base and the files on disk."""

    base: Snapshot  # the old versions (lines gone from the files)
    theirs: Snapshot  # the new versions (lines new in the files)


def _diff(base: dict[str, bytes], theirs: dict[str, bytes]) -> _Diff:
    from pensa.committed.snapshot import parse

    old: dict[str, bytes] = {}
    new: dict[str, bytes] = {}
    for name in FILES:
        before = set(base.get(name, b"").splitlines())
        after = theirs.get(name, b"").splitlines()
        kept = before.intersection(after)
        new[name] = b"\n".join(line for line in after if line not in kept)
        old[name] = b"\n".join(line for line in before if line not in kept)
    # Line numbers in errors would point into the diff, so name the whole file instead.
    return _Diff(parse(old, prefix="(sync base) "), _parse_whole_on_error(theirs, new))


def _parse_whole_on_error(files: dict[str, bytes], changed: dict[str, bytes]) -> Snapshot:
    from pensa.committed.snapshot import parse

    try:
        return parse(changed)
    except InvalidData:
        parse(files)  # raises with the file's real line number
        raise


def _worked_on(conn: sqlite3.Connection, leaving: set[str], base: dict[str, bytes]) -> set[str]:
    """The issues among `leaving` (gone from the files, unchanged here) that the database
    gave a comment or an edge the base lacks: uncommitted work, which keeps them."""
    if not leaving:
        return set()
    from pensa.committed.merge import touched
    from pensa.committed.snapshot import parse

    ids = json.dumps(sorted(leaving))
    within = "IN (SELECT value FROM json_each(?))"
    comments = conn.execute(f"SELECT id, issue_id FROM comments WHERE issue_id {within}", (ids,))
    said = comments.fetchall()
    edges = conn.execute(
        f"SELECT issue_id, depends_on_id FROM deps WHERE issue_id {within} OR depends_on_id "
        f"{within}",
        (ids, ids),
    ).fetchall()
    if not said and not edges:
        return set()
    known = parse(
        {n: base.get(n, b"") if n in ("comments.jsonl", "deps.jsonl") else b"" for n in FILES}
    )
    here = Snapshot({}, {edge: {} for edge in edges}, {c: {"issue_id": i} for c, i in said}, {})
    return touched(known, here) & leaving


def _merge_changes(conn: sqlite3.Connection, diff: _Diff, base_files: dict[str, bytes]) -> Synced:
    from pensa.committed.merge import merge_issues
    from pensa.committed.snapshot import read_issues

    touched = set(diff.base.issues) | set(diff.theirs.issues) | set(diff.theirs.deleted)
    ours = Snapshot(read_issues(conn, touched), {}, {}, {})
    known_dead = {
        row[0]
        for row in conn.execute(
            "SELECT id FROM tombstones WHERE id IN (SELECT value FROM json_each(?))",
            (json.dumps(sorted(touched)),),
        )
    }
    deleted: dict[str, Record] = {i: {} for i in (*diff.theirs.deleted, *known_dead)}
    leaving = {
        i
        for i, record in ours.issues.items()
        if i not in diff.theirs.issues and i not in deleted and diff.base.issues.get(i) == record
    }
    kept = _worked_on(conn, leaving, base_files)
    result = merge_issues(diff.base.issues, ours.issues, diff.theirs.issues, deleted, kept)
    result_all = Snapshot(
        {**result},
        {},
        {},
        {k: v for k, v in diff.theirs.deleted.items() if k not in known_dead},
    )
    conn.execute("PRAGMA defer_foreign_keys = ON")  # a new issue may fix one added after it
    done = apply(conn, ours, result_all)
    _apply_edges(conn, diff)
    _apply_comments(conn, diff)
    _clear_dangling_fixes(conn, set(result))
    return done


def _apply_edges(conn: sqlite3.Connection, diff: _Diff) -> None:
    """Edges: one removed in the files stays removed; one added is added if both ends exist
    and it closes no cycle (`pensa.committed.merge`: edges merge as a set against the base)."""
    gone = [k for k in diff.base.deps if k not in diff.theirs.deps]
    conn.executemany("DELETE FROM deps WHERE issue_id = ? AND depends_on_id = ?", gone)
    added = [(k, r) for k, r in diff.theirs.deps.items() if k not in diff.base.deps]
    if not added:
        return
    from pensa.cycles import find_cycles

    edges: dict[str, list[str]] = {}
    for child, parent in conn.execute("SELECT issue_id, depends_on_id FROM deps"):
        edges.setdefault(child, []).append(parent)
    exists = {
        row[0]
        for row in conn.execute(
            "SELECT id FROM issues WHERE id IN (SELECT value FROM json_each(?))",
            (json.dumps(sorted({end for key, _ in added for end in key})),),
        )
    }
    for (child, parent), record in sorted(added):
        if child not in exists or parent not in exists or parent in edges.get(child, []):
            continue
        edges.setdefault(child, []).append(parent)
        if find_cycles({c: list(p) for c, p in edges.items()}):
            edges[child].remove(parent)
            continue
        extra = split_extra(record, ("issue_id", "depends_on_id"))[1]
        conn.execute(
            "INSERT OR REPLACE INTO deps (issue_id, depends_on_id, extra) VALUES (?, ?, ?)",
            (child, parent, extra),
        )


def _apply_comments(conn: sqlite3.Connection, diff: _Diff) -> None:
    """Comments are a union by id: new ones are added to issues that exist."""
    rows = []
    for cid, record in sorted(diff.theirs.comments.items(), key=lambda kv: kv[1]["created_at"]):
        if cid in diff.base.comments:
            continue
        known, extra = split_extra(record, COMMENT_FIELDS)
        rows.append((*(known.get(k) for k in COMMENT_FIELDS), extra))
    conn.executemany(
        "INSERT OR IGNORE INTO comments (id, issue_id, actor, text, created_at, extra) "
        "SELECT ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM issues WHERE id = ?2)",
        rows,
    )


def _clear_dangling_fixes(conn: sqlite3.Connection, ids: set[str]) -> None:
    """A merged `fixes` that names no bug (deleted, or never here) is cleared."""
    conn.execute(
        "UPDATE issues SET fixes = NULL WHERE id IN (SELECT value FROM json_each(?)) "
        "AND fixes IS NOT NULL AND fixes NOT IN (SELECT id FROM issues WHERE issue_type = 'bug')",
        (json.dumps(sorted(ids)),),
    )


def sync(store: Store, project: Project, env: Mapping[str, str] | None = None) -> Synced:
    """Merge the committed JSONL into the database (the hooks' `pn sync`); with `env`, in a
    git work tree, against what HEAD held at the last sync (`pensa.committed.head`)."""
    from pensa.committed.head import head_files

    committed = head_files(project, env)
    with store.write() as conn:
        prints, files = _read_under_lock(project)
        return reconcile(conn, files, prints, committed)


def _read_under_lock(project: Project) -> tuple[dict[str, str], dict[str, bytes]]:
    """The files and their fingerprints, read while the caller holds the write lock.

    Read before taking it, they could predate another process's export that then recorded
    a newer base: merged against that base, the stale files looked like a checkout without
    the issues that export had just written, and those issues were deleted from the
    database and from the next export (two loops in one checkout lost a task this way).
    Fingerprints first: a file git rewrites in between then reads as changed next time."""
    prints = fingerprints(project)
    return prints, read_files(project)


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
        values, extra = issue_row(record)
        rows.append((*values, extra))
    conn.executemany(
        f"INSERT INTO issues ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
        rows,
    )
    updates = []
    for record in changed:
        values, extra = issue_row(record)
        updates.append((*values[1:], extra, record["id"]))
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


def export(store: Store, project: Project, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """Reconcile with the files on disk, then write the database out; one transaction.
    With `env`, in a git work tree, the base stays what HEAD holds (`pensa.committed.head`).

    Holding the write lock from the first read to the last write gives the export one
    snapshot: a `pn create --dep X` committing meanwhile can no longer produce a deps.jsonl
    naming an issue missing from issues.jsonl."""
    from pensa.committed.head import head_files, in_git
    from pensa.committed.snapshot import render_db

    git_base = env is not None and in_git(project)
    with store.write() as conn:
        prints = fingerprints(project)  # under the lock, as `_read_under_lock`
        if not is_fresh(conn, prints):  # something came in: ask git what HEAD holds
            reconcile(conn, read_files(project), prints, head_files(project, env))
        texts = render_db(conn)
        written = write_files(project, texts)
        # An export is no commit: in git the base stays what HEAD holds.
        record_base(conn, _base_contents(conn) if git_base else written, fingerprints(project))
    return texts


def is_fresh(conn: sqlite3.Connection, prints: dict[str, str]) -> bool:
    """Whether the files' fingerprints are the ones recorded: nothing came in since."""
    stored = dict(conn.execute("SELECT name, fingerprint FROM sync_base").fetchall())
    return bool(stored) and all(stored.get(n, MISSING) == prints.get(n, MISSING) for n in FILES)
