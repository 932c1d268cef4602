"""The merging sync between the database and the committed JSONL, and the export.

`pn import` used to replace the database with the JSONL, so a `git switch` or a
`git pull --rebase` silently dropped uncommitted issues and claims. Now every path that brings
JSONL into the database merges instead: the JSONL on disk ("theirs") and the database
("ours") are merged against the files as they were at the last sync ("base", kept in the
database's `sync_base` table, so it is written in the same transaction as the merge). The
rules live in `pensa.committed.merge`.

It runs in the git hooks (post-checkout, post-merge, post-rewrite: `pn sync`), before every
export (so a hand edit or a hand-resolved conflict is never overwritten), and on any `pn`
command that finds the files changed since the last sync (`disk.is_stale`), so a repository
whose hooks did not run (a host git with hooks off, a teammate without pensa) still
converges. It all happens inside one `BEGIN IMMEDIATE` transaction: a concurrent
`pn claim-next` sees the state before or after, never half of it.

Both cost what the change costs, not what the tracker holds: only files whose fingerprint
moved are read and merged, only the lines that differ from their base are parsed, and the
export writes only the shards the database changed since the last one (`export_dirty`,
kept by triggers on every table: `pensa.schema.m007_shards`).
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, NamedTuple

from pensa.committed.disk import (
    KINDS,
    MISSING,
    changed,
    file_name,
    fingerprint,
    fingerprints,
    kind_of,
    read_files,
    write_files,
)
from pensa.committed.records import COMMENT_FIELDS, Record
from pensa.committed.snapshot import Snapshot, issue_row, split_extra
from pensa.errors import InvalidData
from pensa.models import ISSUE_FIELDS

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Iterable, Mapping

    from pensa.committed.head import Head
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


NOTHING = Synced(0, 0, 0, changed=False)


class _Base(NamedTuple):
    """What sync_base remembers of one file (its content aside)."""

    fingerprint: str  # the file on disk at the last sync or export
    oid: str | None  # the base's git object id (in git: what HEAD held), if known
    written: str | None  # the object id of what pn last wrote there, while it stands


def blob_id(data: bytes) -> str:
    """git's object id of a blob holding `data`."""
    import hashlib

    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def _stored(conn: sqlite3.Connection) -> dict[str, _Base]:
    return {
        name: _Base(fp, oid, written)
        for name, fp, oid, written in conn.execute(
            "SELECT name, fingerprint, oid, written FROM sync_base"
        )
    }


def _contents(conn: sqlite3.Connection, names: Iterable[str]) -> dict[str, bytes]:
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


def _save(
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


# --- merging in what came -------------------------------------------------------------------


def reconcile(
    conn: sqlite3.Connection,
    project: Project,
    current: dict[str, str],
    head: Head | None,
    env: Mapping[str, str] | None,
) -> Synced:
    """Merge the files that changed on disk since the last sync (by fingerprint) into the
    database, inside the caller's transaction; then the base moves on to what HEAD holds
    (`head`; None: the files as read).

    A file whose fingerprint is the one recorded is as pn last wrote or read it: nothing came
    in from it. So is one holding exactly what pn last wrote there (a `git stash pop` of an
    export): merged against a committed base it would bring back what was changed here
    since. Every other changed file is compared with the database by the export (and by
    `settle`): it may now lack uncommitted work the database still holds."""
    stored = _stored(conn)
    names = changed({n: b.fingerprint for n, b in stored.items()}, current)
    files = read_files(project, [n for n in names if n in current])
    files = {n: files.get(n, b"") for n in names}
    bases = _contents(conn, names)
    incoming = [
        n
        for n in names
        if files[n] != bases[n]
        and (stored.get(n) is None or stored[n].written != blob_id(files[n]))
    ]
    done = NOTHING
    if incoming:
        diff = _diff({n: bases[n] for n in incoming}, {n: files[n] for n in incoming})
        done = _merge_changes(conn, diff)
    conn.executemany(
        "INSERT OR IGNORE INTO export_dirty (kind, key) VALUES ('file', ?)", [(n,) for n in names]
    )
    for name in names:
        _save(conn, name, fingerprint=current.get(name, MISSING))
    for name in incoming:  # what pn wrote there is gone: a later copy of it is news again
        _save(conn, name, written=(None,))
    if head is not None:
        _base_from_head(conn, project, head, env)
    else:
        for name in names:
            _save(conn, name, base=(None, files[name]))
    _forget_gone(conn)
    return done


def _base_from_head(
    conn: sqlite3.Connection, project: Project, head: Head, env: Mapping[str, str] | None
) -> None:
    """Make each file's base what HEAD holds, reading from git only what differs."""
    from pensa.committed.head import read_blobs

    stored = dict(conn.execute("SELECT name, oid FROM sync_base"))
    wanted = {name: oid for name, (oid, _) in head.blobs.items() if stored.get(name) != oid}
    blobs = read_blobs(project, set(wanted.values()), env or {})
    for name, oid in wanted.items():
        _save(conn, name, base=(oid, blobs[oid]))
    gone = [n for n, oid in stored.items() if n not in head.blobs and oid is not None]
    for name in gone:
        _save(conn, name, base=(None, b""))
    # a base that was the files (outside git, or an adopted export) and HEAD lacks
    conn.execute(
        "UPDATE sync_base SET content = x'' WHERE oid IS NULL AND length(content) > 0 "
        "AND name NOT IN (SELECT value FROM json_each(?))",
        (json.dumps(sorted(head.blobs)),),
    )


def _forget_gone(conn: sqlite3.Connection) -> None:
    conn.execute(
        "DELETE FROM sync_base WHERE fingerprint = ? AND oid IS NULL AND written IS NULL "
        "AND length(content) = 0",
        (MISSING,),
    )


class _Diff(NamedTuple):
    """The records whose lines differ between the base and the files on disk."""

    base: Snapshot  # the old versions (lines gone from the files)
    theirs: Snapshot  # the new versions (lines new in the files)


def _diff(base: dict[str, bytes], theirs: dict[str, bytes]) -> _Diff:
    """Line sets per kind, across its files: a record that moved unchanged from a kind's own
    file to its shard (an earlier version's layout) is no change."""
    from pensa.committed.snapshot import parse

    old: dict[str, bytes] = {}
    new: dict[str, bytes] = {}
    for kind in KINDS:
        before = {
            line for n, data in base.items() if kind_of(n) == kind for line in data.splitlines()
        }
        after = [
            line for n, data in theirs.items() if kind_of(n) == kind for line in data.splitlines()
        ]
        kept = before.intersection(after)
        new[kind] = b"\n".join(line for line in after if line not in kept)
        old[kind] = b"\n".join(line for line in before if line not in kept)
    # Line numbers in errors would point into the diff, so name the whole file instead.
    return _Diff(parse(old, prefix="(sync base) "), _parse_whole_on_error(theirs, new))


def _parse_whole_on_error(files: dict[str, bytes], changed: dict[str, bytes]) -> Snapshot:
    from pensa.committed.snapshot import parse

    try:
        return parse(changed)
    except InvalidData:
        parse(files)  # raises with the file's real line number
        raise


def _worked_on(conn: sqlite3.Connection, leaving: set[str]) -> set[str]:
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
    names = {file_name("comments.jsonl", i) for _, i in said}
    names |= {file_name("deps.jsonl", child) for child, _ in edges}
    known = parse(_contents(conn, names))
    here = Snapshot({}, {edge: {} for edge in edges}, {c: {"issue_id": i} for c, i in said}, {})
    return touched(known, here) & leaving


def _merge_changes(conn: sqlite3.Connection, diff: _Diff) -> Synced:
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
    kept = _worked_on(conn, leaving)
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
    """Comments follow the files as issues do: a new one is added to an issue that exists,
    and one the base had and the files lost (a checkout of a branch without it) goes. One
    never committed is in no base, so it stays wherever the checkout goes."""
    gone = [(cid,) for cid in diff.base.comments if cid not in diff.theirs.comments]
    conn.executemany("DELETE FROM comments WHERE id = ?", gone)
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


def apply(conn: sqlite3.Connection, ours: Snapshot, result: Snapshot) -> Synced:
    """Change the database from `ours` to `result` with the fewest writes."""
    conn.execute("PRAGMA defer_foreign_keys = ON")  # a new issue may fix one added after it
    gone = [i for i in ours.issues if i not in result.issues]
    conn.executemany("DELETE FROM issues WHERE id = ?", [(i,) for i in gone])
    new = [r for i, r in result.issues.items() if i not in ours.issues]
    changed_ = [r for i, r in result.issues.items() if i in ours.issues and ours.issues[i] != r]
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
    for record in changed_:
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
    touched = (len(new) + len(changed_) + len(gone)) > 0 or ours != result
    return Synced(len(new), len(changed_), len(gone), changed=touched)


# --- what the database holds that the files lack ----------------------------------------------


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

    names = dirty_files(conn)
    if names is None:
        return True
    if not names:
        return False
    texts = render_db(conn, sorted(names))
    on_disk = {**read_files(project, [n for n in names if n not in read]), **read}
    clean = {n for n in names if texts[n].encode() == on_disk.get(n, b"")}
    keys = [
        (kind, key)
        for kind, key in conn.execute("SELECT kind, key FROM export_dirty")
        if (key if kind == "file" else file_name(f"{kind}.jsonl", key)) in clean
    ]
    conn.executemany("DELETE FROM export_dirty WHERE kind = ? AND key = ?", keys)
    return len(clean) < len(names)


# --- the two entries ------------------------------------------------------------------------


def sync(store: Store, project: Project, env: Mapping[str, str] | None = None) -> Synced:
    """Merge the committed JSONL into the database (the hooks' `pn sync`); with `env`, in a
    git work tree, against what HEAD held at the last sync (`pensa.committed.head`)."""
    from pensa.committed import writeback
    from pensa.committed.head import head_tree

    head = head_tree(project, env)
    with store.write() as conn:
        # Fingerprints under the lock, before reading: read before taking it, the files
        # could predate another process's export that then recorded a newer base, and look
        # like a checkout without the issues that export had just written (two loops in
        # one checkout lost a task this way); a file git rewrites meanwhile reads as
        # changed next time.
        current = fingerprints(project)
        done = reconcile(conn, project, current, head, env)
        writeback.mark(project, pending=settle(conn, project, {}))
    return done


def export(store: Store, project: Project, env: Mapping[str, str] | None = None) -> Counts:
    """Reconcile with the files on disk, then write out what the database changed since the
    last export; one transaction. With `env`, in a git work tree, the base stays what HEAD
    holds (`pensa.committed.head`): an export is no commit.

    Holding the write lock from the first read to the last write gives the export one
    snapshot: a `pn create --dep X` committing meanwhile can no longer produce a deps file
    naming an issue missing from the issues files."""
    from pensa.committed import writeback
    from pensa.committed.head import head_tree, in_git
    from pensa.committed.snapshot import render_db

    git_base = env is not None and in_git(project)
    with store.write() as conn:
        current = fingerprints(project)
        stored = {n: b.fingerprint for n, b in _stored(conn).items()}
        if changed(stored, current):  # something came in: ask git what HEAD holds
            reconcile(conn, project, current, head_tree(project, env), env)
        names = dirty_files(conn)
        if names is None:
            texts = render_db(conn)
            texts.update({n: "" for n in current if n not in texts})
        else:
            texts = render_db(conn, sorted(names))
        written = write_files(project, texts, existing=current)
        for name, data in written.items():
            printed = fingerprint(os.path.join(project.dir, name))
            base = None if git_base else (None, data)
            _save(conn, name, fingerprint=printed, base=base, written=(blob_id(data),))
        if names is None or names:  # (an empty DELETE would still write the table's page)
            conn.execute("DELETE FROM export_dirty")
        writeback.mark(project, pending=False)
        return counts(conn)


class Counts(NamedTuple):
    """How many issues, dependencies and comments the tracker holds."""

    issues: int
    deps: int
    comments: int


def counts(conn: sqlite3.Connection) -> Counts:
    """The tracker's size, as the files hold it after an export."""
    row = conn.execute(
        "SELECT (SELECT count(*) FROM issues), (SELECT count(*) FROM deps), "
        "(SELECT count(*) FROM comments)"
    ).fetchone()
    return Counts(*row)


def set_base(
    conn: sqlite3.Connection,
    project: Project,
    base: dict[str, bytes],
    prints: dict[str, str],
    oids: dict[str, str] | None = None,
    written: dict[str, str] | None = None,
) -> None:
    """Replace the recorded state of every file: `base` (by name) is the next sync's base,
    `prints` the files' fingerprints (`oids`: the base's git object ids, when known;
    `written`: the object ids of files on disk that are the database's own)."""
    oids, written = oids or {}, written or {}
    conn.execute("DELETE FROM sync_base")
    conn.executemany(
        "INSERT INTO sync_base (name, fingerprint, oid, written, content) VALUES (?, ?, ?, ?, ?)",
        [
            (
                name,
                prints.get(name, MISSING),
                oids.get(name),
                written.get(name),
                base.get(name, b""),
            )
            for name in sorted(set(base) | set(prints))
        ],
    )
