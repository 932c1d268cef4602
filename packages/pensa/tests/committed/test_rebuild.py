"""`pn import`'s rebuild: what it checks itself so SQLite need not, what it puts back, and
the order and content of what it writes."""

from __future__ import annotations

import gc
import json
import re
import sqlite3
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from pensa.committed import base, jsonl, overlap
from pensa.committed.disk import jsonl_files
from pensa.committed.rebuild import _REBUILD_PRAGMAS, _insert_rows, _rebuild_settings
from pensa.committed.records import (
    COMMENT_FIELDS,
    DEP_FIELDS,
    REQUIRED,
    TOMBSTONE_FIELDS,
)
from pensa.errors import InvalidData, StorageError
from pensa.models import ISSUE_FIELDS
from pensa.project import Project, at
from pensa.store import Store

STAMP = "2026-01-02T03:04:05.000000Z"


@pytest.fixture
def project(tmp_path: Path) -> Project:
    found = at(tmp_path / ".pensa")
    found.ensure()
    return found


def issue(issue_id: str, **more: object) -> dict[str, object]:
    return {
        "id": issue_id,
        "title": f"title of {issue_id}",
        "issue_type": "task",
        "status": "open",
        "priority": "p2",
        "created_at": STAMP,
        "updated_at": STAMP,
        **more,
    }


def write(project: Project, name: str, *records: Mapping[str, object]) -> None:
    lines = (json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in records)
    Path(project.dir, name).write_text("".join(lines), encoding="utf-8")


def rows(project: Project, sql: str) -> list[tuple[object, ...]]:
    with Store.open(project.db) as store:
        return store.rows(sql)


# --- what SQLite is spared, and why that is safe ------------------------------------------


def checks(sql: str) -> Iterator[str]:
    """The CHECK clauses of a CREATE TABLE statement."""
    for found in re.finditer(r"CHECK \(", sql):
        depth, start = 1, found.end()
        for end in range(start, len(sql)):
            depth += {"(": 1, ")": -1}.get(sql[end], 0)
            if depth == 0:
                yield " ".join(sql[start:end].split())
                break


def test_the_schema_checks_only_what_the_import_checks_itself(tmp_path: Path) -> None:
    """The rebuild turns SQLite's CHECK constraints off (`_REBUILD_PRAGMAS`): each must be a
    rule `committed.records` or `committed.rebuild` already enforces, with a file:line
    message. A new CHECK fails this test until the import checks it too."""
    with Store.open(tmp_path / "db.sqlite") as store:
        tables = store.rows("SELECT sql FROM sqlite_master WHERE type = 'table'")
    assert sorted(c for (sql,) in tables for c in checks(sql)) == [
        "issue_id != depends_on_id",  # "depends on itself"
        "issue_type IN ('epic', 'feature', 'task', 'bug', 'spike', 'test', 'chore')",  # exact
        "parent != id",  # "parent ...: the issue itself"
        "priority IN ('p0', 'p1', 'p2', 'p3')",  # Priority, exact
        "size IN ('S', 'M', 'L')",  # Size, exact
        "status IN ('open', 'in_progress', 'closed')",  # Status, exact
    ]


def test_a_field_no_record_sets_may_be_left_out_of_the_insert(tmp_path: Path) -> None:
    """The rebuild does not name a field no record sets (`_set_somewhere`), so SQLite fills
    the column with its default: that must be NULL, what the record says, for every field
    a record may leave unset."""
    tables = {
        "issues": ("issues.jsonl", ISSUE_FIELDS),
        "deps": ("deps.jsonl", DEP_FIELDS),
        "comments": ("comments.jsonl", COMMENT_FIELDS),
        "tombstones": ("deleted.jsonl", TOMBSTONE_FIELDS),
    }
    with Store.open(tmp_path / "db.sqlite") as store:
        for table, (name, fields) in tables.items():
            defaults = {row[1]: row[4] for row in store.rows(f"PRAGMA table_info({table})")}
            optional = [f for f in fields if f not in REQUIRED[name]]
            assert {f: defaults[f] for f in optional} == dict.fromkeys(optional), table


def test_fields_set_by_some_records_or_by_none_go_in_as_the_records_say(
    project: Project,
) -> None:
    write(project, "issues.jsonl", issue("pn-1", size="S"), issue("pn-2"))
    assert jsonl.import_(project) is not None
    assert rows(project, "SELECT id, size, objective, labels FROM issues ORDER BY id") == [
        ("pn-1", "S", None, None),
        ("pn-2", None, None, None),
    ]


def test_the_schema_references_only_what_the_import_checks_itself(tmp_path: Path) -> None:
    """The rebuild turns foreign keys off: every reference must be one `committed.contents` proves
    (deps and comments naming a missing issue are left out, fixes names a bug, parent and
    discovered_from name an issue)."""
    with Store.open(tmp_path / "db.sqlite") as store:
        names = [n for (n,) in store.rows("SELECT name FROM sqlite_master WHERE type='table'")]
        references = {
            (table, row[3], row[2], row[4])
            for table in names
            for row in store.rows(f"PRAGMA foreign_key_list({table})")
        }
    assert references == {
        ("comments", "issue_id", "issues", "id"),
        ("deps", "depends_on_id", "issues", "id"),
        ("deps", "issue_id", "issues", "id"),
        ("issues", "fixes", "issues", "id"),
        ("issues", "parent", "issues", "id"),  # "parent ...: no such issue"
        ("issues", "discovered_from", "issues", "id"),
    }


def test_an_import_leaves_every_reference_whole(project: Project) -> None:
    write(project, "issues.jsonl", issue("pn-b", issue_type="bug"), issue("pn-f", fixes="pn-b"))
    write(project, "deps.jsonl", {"issue_id": "pn-f", "depends_on_id": "pn-b"})
    write(
        project,
        "comments.jsonl",
        {"id": "c1", "issue_id": "pn-f", "actor": "a", "text": "t", "created_at": STAMP},
    )
    assert jsonl.import_(project) is not None
    assert rows(project, "PRAGMA foreign_key_check") == []
    assert rows(project, "PRAGMA integrity_check") == [("ok",)]


def test_the_rebuild_settings_are_put_back_even_after_an_error(tmp_path: Path) -> None:
    with Store.open(tmp_path / "db.sqlite") as store:

        def now() -> dict[str, int]:
            return {n: store.conn.execute(f"PRAGMA {n}").fetchone()[0] for n in _REBUILD_PRAGMAS}

        inside: dict[str, int] = {}

        def fail() -> None:
            with _rebuild_settings(store.conn):
                inside.update(now())
                raise RuntimeError

        before = now()
        assert before != _REBUILD_PRAGMAS
        with pytest.raises(RuntimeError):
            fail()
        assert inside == _REBUILD_PRAGMAS
        assert now() == before


@pytest.mark.parametrize("enabled", [True, False])
def test_the_garbage_collector_is_left_as_it_was(project: Project, enabled: bool) -> None:
    write(project, "issues.jsonl", issue("pn-1"))
    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        jsonl.import_(project)
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


# --- what the checks say ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("files", "message"),
    [
        (
            {"issues.jsonl": [issue("pn-1"), issue("pn-2"), issue("pn-1")]},
            "issues.jsonl:3: duplicate id pn-1",
        ),
        (
            {"issues.jsonl": [issue("pn-1", fixes="pn-9")]},
            "issues.jsonl:1: fixes pn-9: no such issue",
        ),
        (
            {
                "issues.jsonl": [issue("pn-1")],
                "deps.jsonl": [{"issue_id": "pn-1", "depends_on_id": "pn-1"}],
            },
            "deps.jsonl:1: pn-1 depends on itself",
        ),
        (
            {
                "issues.jsonl": [issue("pn-1"), issue("pn-2")],
                "deps.jsonl": [
                    {"issue_id": "pn-1", "depends_on_id": "pn-2"},
                    {"issue_id": "pn-1", "depends_on_id": "pn-2"},
                ],
            },
            "deps.jsonl:2: duplicate of line 1",
        ),
        (
            {
                "issues.jsonl": [issue("pn-1"), issue("pn-2")],
                "deps.jsonl": [
                    {"issue_id": "pn-1", "depends_on_id": "pn-2"},
                    {"issue_id": "pn-2", "depends_on_id": "pn-1"},
                ],
            },
            "deps.jsonl:1: dependency cycle pn-1 -> pn-2 -> pn-1",
        ),
        (
            {
                "issues.jsonl": [issue("pn-1")],
                "comments.jsonl": [
                    {"id": "c", "issue_id": "pn-1", "actor": "a", "text": "t", "created_at": STAMP},
                    {"id": "c", "issue_id": "pn-1", "actor": "a", "text": "u", "created_at": STAMP},
                ],
            },
            "comments.jsonl:2: duplicate id c",
        ),
        (
            {"issues.jsonl": [issue("pn-1")], "deleted.jsonl": [{"id": "pn-2"}]},
            "deleted.jsonl:1: missing field(s) deleted_at",
        ),
    ],
)
@pytest.mark.parametrize("discard_local", [False, True])
def test_a_bad_reference_fails_with_file_and_line_and_changes_nothing(
    project: Project, files: dict[str, list[dict[str, object]]], message: str, discard_local: bool
) -> None:
    """With `--discard-local`, the checks across records are made while SQLite has cleared
    the tables and builds the issues' indexes on the side: a wrong line still rolls it all
    back, and no thread is left behind."""
    write(project, "issues.jsonl", issue("pn-0"))
    jsonl.import_(project)
    before = Path(project.db).read_bytes()
    threads = threading.enumerate()
    for name, records in files.items():
        write(project, name, *records)
    with pytest.raises(InvalidData) as raised:
        jsonl.import_(project, discard_local=discard_local)
    assert str(raised.value) == message
    assert Path(project.db).read_bytes() == before
    assert threading.enumerate() == threads


def test_the_import_clears_the_tables_and_builds_the_indexes_beside_its_python_work(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What SQLite does for long without Python's help runs on the side thread
    (`committed.overlap`): with 100k issues, the deletes while the files are read, the
    issues' indexes while the other files are read and checked."""
    write(project, "issues.jsonl", issue("pn-1"), issue("pn-2"))
    write(project, "deps.jsonl", {"issue_id": "pn-1", "depends_on_id": "pn-2"})
    jsonl.import_(project)
    handed: list[list[str]] = []
    run = overlap.SideStatements.run

    def recorded(side: overlap.SideStatements, statements: list[str]) -> None:
        handed.append(statements)
        run(side, statements)

    monkeypatch.setattr(overlap.SideStatements, "run", recorded)
    jsonl.import_(project, discard_local=True)
    clearing, issue_indexes, rest = handed
    assert "DELETE FROM issues" in clearing
    assert {'DROP INDEX "issues_ready"', 'DROP INDEX "issues_id"'} <= set(clearing)
    assert any(s.startswith("CREATE INDEX issues_ready ") for s in issue_indexes)
    assert any(s.startswith("CREATE INDEX deps_parent ") for s in rest)
    with Store.open(project.db) as store:
        assert store.rows("SELECT issue_id, blocked FROM deps JOIN issues ON id = issue_id") == [
            ("pn-1", 1)
        ]


@pytest.mark.parametrize(
    "field", ["id", "title", "issue_type", "status", "priority", "created_at", "updated_at"]
)
def test_a_required_field_set_to_null_is_one_clear_error(project: Project, field: str) -> None:
    """`"status": null` once crashed the vocabulary check (or reached SQLite's NOT NULL)."""
    write(project, "issues.jsonl", issue("pn-0"))
    jsonl.import_(project)
    before = Path(project.db).read_bytes()
    write(project, "issues.jsonl", issue("pn-0"), issue("pn-1", **{field: None}))
    with pytest.raises(InvalidData) as raised:
        jsonl.import_(project)
    assert str(raised.value) == f"issues.jsonl:2: field {field} must be a non-empty string"
    assert Path(project.db).read_bytes() == before


# --- what is written ------------------------------------------------------------------------


def test_issues_and_comments_go_in_in_creation_order(project: Project) -> None:
    times = {"pn-a": "2026-01-03", "pn-b": "2026-01-01", "pn-c": "2026-01-02", "pn-d": "2026-01-01"}
    write(
        project,
        "issues.jsonl",
        *(issue(i, created_at=f"{day}T00:00:00Z") for i, day in sorted(times.items())),
    )
    write(
        project,
        "comments.jsonl",
        *(
            {"id": c, "issue_id": "pn-a", "actor": "a", "text": c, "created_at": f"{day}T00:00:00Z"}
            for c, day in (("c1", "2026-02-02"), ("c2", "2026-02-01"), ("c0", "2026-02-02"))
        ),
    )
    jsonl.import_(project)
    assert rows(project, "SELECT id FROM issues ORDER BY seq") == [
        ("pn-b",),
        ("pn-d",),
        ("pn-c",),
        ("pn-a",),
    ]
    assert rows(project, "SELECT id FROM comments ORDER BY seq") == [("c2",), ("c0",), ("c1",)]


def test_unknown_fields_and_labels_survive_an_import_byte_for_byte(project: Project) -> None:
    unknown = {"zeta": {"nested": [1, 2.5, None, True]}, "alpha": "ü ✓", "mid": 10**20}
    write(
        project,
        "issues.jsonl",
        issue("pn-1", labels=["a", "b c"], **unknown),
        issue("pn-2", description="", assignee="me"),
    )
    write(project, "deps.jsonl", {"issue_id": "pn-2", "depends_on_id": "pn-1", **unknown})
    write(
        project,
        "comments.jsonl",
        {"id": "c", "issue_id": "pn-1", "actor": "a", "text": "t", "created_at": STAMP, **unknown},
    )
    write(project, "deleted.jsonl", {"id": "pn-9", "deleted_at": STAMP, **unknown})
    with Store.open(project.db) as store:  # files in the canonical form an export writes
        jsonl.import_(project)
        jsonl.export(store, project)
    first = {p: Path(p).read_bytes() for p in jsonl_files(project)}
    assert b'"alpha":"\xc3\xbc \xe2\x9c\x93"' in first[f"{project.dir}/issues-1.jsonl"]
    jsonl.import_(project)
    with Store.open(project.db) as store:
        jsonl.export(store, project)
    assert {p: Path(p).read_bytes() for p in jsonl_files(project)} == first


def test_rows_go_in_whole_and_in_order_across_statements(tmp_path: Path) -> None:
    with Store.open(tmp_path / "db.sqlite") as store, store.write() as conn:
        columns = (*ISSUE_FIELDS, "extra")
        # Room for 3 rows a statement: 3 full statements, then one row on its own.
        conn.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 3 * len(columns) + 1)
        data = [
            tuple(f"pn-{n}" if c == "id" else issue(f"pn-{n}").get(c) for c in columns)
            for n in range(10)
        ]
        _insert_rows(conn, "issues", columns, data)
        got = conn.execute(f"SELECT {', '.join(columns)} FROM issues ORDER BY seq").fetchall()
    assert got == data


def test_a_database_too_damaged_to_open_is_rebuilt_beside_it(project: Project) -> None:
    write(project, "issues.jsonl", issue("pn-1", labels=["x"]))
    Path(project.db).write_bytes(b"not a database at all" * 100)
    summary = jsonl.import_(project)
    assert summary is not None
    assert (summary.issues, summary.events_kept) == (1, 0)
    assert rows(project, "SELECT id, labels FROM issues") == [("pn-1", '["x"]')]
    assert sorted(p.name for p in Path(project.dir).iterdir() if "import" in p.name) == []


def test_the_thread_that_frees_the_records_is_gone_after_an_import(project: Project) -> None:
    write(project, "issues.jsonl", issue("pn-1"), issue("pn-2"))
    before = threading.enumerate()
    assert jsonl.import_(project) is not None
    assert threading.enumerate() == before


def test_the_thread_that_frees_the_records_is_gone_after_a_failed_import(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(project, "issues.jsonl", issue("pn-1"))
    jsonl.import_(project)
    before = Path(project.db).read_bytes()
    write(project, "issues.jsonl", issue("pn-1"), issue("pn-2"))

    def broken(*_: object) -> None:
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(base, "replace", broken)
    threads = threading.enumerate()
    with pytest.raises(StorageError):
        jsonl.import_(project)
    assert threading.enumerate() == threads
    assert Path(project.db).read_bytes() == before
