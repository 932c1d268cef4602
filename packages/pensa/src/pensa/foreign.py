"""The database is data, not code: refuse one that holds what pensa did not create.

The sandboxed agent can write `.pensa/db.sqlite`. A trigger it adds (`AFTER UPDATE ON
issues ... UPDATE issues SET title = ...`) would run inside the host's next `pn close`, and
rewrite other issues in the human's name; a view or a changed column could feed the host
anything. So every connection sets `trusted_schema=OFF` (no function with side effects in
the schema, no virtual table) and, before every write, one query compares `sqlite_master`
with `SCHEMA`, which is exactly what the migrations create (a test migrates a new database
and compares). A difference refuses the write with one line; `pn doctor` names each foreign
object and `pn doctor --fix` rebuilds the database from the committed JSONL.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pensa.blocked import blocked_triggers
from pensa.errors import ForeignSchema
from pensa.schema import dirty_triggers

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Sequence

# `sqlite_master` of a database the migrations made (`schema.MIGRATIONS`), by name: type,
# name, table, and the SQL SQLite keeps (ALTER TABLE appends a column to the table's SQL).
# pensa's own triggers (`schema.dirty_triggers`, `blocked.blocked_triggers`) are added below,
# in name order.
_TABLES: tuple[tuple[str, str, str, str | None], ...] = (
    (
        "table",
        "comments",
        "comments",
        "CREATE TABLE comments (\n"
        "            seq INTEGER PRIMARY KEY AUTOINCREMENT,\n"
        "            id TEXT NOT NULL UNIQUE,\n"
        "            issue_id TEXT NOT NULL REFERENCES issues(id) ON DELETE CASCADE,\n"
        "            actor TEXT NOT NULL,\n"
        "            text TEXT NOT NULL,\n"
        "            created_at TEXT NOT NULL\n"
        "        , extra TEXT)",
    ),
    (
        "index",
        "comments_issue",
        "comments",
        "CREATE INDEX comments_issue ON comments (issue_id, seq)",
    ),
    (
        "table",
        "deps",
        "deps",
        "CREATE TABLE deps (\n"
        "            issue_id TEXT NOT NULL REFERENCES issues(id) ON DELETE CASCADE,\n"
        "            depends_on_id TEXT NOT NULL REFERENCES issues(id) ON DELETE "
        "CASCADE, extra TEXT,\n"
        "            PRIMARY KEY (issue_id, depends_on_id),\n"
        "            CHECK (issue_id != depends_on_id)\n"
        "        ) WITHOUT ROWID",
    ),
    ("index", "deps_parent", "deps", "CREATE INDEX deps_parent ON deps (depends_on_id)"),
    (
        "table",
        "events",
        "events",
        "CREATE TABLE events (\n"
        "            seq INTEGER PRIMARY KEY AUTOINCREMENT,\n"
        "            issue_id TEXT NOT NULL,\n"
        "            event_type TEXT NOT NULL,\n"
        "            actor TEXT,\n"
        "            detail TEXT,\n"
        "            created_at TEXT NOT NULL\n"
        "        )",
    ),
    ("index", "events_issue", "events", "CREATE INDEX events_issue ON events (issue_id, seq)"),
    (
        "table",
        "issues",
        "issues",
        # m008 and m011 rebuilt the table under a new name and renamed it: SQLite quotes it.
        'CREATE TABLE "issues" (\n'
        "            seq INTEGER PRIMARY KEY AUTOINCREMENT,\n"
        "            id TEXT NOT NULL,\n"
        "            title TEXT NOT NULL,\n"
        "            description TEXT,\n"
        "            issue_type TEXT NOT NULL CHECK (issue_type IN\n"
        "                ('epic', 'feature', 'task', 'bug', 'spike', 'test', 'chore')),\n"
        "            status TEXT NOT NULL DEFAULT 'open'\n"
        "                CHECK (status IN ('open', 'in_progress', 'closed')),\n"
        "            priority TEXT NOT NULL DEFAULT 'p2' CHECK (priority IN ('p0', 'p1', "
        "'p2', 'p3')),\n"
        "            spec TEXT,\n"
        "            fixes TEXT REFERENCES issues(id) ON DELETE SET NULL,\n"
        "            assignee TEXT,\n"
        "            created_at TEXT NOT NULL,\n"
        "            updated_at TEXT NOT NULL,\n"
        "            closed_at TEXT,\n"
        "            close_reason TEXT,\n"
        "            extra TEXT,\n"
        "            labels TEXT,\n"
        "            parent TEXT REFERENCES issues(id) ON DELETE SET NULL,\n"
        "            discovered_from TEXT REFERENCES issues(id) ON DELETE SET NULL,\n"
        "            size TEXT CHECK (size IN ('S', 'M', 'L')),\n"
        "            objective TEXT,\n"
        "            artifact TEXT,\n"
        "            verify TEXT,\n"
        "            issue_json TEXT AS (CASE WHEN status = 'open' THEN json_object('id', id, "
        "'title', title, 'description', description, 'issue_type', issue_type, 'status', "
        "status, 'priority', priority, 'spec', spec, 'fixes', fixes, 'assignee', assignee, "
        "'created_at', created_at, 'updated_at', updated_at, 'closed_at', closed_at, "
        "'close_reason', close_reason, 'labels', coalesce(json(labels), json_array()), "
        "'parent', parent, 'discovered_from', discovered_from, 'size', size, 'objective', "
        "objective, 'artifact', artifact, 'verify', coalesce(json(verify), json_array())) "
        "END) VIRTUAL,\n"
        "            blocked INTEGER NOT NULL DEFAULT 0,\n"
        "            CHECK (parent != id)\n"
        "        )",
    ),
    (
        "index",
        "issues_children",
        "issues",
        "CREATE INDEX issues_children ON issues (parent, status, id) WHERE parent IS NOT NULL",
    ),
    (
        "index",
        "issues_held",
        "issues",
        "CREATE INDEX issues_held ON issues (assignee, issue_type) WHERE status = 'in_progress'",
    ),
    ("index", "issues_fixes", "issues", "CREATE INDEX issues_fixes ON issues (fixes)"),
    ("index", "issues_id", "issues", "CREATE UNIQUE INDEX issues_id ON issues (id)"),
    (
        "index",
        "issues_ready",
        "issues",
        "CREATE INDEX issues_ready ON issues (status, priority, seq, issue_type, "
        "assignee, blocked, spec, labels, id, issue_json) WHERE status = 'open'",
    ),
    (
        "index",
        "issues_status",
        "issues",
        "CREATE INDEX issues_status ON issues (status, priority, seq)",
    ),
    ("index", "issues_status_id", "issues", "CREATE INDEX issues_status_id ON issues (status, id)"),
    (
        "index",
        "issues_type_status",
        "issues",
        "CREATE INDEX issues_type_status ON issues (issue_type, status, assignee)",
    ),
    (
        "index",
        "issues_unclosed",
        "issues",
        "CREATE INDEX issues_unclosed ON issues (id, status, issue_type, assignee) WHERE "
        "status > 'closed'",
    ),
    (
        "table",
        "migrations",
        "migrations",
        "CREATE TABLE migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)",
    ),
    ("index", "sqlite_autoindex_comments_1", "comments", None),
    ("index", "sqlite_autoindex_migrations_1", "migrations", None),
    ("index", "sqlite_autoindex_sync_base_1", "sync_base", None),
    ("table", "sqlite_sequence", "sqlite_sequence", "CREATE TABLE sqlite_sequence(name,seq)"),
    (
        "table",
        "sync_base",
        "sync_base",
        "CREATE TABLE sync_base (\n"
        "            name TEXT PRIMARY KEY,\n"
        "            fingerprint TEXT NOT NULL,\n"
        "            oid TEXT,\n"
        "            written TEXT,\n"
        "            content BLOB NOT NULL\n"
        "        )",
    ),
    (
        "table",
        "tombstones",
        "tombstones",
        "CREATE TABLE tombstones (\n"
        "            id TEXT PRIMARY KEY,\n"
        "            deleted_at TEXT NOT NULL,\n"
        "            extra TEXT\n"
        "        ) WITHOUT ROWID",
    ),
    (
        "table",
        "export_dirty",
        "export_dirty",
        "CREATE TABLE export_dirty (\n"
        "            kind TEXT NOT NULL,\n"
        "            key TEXT NOT NULL,\n"
        "            PRIMARY KEY (kind, key)\n"
        "        ) WITHOUT ROWID",
    ),
)
SCHEMA: tuple[tuple[str, str, str, str | None], ...] = tuple(
    sorted(
        (
            *_TABLES,
            *(
                ("trigger", name, table, sql)
                for name, table, sql in (*dirty_triggers(), *blocked_triggers())
            ),
        ),
        key=lambda row: row[1],
    )
)
# One query, read in name order like SCHEMA.
QUERY = "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name"


def foreign(rows: Sequence[tuple[str, str, str, str | None]]) -> list[str]:
    """What in `rows` (`QUERY`'s answer) is not pensa's schema, each named: empty when it is
    exactly pensa's."""
    actual = [tuple(r) for r in rows]
    if actual == list(SCHEMA):
        return []
    ours = {row[1]: row for row in SCHEMA}
    theirs = {row[1]: row for row in actual}
    found = []
    for kind, name, table, _ in actual:
        if name not in ours:
            on = f" on {table}" if kind in ("trigger", "index") and table != name else ""
            found.append(f"{kind} {name}{on}")
        elif theirs[name] != ours[name]:
            found.append(f"{kind} {name} (changed: not as pensa created it)")
    found.extend(f"{kind} {name} (missing)" for kind, name, _, _ in SCHEMA if name not in theirs)
    return found


def check(rows: Sequence[tuple[str, str, str, str | None]], path: str | None) -> None:
    """`ForeignSchema` when `rows` (`QUERY`'s answer) hold anything pensa did not create."""
    found = foreign(rows)
    if found:
        raise ForeignSchema(path or "the database", found)


def check_before_migrating(conn: sqlite3.Connection, path: str | None) -> None:
    """`ForeignSchema` for a trigger or view in a database about to be migrated, other than
    pensa's own triggers exactly as it made them: the migrations update rows."""
    ours = {(kind, name, table, sql) for kind, name, table, sql in SCHEMA if kind == "trigger"}
    rows = conn.execute(
        "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE type IN ('trigger', 'view') "
        "ORDER BY name"
    ).fetchall()
    found = [
        f"{k} {n} on {t}" if k == "trigger" else f"{k} {n}"
        for k, n, t, sql in rows
        if (k, n, t, sql) not in ours
    ]
    if found:
        raise ForeignSchema(path or "the database", found)
