"""Versioned schema: small named migrations applied in order, each recorded (llm style).

A migration is declared once, by `@migration` on its function: the decorator appends it to
`MIGRATIONS`, whose length is the schema version. `PRAGMA user_version` holds how many have
run, so opening a current database costs one pragma; the `migrations` table records their
names and when they ran.
"""

# Stays whole: the migrations in the order they run; a database's version counts them.

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Callable

MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = []


def migration(step: Callable[[sqlite3.Connection], None]) -> Callable[[sqlite3.Connection], None]:
    """Register `step` as the next migration (the order of declaration is the order run)."""
    MIGRATIONS.append(step)
    return step


@migration
def m001_initial(conn: sqlite3.Connection) -> None:
    """Issues, deps, comments, events; `seq` keeps creation order exact."""
    for statement in (
        """CREATE TABLE migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)""",
        """CREATE TABLE issues (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            id TEXT NOT NULL UNIQUE,
            title TEXT NOT NULL,
            description TEXT,
            issue_type TEXT NOT NULL CHECK (issue_type IN ('bug', 'task', 'test', 'chore')),
            status TEXT NOT NULL DEFAULT 'open'
                CHECK (status IN ('open', 'in_progress', 'closed')),
            priority TEXT NOT NULL DEFAULT 'p2' CHECK (priority IN ('p0', 'p1', 'p2', 'p3')),
            spec TEXT,
            fixes TEXT REFERENCES issues(id) ON DELETE SET NULL,
            assignee TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            closed_at TEXT,
            close_reason TEXT
        )""",
        "CREATE INDEX issues_status ON issues (status, priority, seq)",
        "CREATE INDEX issues_fixes ON issues (fixes)",
        """CREATE TABLE deps (
            issue_id TEXT NOT NULL REFERENCES issues(id) ON DELETE CASCADE,
            depends_on_id TEXT NOT NULL REFERENCES issues(id) ON DELETE CASCADE,
            PRIMARY KEY (issue_id, depends_on_id),
            CHECK (issue_id != depends_on_id)
        ) WITHOUT ROWID""",
        "CREATE INDEX deps_parent ON deps (depends_on_id)",
        """CREATE TABLE comments (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            id TEXT NOT NULL UNIQUE,
            issue_id TEXT NOT NULL REFERENCES issues(id) ON DELETE CASCADE,
            actor TEXT NOT NULL,
            text TEXT NOT NULL,
            created_at TEXT NOT NULL
        )""",
        "CREATE INDEX comments_issue ON comments (issue_id, seq)",
        """CREATE TABLE events (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            issue_id TEXT NOT NULL,
            event_type TEXT NOT NULL,
            actor TEXT,
            detail TEXT,
            created_at TEXT NOT NULL
        )""",
        "CREATE INDEX events_issue ON events (issue_id, seq)",
    ):
        conn.execute(statement)


@migration
def m002_sync(conn: sqlite3.Connection) -> None:
    """Unknown JSONL fields kept per record, tombstones, and the base of the merging sync."""
    for statement in (
        "ALTER TABLE issues ADD COLUMN extra TEXT",
        "ALTER TABLE deps ADD COLUMN extra TEXT",
        "ALTER TABLE comments ADD COLUMN extra TEXT",
        """CREATE TABLE tombstones (
            id TEXT PRIMARY KEY,
            deleted_at TEXT NOT NULL,
            extra TEXT
        ) WITHOUT ROWID""",
        # The JSONL files as they were at the last sync (import, merge or export) and the
        # stat fingerprint they had then: the merging sync's base, kept out of git.
        # fingerprint before content: every pn command reads the fingerprints, and a column
        # stored after a large blob is only reached through the blob's overflow pages
        """CREATE TABLE sync_base (
            name TEXT PRIMARY KEY,
            fingerprint TEXT NOT NULL,
            content BLOB NOT NULL
        )""",
    ):
        conn.execute(statement)


@migration
def m003_labels(conn: sqlite3.Connection) -> None:
    """Labels: a sorted JSON array per issue, NULL for none.

    One column rather than a table: `pn ready --json` builds each issue's JSON in SQLite,
    and a per-row subquery would cost start-up time on 10,000 issues. Labels a newer pensa
    (or a hand edit) put in the JSONL before this version knew them sit in `extra`; they
    move to the column."""
    conn.execute("ALTER TABLE issues ADD COLUMN labels TEXT")
    conn.execute(
        "UPDATE issues SET labels = (SELECT json_group_array(value) FROM (SELECT DISTINCT value "
        "FROM json_each(issues.extra, '$.labels') ORDER BY value)), "
        "extra = nullif(json_remove(extra, '$.labels'), '{}') "
        "WHERE json_type(extra, '$.labels') = 'array'"
    )
    conn.execute("UPDATE issues SET labels = NULL WHERE labels = '[]'")


@migration
def m004_status_indexes(conn: sqlite3.Connection) -> None:
    """Covering indexes for `pn status`: counting by type, status and assignee
    reads one index instead of the table, and the open or in-progress issues' ids (the
    blockers of `blocked`) come from another."""
    conn.execute("CREATE INDEX issues_type_status ON issues (issue_type, status, assignee)")
    conn.execute("CREATE INDEX issues_status_id ON issues (status, id)")


@migration
def m005_ready_indexes(conn: sqlite3.Connection) -> None:
    """Indexes for `pn ready --json` (<= 2x the start-up floor at 100k issues).

    `issues_open` holds every column of the JSON, for open issues only, in ready's order: the
    open issues are read in order from the index rather than fetched row by row from
    all over the table. It leads with `status` so that the planner, which has no statistics,
    prefers it to issues_status for `status = 'open'`; SQLite uses a partial index only when
    the query repeats its WHERE term (the ready query does). `issues_unclosed` answers "is this
    dependency still open?" (the blocked rule) from the index, without the issue's row."""
    conn.execute(
        "CREATE INDEX issues_open ON issues (status, priority, seq, id, title, description, "
        "issue_type, spec, fixes, assignee, created_at, updated_at, closed_at, close_reason, "
        "labels) WHERE status = 'open'"
    )
    conn.execute("CREATE INDEX issues_unclosed ON issues (id, status) WHERE status > 'closed'")


# An issue as `--json` prints it (views.ISSUE_JSON), frozen as m006 wrote it into
# `issues.issue_json`: a new field needs a migration (a test compares the two). Malformed
# labels fail the write of an open issue, as they fail a read.
ISSUE_JSON_M006 = (
    "json_object('id', id, 'title', title, 'description', description, "
    "'issue_type', issue_type, 'status', status, 'priority', priority, 'spec', spec, "
    "'fixes', fixes, 'assignee', assignee, 'created_at', created_at, "
    "'updated_at', updated_at, 'closed_at', closed_at, 'close_reason', close_reason, "
    "'labels', coalesce(json(labels), json_array()))"
)


@migration
def m006_issue_json(conn: sqlite3.Connection) -> None:
    """Indexes that answer `pn ready --json` and `pn status` by themselves.

    Building the JSON of every ready issue from issues_open's 14 columns took half the ready
    query's time and kept the process at its bench target's edge. `issue_json` is a VIRTUAL
    generated column: nothing stores it in the table and no write path sets it, but
    issues_ready holds its value for every open issue, computed when the row is written, and
    SQLite reads it from there. The index keeps the columns ready's filters test, so no
    filter sends the query to the table.
    It is NULL unless the issue is open: `PRAGMA quick_check` (`pn doctor`) computes every
    row's virtual columns, and the JSON of every issue more than doubled its time. Generated
    columns need SQLite 3.31 (2020; store.OLDEST_SQLITE).

    issues_unclosed gains the type and assignee that `pn status` counts the blocked issues
    by, so that count reads no row of the table either.

    Labels that are not a JSON array (only a hand edit of the database makes them) would fail
    the index and so every command: each such value is kept whole as a single label."""
    conn.execute(
        "UPDATE issues SET labels = json_array(labels) "
        "WHERE labels IS NOT NULL AND (NOT json_valid(labels) OR json_type(labels) != 'array')"
    )
    conn.execute(
        "ALTER TABLE issues ADD COLUMN issue_json TEXT "
        f"AS (CASE WHEN status = 'open' THEN {ISSUE_JSON_M006} END) VIRTUAL"
    )
    conn.execute("DROP INDEX issues_open")
    conn.execute(
        "CREATE INDEX issues_ready ON issues (status, priority, seq, issue_type, assignee, "
        "spec, labels, id, issue_json) WHERE status = 'open'"
    )
    conn.execute("DROP INDEX issues_unclosed")
    conn.execute(
        "CREATE INDEX issues_unclosed ON issues (id, status, issue_type, assignee) "
        "WHERE status > 'closed'"
    )


# Where each table's records are filed (`pensa.committed.disk`): the kind, and the column
# holding the issue id that names the shard.
DIRTY_SOURCES = (
    ("issues", "issues", "id"),
    ("deps", "deps", "issue_id"),
    ("comments", "comments", "issue_id"),
    ("tombstones", "deleted", "id"),
)


def dirty_triggers() -> list[tuple[str, str, str]]:
    """(name, table, SQL) of the triggers that note every changed record in export_dirty."""
    out = []
    for table, kind, column in DIRTY_SOURCES:
        for event, row in (("insert", "NEW"), ("update", "NEW"), ("delete", "OLD")):
            name = f"{table}_dirty_{event}"
            sql = (
                f"CREATE TRIGGER {name} AFTER {event.upper()} ON {table} BEGIN "
                f"INSERT OR IGNORE INTO export_dirty (kind, key) VALUES ('{kind}', "
                f"{row}.{column}); END"
            )
            out.append((name, table, sql))
    return out


@migration
def m007_shards(conn: sqlite3.Connection) -> None:
    """The committed files sharded by id (`pensa.committed.disk`), written only where the
    database changed.

    `export_dirty` holds what changed since the last export: the triggers note each record
    written (its kind and the issue id that names its shard), `file` rows a file that came
    in differing from the database, and an `all` row everything (a database from before
    the shards, or a rebuilt one). The export renders only those shards: every write, in
    every path, is noted where it happens.

    `sync_base` gains each file's base as a git object id (`oid`: a sync asks git which
    files HEAD changed instead of reading them all) and what pn last wrote there
    (`written`), and loses nothing: columns read on every command stay before the content.
    """
    conn.execute(
        "CREATE TEMP TABLE old_base AS SELECT name, fingerprint, content FROM main.sync_base"
    )
    conn.execute("DROP TABLE main.sync_base")
    conn.execute(
        """CREATE TABLE sync_base (
            name TEXT PRIMARY KEY,
            fingerprint TEXT NOT NULL,
            oid TEXT,
            written TEXT,
            content BLOB NOT NULL
        )"""
    )
    conn.execute(
        "INSERT INTO main.sync_base (name, fingerprint, content) "
        "SELECT name, fingerprint, content FROM temp.old_base"
    )
    conn.execute("DROP TABLE temp.old_base")
    conn.execute(
        """CREATE TABLE export_dirty (
            kind TEXT NOT NULL,
            key TEXT NOT NULL,
            PRIMARY KEY (kind, key)
        ) WITHOUT ROWID"""
    )
    for _, _, sql in dirty_triggers():
        conn.execute(sql)
    conn.execute("INSERT INTO export_dirty (kind, key) VALUES ('all', '')")


# The JSON of m008_shapes' `issue_json`, frozen as ISSUE_JSON_M006 is.
ISSUE_JSON_M008 = (
    "json_object('id', id, 'title', title, 'description', description, "
    "'issue_type', issue_type, 'status', status, 'priority', priority, 'spec', spec, "
    "'fixes', fixes, 'assignee', assignee, 'created_at', created_at, "
    "'updated_at', updated_at, 'closed_at', closed_at, 'close_reason', close_reason, "
    "'labels', coalesce(json(labels), json_array()), 'parent', parent, "
    "'discovered_from', discovered_from, 'size', size, 'objective', objective, "
    "'artifact', artifact, 'verify', coalesce(json(verify), json_array()))"
)
# The indexes of `issues` as m001-m006 left them, made again after m008's rebuild.
_ISSUE_INDEXES = (
    "CREATE INDEX issues_status ON issues (status, priority, seq)",
    "CREATE INDEX issues_fixes ON issues (fixes)",
    "CREATE INDEX issues_type_status ON issues (issue_type, status, assignee)",
    "CREATE INDEX issues_status_id ON issues (status, id)",
    "CREATE INDEX issues_ready ON issues (status, priority, seq, issue_type, assignee, "
    "spec, labels, id, issue_json) WHERE status = 'open'",
    "CREATE INDEX issues_unclosed ON issues (id, status, issue_type, assignee) "
    "WHERE status > 'closed'",
)
# Migrations that rebuild a table: SQLite's own recipe (lang_altertable.html, "Making Other
# Kinds Of Table Schema Changes") runs them with foreign keys off, or dropping the old table
# would delete every dependency and comment through ON DELETE CASCADE.
REBUILDS: set[Callable[[sqlite3.Connection], None]] = set()


def _issues_table(name: str, *, made_by: int) -> str:
    """`issues`, created as `name`, as the rebuild of migration `made_by` makes it: m008's
    id is UNIQUE in its column; m011's is unique through `issues_id`, and m011 puts m010's
    `blocked` column in its place."""
    id_column = "id TEXT NOT NULL UNIQUE" if made_by < 11 else "id TEXT NOT NULL"
    blocked = "" if made_by < 11 else "\n            blocked INTEGER NOT NULL DEFAULT 0,"
    as_json = ISSUE_JSON_M008
    return f"""CREATE TABLE {name} (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            {id_column},
            title TEXT NOT NULL,
            description TEXT,
            issue_type TEXT NOT NULL CHECK (issue_type IN
                ('epic', 'feature', 'task', 'bug', 'spike', 'test', 'chore')),
            status TEXT NOT NULL DEFAULT 'open'
                CHECK (status IN ('open', 'in_progress', 'closed')),
            priority TEXT NOT NULL DEFAULT 'p2' CHECK (priority IN ('p0', 'p1', 'p2', 'p3')),
            spec TEXT,
            fixes TEXT REFERENCES issues(id) ON DELETE SET NULL,
            assignee TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            closed_at TEXT,
            close_reason TEXT,
            extra TEXT,
            labels TEXT,
            parent TEXT REFERENCES issues(id) ON DELETE SET NULL,
            discovered_from TEXT REFERENCES issues(id) ON DELETE SET NULL,
            size TEXT CHECK (size IN ('S', 'M', 'L')),
            objective TEXT,
            artifact TEXT,
            verify TEXT,
            issue_json TEXT AS (CASE WHEN status = 'open' THEN {as_json} END) VIRTUAL,{blocked}
            CHECK (parent != id)
        )"""


@migration
def m008_shapes(conn: sqlite3.Connection) -> None:
    """Tasks with a shape: the types epic, feature and spike; an issue's `parent` (the epic
    or feature it belongs to, which closes when its last child closes) and the issue it was
    `discovered_from`; a size; and a Ready Contract: objective, artifact and the `verify`
    commands (a JSON array in order, NULL for none) that prove the work done.

    SQLite cannot change a CHECK or a generated column in place, so `issues` is rebuilt
    (create, copy, drop, rename), its AUTOINCREMENT counter kept. `issues_children` answers
    "has this issue open children?", which `pn ready` asks of every open issue, from an
    index that holds only the issues that have a parent; `issues_held` "what does this agent
    hold?", which every claim asks (one claim per agent), from the issues in progress."""
    conn.execute(_issues_table("issues_m008", made_by=8))
    columns = (
        "seq, id, title, description, issue_type, status, priority, spec, fixes, assignee, "
        "created_at, updated_at, closed_at, close_reason, extra, labels"
    )
    conn.execute(f"INSERT INTO issues_m008 ({columns}) SELECT {columns} FROM issues")
    counter = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'issues'").fetchone()
    conn.execute("DROP TABLE issues")
    conn.execute("ALTER TABLE issues_m008 RENAME TO issues")
    if counter is not None:
        conn.execute(
            "UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = 'issues'", (counter[0],)
        )
    for statement in _ISSUE_INDEXES:
        conn.execute(statement)
    conn.execute("CREATE INDEX issues_children ON issues (parent, status) WHERE parent IS NOT NULL")
    conn.execute(
        "CREATE INDEX issues_held ON issues (assignee, issue_type) WHERE status = 'in_progress'"
    )
    for _, table, sql in dirty_triggers():
        if table == "issues":
            conn.execute(sql)


REBUILDS.add(m008_shapes)


@migration
def m009_inherited_blockers(conn: sqlite3.Connection) -> None:
    """`issues_children` gains the child's id: `pn ready` walks down from a blocked issue to
    every descendant (pensa.ready.BLOCKED_ABOVE) through the index alone."""
    conn.execute("DROP INDEX issues_children")
    conn.execute(_CHILDREN_INDEX_M009)


_CHILDREN_INDEX_M009 = (
    "CREATE INDEX issues_children ON issues (parent, status, id) WHERE parent IS NOT NULL"
)


@migration
def m010_blocked(conn: sqlite3.Connection) -> None:
    """`issues.blocked`, kept by triggers (`pensa.blocked`), and in the ready index after the
    assignee: `pn ready` reads whether each open issue waits on another from the index
    instead of looking its dependencies up."""
    from pensa.blocked import MARK_ALL, blocked_triggers

    conn.execute("ALTER TABLE issues ADD COLUMN blocked INTEGER NOT NULL DEFAULT 0")
    conn.execute(MARK_ALL)
    conn.execute("DROP INDEX issues_ready")
    conn.execute(_READY_INDEX_M010)
    for _, _, sql in blocked_triggers():
        conn.execute(sql)


_READY_INDEX_M010 = (
    "CREATE INDEX issues_ready ON issues (status, priority, seq, issue_type, assignee, "
    "blocked, spec, labels, id, issue_json) WHERE status = 'open'"
)


@migration
def m011_id_index(conn: sqlite3.Connection) -> None:
    """`issues.id` is unique through an index of its own, `issues_id`, not the column's
    UNIQUE: `pn import` drops it with the other indexes while the rows go in and sorts it
    once, where the column's own index (which no DROP INDEX removes) took every id one by
    one, in random order.

    `issues` is rebuilt as m008 did it. Every statement is pensa's own text, never one read
    from the database (which the sandboxed agent can write): the table, its columns, its
    indexes as m010 left them, and the triggers, all dropped first (their bodies name
    `issues`, briefly gone) and made again from their definitions."""
    from pensa.blocked import blocked_triggers

    triggers = [*dirty_triggers(), *blocked_triggers()]
    for name, _, _ in triggers:
        conn.execute(f'DROP TRIGGER IF EXISTS "{name}"')
    conn.execute(_issues_table("issues_m011", made_by=11))
    columns = (
        "seq, id, title, description, issue_type, status, priority, spec, fixes, assignee, "
        "created_at, updated_at, closed_at, close_reason, extra, labels, parent, "
        "discovered_from, size, objective, artifact, verify, blocked"
    )
    conn.execute(f"INSERT INTO issues_m011 ({columns}) SELECT {columns} FROM issues")
    counter = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'issues'").fetchone()
    conn.execute("DROP TABLE issues")
    conn.execute("ALTER TABLE issues_m011 RENAME TO issues")
    if counter is not None:  # (the copy's counter is the highest seq left, maybe none)
        conn.execute("DELETE FROM sqlite_sequence WHERE name = 'issues'")
        conn.execute("INSERT INTO sqlite_sequence (name, seq) VALUES ('issues', ?)", counter)
    for statement in (
        "CREATE UNIQUE INDEX issues_id ON issues (id)",
        *(sql for sql in _ISSUE_INDEXES if " issues_ready " not in sql),
        _READY_INDEX_M010,
        _CHILDREN_INDEX_M009,
        "CREATE INDEX issues_held ON issues (assignee, issue_type) WHERE status = 'in_progress'",
        *(sql for _, _, sql in triggers),
    ):
        conn.execute(statement)


REBUILDS.add(m011_id_index)
