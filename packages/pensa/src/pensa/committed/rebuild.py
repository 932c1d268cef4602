"""`pn import`: the database rebuilt from the JSONL files, all or nothing.

Every line is checked inside one write transaction that then replaces the database's
contents, so a bad line leaves the database exactly as it was; events of issues that still
exist are kept. Unknown fields go to each row's `extra` column.

The import has a target in bench/bench_pensa.py (100k issues). What each step buys is noted
where it is spent: the files are read once, on short paths, into checked rows
(`committed.records`, `committed.contents`), which go in 200 to a statement, in a transaction
with settings only a rebuild of already-checked data can afford (`_REBUILD_PRAGMAS`), while
the garbage collector waits and a second thread frees the records as SQLite finishes.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sqlite3
import threading
import time
from itertools import chain
from operator import itemgetter
from typing import TYPE_CHECKING, Any, NamedTuple

from pensa.blocked import MARK_ALL
from pensa.committed import base as sync_base
from pensa.committed.contents import Contents, read_contents
from pensa.committed.disk import fingerprints
from pensa.committed.localwork import refuse_if_unsaved
from pensa.committed.records import COMMENT_FIELDS, DEP_FIELDS, TOMBSTONE_FIELDS, Table
from pensa.committed.snapshot import split_extra
from pensa.errors import StorageError
from pensa.models import ISSUE_FIELDS, LIST_FIELDS, encode_list
from pensa.safefile import new_file
from pensa.shared import process
from pensa.store import Store

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

    from pensa.committed.head import Head
    from pensa.project import Project

Row = tuple[Any, ...]


class Imported(NamedTuple):
    """How many records the import wrote, and how many events it kept."""

    issues: int
    deps: int
    comments: int
    events_kept: int


class Committed(NamedTuple):
    """What HEAD holds (`committed.head`), to become the next sync's base."""

    head: Head
    env: Mapping[str, str]


def rebuild(
    project: Project, *, committed: Committed | None = None, discard_local: bool = False
) -> Imported:
    """Replace the database's issues, deps, comments and tombstones with the files' ones.

    The write lock is taken first and held from the first read of the files to the last
    insert: a concurrent write either lands before (and is replaced, as `import` means) or
    waits and lands in the rebuilt database, never in a file that is about to vanish (the
    old temp-file swap acknowledged such writes and then lost them). A write that landed
    before and that the files lack is refused unless `discard_local` (`pensa.committed.localwork`).
    `committed` (what HEAD holds) becomes the next sync's base, else the files. Only a
    database too damaged to open is rebuilt beside it and swapped in.
    """
    with _no_collection():
        return _rebuild(project, committed, discard_local=discard_local)


def _rebuild(project: Project, committed: Committed | None, *, discard_local: bool) -> Imported:
    try:
        store = Store.open(project.db)
    except StorageError:
        return _rebuild_damaged(project)
    with (
        store,
        contextlib.ExitStack() as meanwhile,
        _rebuild_settings(store.conn),
        store.write() as conn,
    ):
        prints = fingerprints(project)  # under the lock, as sync reads (pensa.committed.sync)
        known = _known_blobs(conn, prints) if committed is not None else {}
        contents = read_contents(project, prints)
        if not discard_local:
            refuse_if_unsaved(conn, contents)
        files, counts = contents.files, contents.counts()
        with _rebuilt(conn, ("comments", "deps", "tombstones", "issues"), "trigger"):
            for table in ("comments", "deps", "tombstones", "issues"):
                conn.execute(f"DELETE FROM {table}")
            with _rebuilt(conn, ("issues", "deps", "comments", "tombstones"), "index"):
                _insert(conn, contents)
                garbage = [contents]  # the last reference to the records, now written
                del contents
                meanwhile.enter_context(_freed_meanwhile(garbage))
            # What `pensa.blocked`'s triggers, dropped meanwhile, would have kept; set once
            # the indexes it reads are back (few rows of the ready index hold a flag to set).
            conn.execute(MARK_ALL)
        conn.execute("DELETE FROM events WHERE issue_id NOT IN (SELECT id FROM issues)")
        events_kept = conn.execute("SELECT count(*) FROM events").fetchone()[0]
        _after_import(conn, project, files, prints, committed, known)
    return Imported(*counts, events_kept)


def _known_blobs(conn: sqlite3.Connection, prints: dict[str, str]) -> dict[str, str]:
    """The object ids of the files pn wrote and nobody touched since (their fingerprint is
    the one recorded): they need no hashing to be found in HEAD."""
    return {
        name: written
        for name, fingerprint, written in conn.execute(
            "SELECT name, fingerprint, written FROM sync_base WHERE written IS NOT NULL"
        )
        if prints.get(name) == fingerprint
    }


def _after_import(
    conn: sqlite3.Connection,
    project: Project,
    files: dict[str, bytes],
    prints: dict[str, str],
    committed: Committed | None,
    known: dict[str, str] | None = None,
) -> None:
    """The base is what HEAD holds (`committed`), else the files; and every file is compared
    with the database at the next export (`export_dirty`'s `all`): the records are the
    files', their text need not be the canonical one."""
    if committed is None:
        sync_base.replace(conn, files, prints)
    else:
        from pensa.committed.head import head_contents

        base, oids = head_contents(project, committed.head, committed.env, files, known or {})
        same = {n: oids[n] for n in files if n in base and base[n] == files[n]}
        sync_base.replace(conn, base, prints, oids, written=same)
    conn.execute("DELETE FROM export_dirty")
    conn.execute("INSERT INTO export_dirty (kind, key) VALUES ('all', '')")


# --- writing ------------------------------------------------------------------------------


@contextlib.contextmanager
def _no_collection() -> Iterator[None]:
    """Hold off Python's cyclic garbage collector while the records are built and used. They
    are plain dicts of strings (no cycles to find), but each new batch of them started
    another pass over all the earlier ones.
    Leave it only once they are gone: the first collection after it would walk them all."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@contextlib.contextmanager
def _freed_meanwhile(garbage: list[Contents]) -> Iterator[None]:
    """Free what `garbage` holds (its last references) on a second thread until the block
    ends: freeing the records is Python work, while building the indexes and committing
    happen inside SQLite, which lets go of the GIL meanwhile; with a second core free, the
    freeing costs next to nothing.

    The thread frees a slice of each list at a time and lets go of the GIL after each
    (`time.sleep(0)`). One `clear()` of a list is a single call that keeps the GIL until its
    last record is gone: the main thread, which needs the GIL between SQLite's statements and
    to start the thread at all, waited for the whole of it."""
    parts = [
        part
        for contents in garbage
        for table in (contents.issues, contents.deps, contents.comments, contents.tombstones)
        for part in (table.records, table.rows)
    ]
    garbage.clear()
    thread = threading.Thread(target=_free, args=(parts,), name="pensa-import-free")
    thread.start()
    try:
        yield
    finally:
        thread.join()


FREED_AT_ONCE = 500  # records or rows a slice: a fraction of a millisecond with the GIL


def _free(parts: list[list[Any]]) -> None:
    while parts:
        part = parts.pop()
        while part:
            del part[-FREED_AT_ONCE:]
            time.sleep(0)  # lets go of the GIL: the main thread may be waiting for it


# The rebuild's own connection settings, set before its transaction (SQLite ignores
# `foreign_keys` inside one) and put back after it. None of them weakens the all-or-nothing
# commit: the rollback journal and `synchronous` stay as they are. (Figures: the whole
# import of 100k issues and 50k deps with the setting left at its default.)
_REBUILD_PRAGMAS = {
    # `pensa.committed.contents` has already proven every reference (deps, comments, fixes), so
    # SQLite need not look them up again, four child tables for each issue deleted and the
    # parents of each row inserted; off, `DELETE FROM issues` just drops the table's pages.
    "foreign_keys": 0,
    # Likewise the CHECK constraints (the three vocabularies, no self-dependency), each an
    # IN list tested per row. NOT NULL and UNIQUE stay on; tests/committed/test_rebuild.py
    # fails when the schema gains a CHECK the import does not make itself.
    "ignore_check_constraints": 1,
    # Changed pages stay in memory until COMMIT instead of being spilled to
    # the file once the cache is full: each spill waits for an fsync of the journal (slow
    # on a busy disk) and takes
    # SQLite's EXCLUSIVE lock early, shutting readers out for the rest of the import.
    "cache_spill": 0,
    # The sorts that build each index again after the rows are in stay in memory rather than
    # in temporary files.
    "temp_store": 2,
}


@contextlib.contextmanager
def _rebuild_settings(conn: sqlite3.Connection) -> Iterator[None]:
    saved = {name: conn.execute(f"PRAGMA {name}").fetchone()[0] for name in _REBUILD_PRAGMAS}
    for name, value in _REBUILD_PRAGMAS.items():
        conn.execute(f"PRAGMA {name} = {value}")
    try:
        yield
    finally:
        for name, value in saved.items():
            conn.execute(f"PRAGMA {name} = {value}")


@contextlib.contextmanager
def _rebuilt(conn: sqlite3.Connection, tables: tuple[str, ...], kind: str) -> Iterator[None]:
    """Drop the tables' own indexes (or triggers), and create them again after the block,
    inside the caller's transaction. Indexes: one sort each instead of updating each one row
    by row while 100k rows go in. Triggers: the export's notes of every row written
    (`export_dirty`), which an import replaces with one note for all. A failure rolls the
    drop back too."""
    marks = ", ".join("?" * len(tables))
    found = conn.execute(
        f"SELECT name, sql FROM sqlite_master WHERE type = ? AND sql IS NOT NULL "
        f"AND tbl_name IN ({marks}) ORDER BY name",
        (kind, *tables),
    ).fetchall()
    for name, _ in found:
        conn.execute(f'DROP {kind.upper()} "{name}"')
    yield
    for _, sql in found:
        conn.execute(sql)


def _insert(conn: sqlite3.Connection, contents: Contents) -> None:
    """Bulk-insert the records, unknown fields into `extra`; issues and comments in creation
    order (`seq`)."""
    by_age = ("created_at", "id")
    _insert_table(conn, "issues", contents.issues, ISSUE_FIELDS, order=by_age)
    _insert_table(conn, "deps", contents.deps, DEP_FIELDS)
    _insert_table(conn, "comments", contents.comments, COMMENT_FIELDS, order=by_age)
    _insert_table(conn, "tombstones", contents.tombstones, TOMBSTONE_FIELDS)


def _insert_table(
    conn: sqlite3.Connection,
    name: str,
    table: Table,
    fields: tuple[str, ...],
    *,
    order: tuple[str, ...] = (),
) -> None:
    if not table.rows:
        return
    columns, rows = _shaped(table, fields)
    for key in reversed(order):  # stable sorts, last key first: no key tuples to build
        rows.sort(key=itemgetter(columns.index(key)))
    _insert_rows(conn, name, columns, rows)


def _shaped(table: Table, fields: tuple[str, ...]) -> tuple[tuple[str, ...], list[Row]]:
    """The columns to insert and each record's values for them: the checked row (labels and
    verify commands as their JSON text) without the fields no record sets, then `extra`
    (unknown fields as canonical JSON) if any record has one.
    """
    rows = table.rows
    for at, key in enumerate(fields):
        if key in LIST_FIELDS:
            rows = [
                row if row[at] is None else (*row[:at], encode_list(key, row[at]), *row[at + 1 :])
                for row in rows
            ]
    known = frozenset(fields)
    extras = (
        None
        if all(map(known.issuperset, table.records))
        else [None if known.issuperset(r) else split_extra(r, fields)[1] for r in table.records]
    )
    kept = _set_somewhere(rows)
    if 1 < len(kept) < len(fields):  # (itemgetter of one position gives no tuple)
        fields, rows = tuple(fields[at] for at in kept), list(map(itemgetter(*kept), rows))
    if extras is None:
        return fields, list(rows)
    return (*fields, "extra"), [(*row, extra) for row, extra in zip(rows, extras, strict=True)]


def _set_somewhere(rows: list[Row]) -> list[int]:
    """The positions of the fields at least one row sets. SQLite stores NULL in a column an
    INSERT does not name (no column an import fills has another default: tests/committed/
    test_rebuild.py), so a field no record has (most trackers leave several unused) is not
    bound as NULL row after row: binding is most of an insert's cost."""
    first = rows[0]
    return [
        at
        for at, value in enumerate(first)
        if value is not None or list(map(itemgetter(at), rows)).count(None) < len(rows)
    ]


# Rows per INSERT statement. Each run of a statement has a fixed cost (Python's set-up of
# the run, and AUTOINCREMENT's read and write of sqlite_sequence): one run per 200 rows
# instead of one per row is what keeps the import within its bench target.
ROWS_PER_INSERT = 200


def _insert_rows(
    conn: sqlite3.Connection, table: str, columns: tuple[str, ...], rows: list[Row]
) -> None:
    """Insert `rows` in order, many rows per statement."""
    one = f"({', '.join('?' * len(columns))})"
    limit = conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER) // len(columns)
    per = max(1, min(ROWS_PER_INSERT, limit))
    whole = len(rows) - len(rows) % per
    insert = f"INSERT INTO {table} ({', '.join(columns)}) VALUES "
    conn.executemany(
        insert + ", ".join([one] * per),
        (list(chain.from_iterable(rows[i : i + per])) for i in range(0, whole, per)),
    )
    conn.executemany(insert + one, rows[whole:])


# --- a database too damaged to open -------------------------------------------------------

LEFTOVER_PREFIX = "db.sqlite.import-"


def _rebuild_damaged(project: Project) -> Imported:
    """Build a new database beside one that cannot be opened, and swap it in."""
    contents = read_contents(project)
    tmp = new_file(project.dir, f"{LEFTOVER_PREFIX}{os.getpid()}.")  # a name no one guessed
    try:
        with (
            Store.open(tmp) as store,
            _rebuild_settings(store.conn),
            store.write() as conn,
        ):
            tables = ("comments", "deps", "tombstones", "issues")
            with _rebuilt(conn, tables, "trigger"):
                _insert(conn, contents)
                conn.execute(MARK_ALL)
            _after_import(conn, project, contents.files, fingerprints(project), None)
        _unlink(project.db + "-journal")  # a hot journal belongs to the damaged file
        os.replace(tmp, project.db)
    finally:
        for leftover in (tmp, f"{tmp}-journal", f"{tmp}.lock"):  # (the writers' lock file)
            _unlink(leftover)
    return Imported(*contents.counts(), events_kept=0)


def _unlink(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def remove_leftovers(project: Project) -> list[str]:
    """Delete temp files of imports killed half-way (their process is gone)."""
    removed = []
    with contextlib.suppress(OSError):
        for name in os.listdir(project.dir):
            if not name.startswith(LEFTOVER_PREFIX):
                continue
            pid = name[len(LEFTOVER_PREFIX) :].split(".", 1)[0]
            if pid.isdigit() and _alive(int(pid)):
                continue
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(project.dir, name))
                removed.append(name)
    return removed


def _alive(pid: int) -> bool:
    """Whether another process `pid` is alive (this one's own leftovers are not in use)."""
    return pid != os.getpid() and process.alive(pid)
