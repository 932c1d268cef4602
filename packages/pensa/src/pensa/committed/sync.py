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

from pensa.committed import apply, pending, waiting
from pensa.committed import base as sync_base
from pensa.committed.apply import Diff, Synced
from pensa.committed.disk import (
    MISSING,
    changed,
    file_name,
    fingerprint,
    fingerprints,
    kind_of,
    read_files,
    write_files,
)
from pensa.committed.head import blob_id
from pensa.committed.records import Record
from pensa.committed.snapshot import Snapshot
from pensa.errors import InvalidData
from pensa.project import KINDS

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Mapping

    from pensa.committed.head import Head
    from pensa.project import Project
    from pensa.store import Store


NOTHING = Synced(0, 0, 0, changed=False)


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
    stored = sync_base.stored(conn)
    names = changed({n: b.fingerprint for n, b in stored.items()}, current)
    files = read_files(project, [n for n in names if n in current])
    files = {n: files.get(n, b"") for n in names}
    bases = sync_base.contents(conn, names)
    incoming = [
        n
        for n in names
        if files[n] != bases[n]
        and (stored.get(n) is None or stored[n].written != blob_id(files[n]))
    ]
    done = NOTHING
    if incoming:
        diff = _diff({n: bases[n] for n in incoming}, {n: files[n] for n in incoming})
        done, arrived = _merge_changes(conn, diff)
        waiting.take_in(conn, project, arrived, current, files)
    conn.executemany(
        "INSERT OR IGNORE INTO export_dirty (kind, key) VALUES ('file', ?)", [(n,) for n in names]
    )
    for name in names:
        sync_base.save(conn, name, fingerprint=current.get(name, MISSING))
    for name in incoming:  # what pn wrote there is gone: a later copy of it is news again
        sync_base.save(conn, name, written=(None,))
    if head is not None:
        sync_base.from_head(conn, project, head, env)
    else:
        for name in names:
            sync_base.save(conn, name, base=(None, files[name]))
    sync_base.forget_gone(conn)
    return done


def _diff(base: dict[str, bytes], theirs: dict[str, bytes]) -> Diff:
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
    return Diff(parse(old, prefix="(sync base) "), _parse_whole_on_error(theirs, new))


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
    known = parse(sync_base.contents(conn, names))
    here = Snapshot({}, {edge: {} for edge in edges}, {c: {"issue_id": i} for c, i in said}, {})
    return touched(known, here) & leaving


def _merge_changes(conn: sqlite3.Connection, diff: Diff) -> tuple[Synced, set[str]]:
    """Merge the changed lines into the database; what changed, and the issues that came in
    (new to the database)."""
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
    done = apply.apply(conn, ours, result_all)
    apply.edges(conn, diff)
    apply.comments(conn, diff)
    apply.clear_dangling_fixes(conn, set(result))
    return done, {i for i in result if i not in ours.issues}


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
        writeback.mark(project, pending=pending.settle(conn, project, {}))
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
        stored = {n: b.fingerprint for n, b in sync_base.stored(conn).items()}
        if changed(stored, current):  # something came in: ask git what HEAD holds
            reconcile(conn, project, current, head_tree(project, env), env)
        names = pending.dirty_files(conn)
        if names is None:
            texts = render_db(conn)
            texts.update({n: "" for n in current if n not in texts})
        else:
            texts = render_db(conn, sorted(names))
        texts = waiting.keep_on_disk(conn, project, texts, current)
        written = write_files(project, texts, existing=current)
        for name, data in written.items():
            printed = fingerprint(os.path.join(project.dir, name))
            base = None if git_base else (None, data)
            sync_base.save(conn, name, fingerprint=printed, base=base, written=(blob_id(data),))
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
