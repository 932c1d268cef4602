"""`pn import`: the database rebuilt from the JSONL files, all or nothing.

Every line is checked inside one write transaction that then replaces the database's
contents, so a bad line leaves the database exactly as it was; events of issues that still
exist are kept. Unknown fields go to each row's `extra` column.

Issue 12 asks for 100k issues in 2 s. Where the time went, and what each step buys, is
noted where it is spent: the files are read once and checked a column at a time
(`pensa.records`), the rows come straight from those columns, and the transaction runs with
settings that only a rebuild of already-checked data can afford (`_REBUILD_PRAGMAS`).
"""

from __future__ import annotations

import contextlib
import gc
import os
import sqlite3
import threading
from itertools import chain
from operator import eq, itemgetter
from typing import TYPE_CHECKING, Any, NamedTuple

from pensa.cycles import find_cycles
from pensa.errors import InvalidData, StorageError
from pensa.freshness import fingerprints
from pensa.models import ISSUE_FIELDS, LIST_FIELDS, encode_labels
from pensa.records import COMMENT_FIELDS, DEP_FIELDS, TOMBSTONE_FIELDS, Table, read_table
from pensa.snapshot import split_extra
from pensa.store import Store
from pensa.sync import read_file, record_base

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from pensa.project import Project

Row = tuple[Any, ...]


class Imported(NamedTuple):
    """How many records the import wrote, and how many events it kept."""

    issues: int
    deps: int
    comments: int
    events_kept: int


def rebuild(project: Project) -> Imported:
    """Replace the database's issues, deps, comments and tombstones with the files' ones.

    The write lock is taken first and held from the first read of the files to the last
    insert: a concurrent write either lands before (and is replaced, as `import` means) or
    waits and lands in the rebuilt database, never in a file that is about to vanish (the
    old temp-file swap acknowledged such writes and then lost them). Only a database too
    damaged to open is rebuilt beside it and swapped in.
    """
    with _no_collection():
        return _rebuild(project)


def _rebuild(project: Project) -> Imported:
    try:
        store = Store.open(project.db)
    except StorageError:
        return _rebuild_damaged(project)
    with store, contextlib.ExitStack() as meanwhile:
        prints = fingerprints(project)
        with _rebuild_settings(store.conn), store.write() as conn:
            contents = _validate(project)
            files, counts = contents.files, contents.counts()
            for table in ("comments", "deps", "tombstones", "issues"):
                conn.execute(f"DELETE FROM {table}")
            with _indexes_rebuilt(conn):
                _insert(conn, contents)
                garbage = [contents]  # the last reference to the records, now written
                del contents
                meanwhile.enter_context(_freed_meanwhile(garbage))
            conn.execute("DELETE FROM events WHERE issue_id NOT IN (SELECT id FROM issues)")
            events_kept = conn.execute("SELECT count(*) FROM events").fetchone()[0]
            record_base(conn, files, prints)
    return Imported(*counts, events_kept)


# --- reading and checking -----------------------------------------------------------------


class _Contents(NamedTuple):
    """The committed files as read (the next sync's base) and their checked records."""

    files: dict[str, bytes]
    issues: Table
    deps: Table
    comments: Table
    tombstones: Table

    def counts(self) -> tuple[int, int, int]:
        """How many issues, deps and comments there are."""
        return len(self.issues.rows), len(self.deps.rows), len(self.comments.rows)


def _validate(project: Project) -> _Contents:
    """Read and check every file, in order, each read once: what is checked is what is
    imported and what is recorded as the base."""
    files: dict[str, bytes] = {}

    def table(name: str) -> Table:
        files[name] = read_file(project, name)
        return read_table(files[name], name)

    issues = table("issues.jsonl")
    kinds = _kinds(issues)
    deps = table("deps.jsonl")
    _check_deps(deps, kinds)
    comments = table("comments.jsonl")
    _check_comments(comments, kinds)
    return _Contents(files, issues, deps, comments, table("deleted.jsonl"))


_ID, _TYPE, _FIXES = (ISSUE_FIELDS.index(key) for key in ("id", "issue_type", "fixes"))


def _kinds(issues: Table) -> dict[str, str]:
    """Each issue's type by id; ids are unique and `fixes` names a bug."""
    kinds = dict(map(itemgetter(_ID, _TYPE), issues.rows))
    if len(kinds) < len(issues.rows):  # an id twice: name the first repeat
        seen: set[str] = set()
        for number, row in zip(issues.numbers, issues.rows, strict=True):
            if row[_ID] in seen:
                raise InvalidData(f"issues.jsonl:{number}: duplicate id {row[_ID]}")
            seen.add(row[_ID])
    for number, row in zip(issues.numbers, issues.rows, strict=True):
        fixes = row[_FIXES]
        if fixes is not None and kinds.get(fixes) != "bug":
            why = "no such issue" if fixes not in kinds else f"a {kinds[fixes]}, not a bug"
            raise InvalidData(f"issues.jsonl:{number}: fixes {fixes}: {why}")
    return kinds


def _check_deps(deps: Table, kinds: dict[str, str]) -> None:
    """Both ends exist and differ, no edge twice, no cycle."""
    pairs: list[tuple[str, str]] = deps.rows  # (issue_id, depends_on_id)
    children, parents = list(map(itemgetter(0), pairs)), list(map(itemgetter(1), pairs))
    # All edges at once first (C loops); line by line only to name the line that is wrong.
    if not (
        kinds.keys() >= set(children)
        and kinds.keys() >= set(parents)
        and not any(map(eq, children, parents))
        and len(set(pairs)) == len(pairs)
    ):
        _check_deps_by_line(deps.numbers, pairs, kinds)
    edges: dict[str, list[str]] = {}
    for child, parent in pairs:
        edges.setdefault(child, []).append(parent)
    cycles = find_cycles(edges)
    if cycles:
        cycle = cycles[0]
        line = deps.numbers[pairs.index((cycle[0], cycle[1 % len(cycle)]))]
        path = " -> ".join([*cycle, cycle[0]])
        raise InvalidData(f"deps.jsonl:{line}: dependency cycle {path}")


def _check_deps_by_line(
    numbers: Sequence[int], pairs: list[tuple[str, str]], kinds: dict[str, str]
) -> None:
    first_line: dict[tuple[str, str], int] = {}
    for number, pair in zip(numbers, pairs, strict=True):
        where = f"deps.jsonl:{number}"
        for end in pair:
            if end not in kinds:
                raise InvalidData(f"{where}: dangling reference to {end} (no such issue)")
        if pair[0] == pair[1]:
            raise InvalidData(f"{where}: {pair[0]} depends on itself")
        if pair in first_line:
            raise InvalidData(f"{where}: duplicate of line {first_line[pair]}")
        first_line[pair] = number


def _check_comments(comments: Table, kinds: dict[str, str]) -> None:
    """Each comment is on an issue that exists, and no id comes twice."""
    at_id, at_issue = COMMENT_FIELDS.index("id"), COMMENT_FIELDS.index("issue_id")
    seen: set[str] = set()
    for number, row in zip(comments.numbers, comments.rows, strict=True):
        where = f"comments.jsonl:{number}"
        if row[at_issue] not in kinds:
            raise InvalidData(f"{where}: dangling reference to {row[at_issue]} (no such issue)")
        if row[at_id] in seen:
            raise InvalidData(f"{where}: duplicate id {row[at_id]}")
        seen.add(row[at_id])


# --- writing ------------------------------------------------------------------------------


@contextlib.contextmanager
def _no_collection() -> Iterator[None]:
    """Hold off Python's cyclic garbage collector while the records are built and used. They
    are plain dicts of strings (no cycles to find), but each new batch of them started
    another pass over all the earlier ones: 100k issues parse in 0.55 s instead of 0.7 s.
    Leave it only once they are gone: the first collection after it would walk them all."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@contextlib.contextmanager
def _freed_meanwhile(garbage: list[_Contents]) -> Iterator[None]:
    """Free what `garbage` holds (its last references) on a second thread until the block
    ends: 100k records take 0.09 s of Python to free, while building the indexes and
    committing take 0.3 s inside SQLite, which lets go of the GIL, so on a second core the
    freeing costs nothing."""
    thread = threading.Thread(target=garbage.clear, name="pensa-import-free")
    thread.start()
    try:
        yield
    finally:
        thread.join()


# The rebuild's own connection settings, set before its transaction (SQLite ignores
# `foreign_keys` inside one) and put back after it. None of them weakens the all-or-nothing
# commit: the rollback journal and `synchronous` stay as they are.
_REBUILD_PRAGMAS = {
    # `_validate` has already proven every reference (deps, comments, fixes), so SQLite need
    # not check them again; without the checks `DELETE FROM issues` empties the table at
    # once instead of looking up four child tables per row: 0.75 s -> 0.01 s at 100k.
    "foreign_keys": 0,
    # Likewise the CHECK constraints (the three vocabularies, no self-dependency): testing
    # each row against the IN lists took 0.12 s of the 0.4 s insert at 100k. NOT NULL and
    # UNIQUE stay on; tests/test_rebuild.py fails when the schema gains a CHECK.
    "ignore_check_constraints": 1,
    # Debian's SQLite overwrites every deleted row with zeros (SQLITE_SECURE_DELETE);
    # emptying tables that are refilled at once need not: -0.1 s at 100k.
    "secure_delete": 0,
    # Changed pages stay in memory until COMMIT (about 50 MB at 100k issues) instead of
    # being spilled to the file once the 2 MB cache is full: each spill waits for an fsync
    # of the journal (on a busy disk the insert went from 1 s to 6 s) and takes SQLite's
    # EXCLUSIVE lock early, shutting readers out for the rest of the import.
    "cache_spill": 0,
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
def _indexes_rebuilt(conn: sqlite3.Connection) -> Iterator[None]:
    """Drop the emptied tables' own indexes, and create them again after the inserts, inside
    the caller's transaction: one sort per index instead of updating each one row by row
    while 100k rows go in (issue 12). A failure rolls the drop back too."""
    tables = ("issues", "deps", "comments", "tombstones")
    marks = ", ".join("?" * len(tables))
    found = conn.execute(
        f"SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL "
        f"AND tbl_name IN ({marks})",
        tables,
    ).fetchall()
    for name, _ in found:
        conn.execute(f'DROP INDEX "{name}"')
    yield
    for _, sql in found:
        conn.execute(sql)


def _insert(conn: sqlite3.Connection, contents: _Contents) -> None:
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
    """The columns to insert and each record's values for them: the checked row (labels as
    their JSON text), then `extra` (unknown fields as canonical JSON) if any record has one.
    """
    rows = table.rows
    for at, key in enumerate(fields):
        if key in LIST_FIELDS:
            rows = [
                row if row[at] is None else (*row[:at], encode_labels(row[at]), *row[at + 1 :])
                for row in rows
            ]
    known = frozenset(fields)
    if all(map(known.issuperset, table.records)):
        return fields, list(rows)
    extras = [
        None if known.issuperset(record) else split_extra(record, fields)[1]
        for record in table.records
    ]
    return (*fields, "extra"), [(*row, extra) for row, extra in zip(rows, extras, strict=True)]


# Rows per INSERT statement. Every run of an INSERT into `issues` builds three ephemeral
# tables for its CHECK (... IN (...)) lists and reads and writes sqlite_sequence
# (AUTOINCREMENT); one run per 200 rows instead of one per row: 0.77 s -> 0.43 s at 100k.
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
    contents = _validate(project)
    tmp = os.path.join(project.dir, f"{LEFTOVER_PREFIX}{os.getpid()}.tmp")
    _unlink(tmp)
    try:
        with (
            Store.open(tmp) as store,
            _rebuild_settings(store.conn),
            store.write() as conn,
        ):
            _insert(conn, contents)
            record_base(conn, contents.files, fingerprints(project))
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
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return pid != os.getpid()
