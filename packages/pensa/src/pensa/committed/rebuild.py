"""`pn import`: the database rebuilt from the JSONL files, all or nothing.

Every line is checked inside one write transaction that then replaces the database's
contents, so a bad line leaves the database exactly as it was; events of issues that still
exist are kept. Unknown fields go to each row's `extra` column.

The import has a target in bench/bench_pensa.py (100k issues). What each step buys is noted
where it is spent: the files are read once, on short paths, into checked rows
(`committed.records`, `committed.contents`), which go in 200 to a statement, in a transaction
with settings only a rebuild of already-checked data can afford (`_REBUILD_PRAGMAS`), while
the garbage collector waits; and SQLite's long statements run beside the Python work that
does not need them (`committed.overlap`).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from itertools import chain
from operator import itemgetter
from typing import TYPE_CHECKING, Any, NamedTuple

from pensa.blocked import MARK_ALL
from pensa.committed import base as sync_base
from pensa.committed.contents import Contents, read_contents, read_files, read_issues, read_rest
from pensa.committed.disk import fingerprints
from pensa.committed.localwork import refuse_if_unsaved
from pensa.committed.overlap import SideStatements, freed_meanwhile, no_collection
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
    with no_collection():
        return _rebuild(project, committed, discard_local=discard_local)


_TABLES = ("comments", "deps", "tombstones", "issues")  # children first


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
        SideStatements(conn) as side,  # (done before the transaction ends, either way)
    ):
        prints = fingerprints(project)  # under the lock, as sync reads (pensa.committed.sync)
        known = _known_blobs(conn, prints) if committed is not None else {}
        # Triggers: the export's notes of every row written (`export_dirty`), which an import
        # replaces with one note for all. Indexes: one sort each once the rows are in,
        # instead of updating each one row by row while 100k rows go in.
        triggers, indexes = _schema(conn, "trigger"), _schema(conn, "index")
        clearing = [
            *(f'DROP TRIGGER "{name}"' for name, _, _ in triggers),
            *(f"DELETE FROM {table}" for table in _TABLES),
            *(f'DROP INDEX "{name}"' for name, _, _ in indexes),
        ]
        if discard_local:  # nothing of the database is read again: clear it meanwhile
            side.run(clearing)
        files = read_files(project, prints)
        issues = read_issues(files)
        rest = None
        if not discard_local:  # (a wrong line is named before any unsaved work)
            rest = read_rest(files, issues)
            rest.check()
            refuse_if_unsaved(conn, rest.contents)
            side.run(clearing)
        issue_rows = _shaped("issues", issues.read.table)
        side.wait()
        _insert(conn, [issue_rows])
        # The issues' indexes are built while the other files are read and everything is
        # checked (a wrong line rolls everything back); then the rest go in and their indexes
        # are built, and the flags `pensa.blocked`'s triggers would have kept are set once the
        # indexes it reads are back (few rows of the ready index hold a flag to set).
        side.run([sql for _, table, sql in indexes if table == "issues"])
        if rest is None:
            rest = read_rest(files, issues)
            rest.check()
        shaped = [_shaped(name, table) for name, table in _others(rest.contents)]
        side.wait()
        _insert(conn, shaped)
        side.run(
            [
                *(sql for _, table, sql in indexes if table != "issues"),
                MARK_ALL,
                *(sql for _, _, sql in triggers),
            ]
        )
        imported = rest.contents.counts()
        garbage = [rest.contents]  # the last reference to the records, now written
        del issues, rest, issue_rows, shaped
        meanwhile.enter_context(freed_meanwhile(garbage))
        side.wait()
        conn.execute("DELETE FROM events WHERE issue_id NOT IN (SELECT id FROM issues)")
        events_kept = conn.execute("SELECT count(*) FROM events").fetchone()[0]
        _after_import(conn, project, files, prints, committed, known)
    return Imported(*imported, events_kept)


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
    # IN list tested per row. NOT NULL stays on, and the unique indexes (ids) are checked
    # again as they are built; tests/committed/test_rebuild.py fails when the schema gains
    # a CHECK the import does not make itself.
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


def _schema(conn: sqlite3.Connection, kind: str) -> list[tuple[str, str, str]]:
    """The name, table and SQL of each index (or trigger) of the imported tables, by name."""
    marks = ", ".join("?" * len(_TABLES))
    found: list[tuple[str, str, str]] = conn.execute(
        f"SELECT name, tbl_name, sql FROM sqlite_master WHERE type = ? AND sql IS NOT NULL "
        f"AND tbl_name IN ({marks}) ORDER BY name",
        (kind, *_TABLES),
    ).fetchall()
    return found


Shaped = tuple[str, tuple[str, ...], list[Row]]  # (table, columns, rows to insert)
_FIELDS = {
    "issues": ISSUE_FIELDS,
    "deps": DEP_FIELDS,
    "comments": COMMENT_FIELDS,
    "tombstones": TOMBSTONE_FIELDS,
}
_BY_AGE = {"issues", "comments"}  # inserted in creation order (`seq`)


def _others(contents: Contents) -> list[tuple[str, Table]]:
    return [
        ("deps", contents.deps),
        ("comments", contents.comments),
        ("tombstones", contents.tombstones),
    ]


def _shaped(name: str, table: Table) -> Shaped:
    """A table's columns and rows to insert, in creation order where it has one."""
    if not table.rows:
        return name, (), []
    columns, rows = _columns(table, _FIELDS[name])
    if name in _BY_AGE:
        for key in ("id", "created_at"):  # stable sorts, last key first: no key tuples
            rows.sort(key=itemgetter(columns.index(key)))
    return name, columns, rows


def _insert(conn: sqlite3.Connection, shaped: list[Shaped]) -> None:
    for name, columns, rows in shaped:
        if rows:
            _insert_rows(conn, name, columns, rows)


def _columns(table: Table, fields: tuple[str, ...]) -> tuple[tuple[str, ...], list[Row]]:
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
            triggers = _schema(conn, "trigger")
            for name, _, _ in triggers:
                conn.execute(f'DROP TRIGGER "{name}"')
            tables = [("issues", contents.issues), *_others(contents)]
            _insert(conn, [_shaped(name, table) for name, table in tables])
            conn.execute(MARK_ALL)
            for _, _, sql in triggers:
                conn.execute(sql)
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
