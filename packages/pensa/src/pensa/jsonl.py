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
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

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
from pensa.sync import read_files, record_base

if TYPE_CHECKING:
    import sqlite3
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


def _records(path: Path, name: str) -> list[tuple[int, Record]]:
    """Parse and shape-check every line of `path` (missing file: no records)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    except IsADirectoryError as e:
        raise InvalidData(f"{path} is a directory, not a JSONL file; move it away") from e
    return parse_file(data, name)


def _validate(
    project: Project,
) -> tuple[list[Record], list[Record], list[Record]]:
    issues = _records(Path(project.issues_jsonl), "issues.jsonl")
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
    deps = _records(Path(project.deps_jsonl), "deps.jsonl")
    edges: dict[str, list[str]] = {}
    first_line: dict[tuple[str, str], int] = {}
    for number, dep in deps:
        where = f"deps.jsonl:{number}"
        pair = (dep["issue_id"], dep["depends_on_id"])
        for end in pair:
            if end not in kinds:
                raise InvalidData(f"{where}: dangling reference to {end} (no such issue)")
        if pair[0] == pair[1]:
            raise InvalidData(f"{where}: {pair[0]} depends on itself")
        if pair in first_line:
            raise InvalidData(f"{where}: duplicate of line {first_line[pair]}")
        first_line[pair] = number
        edges.setdefault(pair[0], []).append(pair[1])
    cycles = find_cycles(edges)
    if cycles:
        cycle = cycles[0]
        line = first_line[(cycle[0], cycle[1 % len(cycle)])]
        path = " -> ".join([*cycle, cycle[0]])
        raise InvalidData(f"deps.jsonl:{line}: dependency cycle {path}")
    comments = _records(Path(project.comments_jsonl), "comments.jsonl")
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
    return [r for _, r in issues], [r for _, r in deps], [r for _, r in comments]


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
    try:
        store = Store.open(project.db)
    except StorageError:
        return _rebuild_damaged(project)
    with store:
        prints = sync_fingerprints(project)
        with store.write() as conn:
            issues, deps, comments = _validate(project)
            files = read_files(project)
            tombstones = parse_file(files["deleted.jsonl"], "deleted.jsonl")
            conn.execute("PRAGMA defer_foreign_keys = ON")
            for table in ("comments", "deps", "tombstones", "issues"):
                conn.execute(f"DELETE FROM {table}")  # with the indexes the FK checks use
            with _indexes_rebuilt(conn):
                _insert(conn, issues, deps, comments, [r for _, r in tombstones])
            conn.execute("DELETE FROM events WHERE issue_id NOT IN (SELECT id FROM issues)")
            events_kept = conn.execute("SELECT count(*) FROM events").fetchone()[0]
            record_base(conn, files, prints)
    return Summary(len(issues), len(deps), len(comments), events_kept=events_kept)


@contextlib.contextmanager
def _indexes_rebuilt(conn: sqlite3.Connection) -> Iterator[None]:
    """Drop the emptied tables' own indexes, and create them again after the inserts, inside
    the caller's transaction: one sort per index instead of updating each one row by row
    while 100k rows go in (issue 12). A failure rolls the drop back too. (Not around the
    DELETEs: their foreign-key checks need the child tables' indexes.)"""
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


def _insert(
    conn: sqlite3.Connection,
    issues: list[Record],
    deps: list[Record],
    comments: list[Record],
    tombstones: list[Record],
) -> None:
    """Bulk-insert the records, unknown fields into `extra`; issues and comments in creation order.

    Plain `executemany` with one prepared statement per table: sqlite-utils' `insert_all`
    checked every value for JSON (`jsonify_if_needed`, 1.65 million calls) and built
    multi-row statements per batch, about 4x the time at 100k issues (issue 12).
    """

    def insert(table: str, fields: tuple[str, ...], rows: list[tuple[object, ...]]) -> None:
        columns = ", ".join((*fields, "extra"))
        marks = ", ".join("?" * (len(fields) + 1))
        conn.executemany(f"INSERT INTO {table} ({columns}) VALUES ({marks})", rows)

    def shaped(records: list[Record], fields: tuple[str, ...]) -> list[tuple[object, ...]]:
        out = []
        for record in records:
            known, extra = split_extra(record, fields)
            out.append((*(known.get(k) for k in fields), extra))
        return out

    by_age = sorted(issues, key=lambda r: (r["created_at"], r["id"]))
    insert("issues", ISSUE_FIELDS, [(*values, extra) for values, extra in map(issue_row, by_age)])
    insert("deps", DEP_FIELDS, shaped(deps, DEP_FIELDS))
    by_time = sorted(comments, key=lambda r: (r["created_at"], r["id"]))
    insert("comments", COMMENT_FIELDS, shaped(by_time, COMMENT_FIELDS))
    insert("tombstones", TOMBSTONE_FIELDS, shaped(tombstones, TOMBSTONE_FIELDS))


def _rebuild_damaged(project: Project) -> Summary:
    """Build a new database beside one that cannot be opened, and swap it in."""
    issues, deps, comments = _validate(project)
    files = read_files(project)
    tombstones = parse_file(files["deleted.jsonl"], "deleted.jsonl")
    tmp = Path(project.dir, f"{LEFTOVER_PREFIX}{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    try:
        with Store.open(str(tmp)) as store, store.write() as conn:
            _insert(conn, issues, deps, comments, [r for _, r in tombstones])
            record_base(conn, files, sync_fingerprints(project))
        with contextlib.suppress(FileNotFoundError):
            os.unlink(project.db + "-journal")  # a hot journal belongs to the damaged file
        os.replace(tmp, project.db)
    finally:
        tmp.unlink(missing_ok=True)
        Path(f"{tmp}-journal").unlink(missing_ok=True)
    return Summary(len(issues), len(deps), len(comments), events_kept=0)


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
