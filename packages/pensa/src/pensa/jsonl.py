"""JSONL, the git-committed layer: deterministic export and an all-or-nothing import.

Export: one compact object per line, unset fields omitted, fixed key order, UTF-8 (no `\\u`
escapes), issues sorted by id (random ids spread concurrent additions over the file so git
merges rarely conflict), deps by (issue_id, depends_on_id), comments by (issue_id,
created_at, id). Re-exporting an unchanged database gives byte-identical files.

Import (`pn import`, the explicit rebuild): every line is validated inside one write
transaction that then replaces the database's contents, so a bad line leaves the database
exactly as it was. The git hooks use the merging `pn sync` instead (`pensa.sync`).
Unknown fields survive both: they are kept per record in an `extra` column.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sqlite3
from itertools import chain
from operator import itemgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, NoReturn

from pensa.cycles import find_cycles
from pensa.errors import InvalidData, StorageError
from pensa.freshness import fingerprints as sync_fingerprints
from pensa.models import ISSUE_FIELDS
from pensa.snapshot import (
    COMMENT_FIELDS,
    DEP_FIELDS,
    TOMBSTONE_FIELDS,
    issue_row,
    parse_file,
    render_db,
    split_extra,
)
from pensa.store import Store
from pensa.sync import read_file, record_base

if TYPE_CHECKING:
    from collections.abc import Iterator

    from pensa.project import Project

EVENT_FIELDS = ("issue_id", "event_type", "actor", "detail", "created_at")
Record = dict[str, Any]


def render(store: Store) -> dict[str, str]:
    """The committed files' exact contents from the database alone, keyed by file name."""
    with store.snapshot() as conn:  # one read transaction over all four tables
        return render_db(conn)


def write_atomically(path: Path, text: str) -> bool:
    """Write via a temp file and rename; skip (return False) when the content is the same."""
    data = text.encode()
    with contextlib.suppress(FileNotFoundError):
        if path.read_bytes() == data:
            return False
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return True


class Summary(NamedTuple):
    """How many records an export or import moved."""

    issues: int
    deps: int
    comments: int
    staged: bool = False
    events_kept: int | None = None

    def to_json(self) -> dict[str, Any]:
        """The JSON object of the output contract."""
        out: dict[str, Any] = {"issues": self.issues, "deps": self.deps, "comments": self.comments}
        if self.events_kept is not None:
            out["events_kept"] = self.events_kept
        else:
            out["staged"] = self.staged
        return out


def export(store: Store, project: Project) -> Summary:
    """Merge in edits made to the files on disk, then write the files of `project`."""
    from pensa import sync

    return summary(sync.export(store, project))


def summary(texts: dict[str, str]) -> Summary:
    """How many records the written files hold."""
    issues, deps, comments = (
        texts[n].count("\n") for n in ("issues.jsonl", "deps.jsonl", "comments.jsonl")
    )
    return Summary(issues, deps, comments)


# --- import -----------------------------------------------------------------------------


class _Contents(NamedTuple):
    """The committed files as read (the next sync's base) and their checked records."""

    files: dict[str, bytes]
    issues: list[Record]
    deps: list[Record]
    comments: list[Record]
    tombstones: list[Record]

    def summary(self, events_kept: int) -> Summary:
        """What the import moved."""
        return Summary(
            len(self.issues), len(self.deps), len(self.comments), events_kept=events_kept
        )


def _validate(project: Project) -> _Contents:
    """Read and check every file, in order, each read once: what is checked is what is
    imported and what is recorded as the base."""
    files: dict[str, bytes] = {}

    def records(name: str) -> list[tuple[int, Record]]:
        files[name] = read_file(project, name)
        return parse_file(files[name], name)

    issues = records("issues.jsonl")
    kinds: dict[str, str] = {}
    for number, issue in issues:
        if issue["id"] in kinds:
            raise InvalidData(f"issues.jsonl:{number}: duplicate id {issue['id']}")
        kinds[issue["id"]] = issue["issue_type"]
    for number, issue in issues:
        fixes = issue.get("fixes")
        if fixes is not None and kinds.get(fixes) != "bug":
            why = "no such issue" if fixes not in kinds else f"a {kinds[fixes]}, not a bug"
            raise InvalidData(f"issues.jsonl:{number}: fixes {fixes}: {why}")
    deps = records("deps.jsonl")
    edges: dict[str, list[str]] = {}
    first_line: dict[tuple[str, str], int] = {}
    for number, dep in deps:
        pair = child, parent = dep["issue_id"], dep["depends_on_id"]
        if child not in kinds or parent not in kinds or child == parent or pair in first_line:
            _refuse_dep(f"deps.jsonl:{number}", pair, kinds, first_line)
        first_line[pair] = number
        edges.setdefault(child, []).append(parent)
    cycles = find_cycles(edges)
    if cycles:
        cycle = cycles[0]
        line = first_line[(cycle[0], cycle[1 % len(cycle)])]
        path = " -> ".join([*cycle, cycle[0]])
        raise InvalidData(f"deps.jsonl:{line}: dependency cycle {path}")
    comments = records("comments.jsonl")
    seen: set[str] = set()
    for number, comment in comments:
        where = f"comments.jsonl:{number}"
        if comment["issue_id"] not in kinds:
            raise InvalidData(
                f"{where}: dangling reference to {comment['issue_id']} (no such issue)"
            )
        if comment["id"] in seen:
            raise InvalidData(f"{where}: duplicate id {comment['id']}")
        seen.add(comment["id"])
    tombstones = records("deleted.jsonl")
    return _Contents(
        files,
        [r for _, r in issues],
        [r for _, r in deps],
        [r for _, r in comments],
        [r for _, r in tombstones],
    )


def _refuse_dep(
    where: str, pair: tuple[str, str], kinds: dict[str, str], first_line: dict[tuple[str, str], int]
) -> NoReturn:
    for end in pair:
        if end not in kinds:
            raise InvalidData(f"{where}: dangling reference to {end} (no such issue)")
    if pair[0] == pair[1]:
        raise InvalidData(f"{where}: {pair[0]} depends on itself")
    raise InvalidData(f"{where}: duplicate of line {first_line[pair]}")


def import_(project: Project) -> Summary | None:
    """Rebuild `project`'s database from its JSONL files; None when there is nothing to import.

    The write lock is taken first and held from the first read of the files to the last
    insert: a concurrent write either lands before (and is replaced, as `import` means) or
    waits and lands in the rebuilt database, never in a file that is about to vanish (the
    old temp-file swap acknowledged such writes and then lost them). Only a database too
    damaged to open is rebuilt beside it and swapped in.
    """
    if not os.path.exists(project.issues_jsonl):
        return None
    project.ensure()
    remove_leftovers(project)
    with _no_collection():
        return _rebuild(project)


def _rebuild(project: Project) -> Summary:
    try:
        store = Store.open(project.db)
    except StorageError:
        return _rebuild_damaged(project)
    with store:
        prints = sync_fingerprints(project)
        with _rebuild_settings(store.conn), store.write() as conn:
            contents = _validate(project)
            for table in ("comments", "deps", "tombstones", "issues"):
                conn.execute(f"DELETE FROM {table}")
            with _indexes_rebuilt(conn):
                _insert(conn, contents)
            conn.execute("DELETE FROM events WHERE issue_id NOT IN (SELECT id FROM issues)")
            events_kept = conn.execute("SELECT count(*) FROM events").fetchone()[0]
            record_base(conn, contents.files, prints)
    return contents.summary(events_kept)


@contextlib.contextmanager
def _no_collection() -> Iterator[None]:
    """Hold off Python's cyclic garbage collector while the records are built. They are
    plain dicts of strings (no cycles to find), but each new batch of them started another
    pass over all the earlier ones: 100k issues parse in 0.55 s instead of 0.7 s."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


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
    # UNIQUE stay on; tests/test_jsonl.py fails when the schema gains a CHECK.
    "ignore_check_constraints": 1,
    # Debian's SQLite overwrites every deleted row with zeros (SQLITE_SECURE_DELETE);
    # emptying tables that are refilled at once need not: -0.1 s at 100k.
    "secure_delete": 0,
    # Room for every page the rebuild changes (about 50 MB at 100k issues), so none is
    # spilled to the file before COMMIT, which waits for an fsync of the journal each time:
    # on a busy disk that alone took the insert from 1 s to 6 s.
    "cache_size": -256 * 1024,  # KiB
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
    """Bulk-insert the records, unknown fields into `extra`; issues and comments in creation order.

    Plain `executemany` with prepared statements: sqlite-utils' `insert_all` checked every
    value for JSON (`jsonify_if_needed`, 1.65 million calls), about 4x the time at 100k
    issues (issue 12).
    """
    issues = [(*values, extra) for values, extra in map(issue_row, contents.issues)]
    issues.sort(key=itemgetter(ISSUE_FIELDS.index("created_at"), ISSUE_FIELDS.index("id")))
    _insert_rows(conn, "issues", ISSUE_FIELDS, issues)
    _insert_rows(conn, "deps", DEP_FIELDS, _rows(contents.deps, DEP_FIELDS))
    comments = _rows(contents.comments, COMMENT_FIELDS)
    comments.sort(key=itemgetter(COMMENT_FIELDS.index("created_at"), COMMENT_FIELDS.index("id")))
    _insert_rows(conn, "comments", COMMENT_FIELDS, comments)
    _insert_rows(conn, "tombstones", TOMBSTONE_FIELDS, _rows(contents.tombstones, TOMBSTONE_FIELDS))


def _rows(records: list[Record], fields: tuple[str, ...]) -> list[tuple[Any, ...]]:
    """Each record's values in `fields` order (None when unset), then its `extra` text."""
    known = frozenset(fields)
    return [
        (
            *map(record.get, fields),
            None if known.issuperset(record) else split_extra(record, fields)[1],
        )
        for record in records
    ]


# Rows per INSERT statement. Every run of an INSERT into `issues` builds three ephemeral
# tables for its CHECK (... IN (...)) lists and reads and writes sqlite_sequence
# (AUTOINCREMENT); one run per 200 rows instead of one per row: 0.77 s -> 0.43 s at 100k.
ROWS_PER_INSERT = 200


def _insert_rows(
    conn: sqlite3.Connection, table: str, fields: tuple[str, ...], rows: list[tuple[Any, ...]]
) -> None:
    """Insert `rows` (`fields`, then `extra`) in order, many rows per statement."""
    columns = (*fields, "extra")
    one = f"({', '.join('?' * len(columns))})"
    limit = conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER) // len(columns)
    per = max(1, min(ROWS_PER_INSERT, limit))
    whole = len(rows) - len(rows) % per
    flat = list(chain.from_iterable(rows[:whole]))
    step = per * len(columns)
    insert = f"INSERT INTO {table} ({', '.join(columns)}) VALUES "
    conn.executemany(
        insert + ", ".join([one] * per), (flat[i : i + step] for i in range(0, len(flat), step))
    )
    conn.executemany(insert + one, rows[whole:])


def _rebuild_damaged(project: Project) -> Summary:
    """Build a new database beside one that cannot be opened, and swap it in."""
    contents = _validate(project)
    tmp = Path(project.dir, f"{LEFTOVER_PREFIX}{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    try:
        with (
            Store.open(str(tmp)) as store,
            _rebuild_settings(store.conn),
            store.write() as conn,
        ):
            _insert(conn, contents)
            record_base(conn, contents.files, sync_fingerprints(project))
        with contextlib.suppress(FileNotFoundError):
            os.unlink(project.db + "-journal")  # a hot journal belongs to the damaged file
        os.replace(tmp, project.db)
    finally:
        tmp.unlink(missing_ok=True)
        Path(f"{tmp}-journal").unlink(missing_ok=True)
    return contents.summary(events_kept=0)


LEFTOVER_PREFIX = "db.sqlite.import-"


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
