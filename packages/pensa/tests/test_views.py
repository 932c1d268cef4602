"""The read queries at scale: `ready` against an oracle in Python, with and without the
indexes it is planned around (schema.m005_ready_indexes, m006_issue_json), and the plan."""

from __future__ import annotations

import json
import random
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pensa.models import IssueType, Priority
from pensa.schema import ISSUE_JSON_M008
from pensa.store import Store
from pensa.views import ACTIVE, ISSUE_JSON, Filters, Query, ready_query

READY_INDEXES = ("issues_ready", "issues_unclosed")
TYPES = ("epic", "feature", "task", "bug", "spike", "test", "chore")
STATUSES = ("open", "in_progress", "closed")


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    """600 issues of every type, status, priority and a few assignees (`human` too), with
    labels, text that needs escaping, and 500 random dependencies: inserted with SQL."""
    rng = random.Random(12)
    path = tmp_path_factory.mktemp("big") / "db.sqlite"
    with Store.open(path) as store:
        with store.write() as conn:
            for n in range(600):
                status = rng.choice(STATUSES)
                conn.execute(
                    "INSERT INTO issues (id, title, description, issue_type, status, priority, "
                    "spec, assignee, created_at, updated_at, labels) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        f"pn-{n:08x}",
                        rng.choice(["plain", 'quote " and \\ slash', "ünïcode ✓", "tab\there"]),
                        rng.choice([None, "line one\nline two", "x"]),
                        rng.choice(TYPES),
                        status,
                        f"p{rng.randrange(4)}",
                        rng.choice([None, "auth", "db"]),
                        rng.choice([None, None, "ann", "human"]) if status != "closed" else None,
                        f"2026-01-01T00:00:00.{n:06d}Z",
                        f"2026-01-02T00:00:00.{n:06d}Z",
                        rng.choice([None, '["a"]', '["a","b"]']),
                    ),
                )
            edges = {(rng.randrange(600), rng.randrange(600)) for _ in range(500)}
            conn.executemany(
                "INSERT INTO deps (issue_id, depends_on_id) VALUES (?, ?)",
                [(f"pn-{a:08x}", f"pn-{b:08x}") for a, b in edges if a != b],
            )
            # a parent is older than its child: no cycle of parents
            conn.executemany(
                "UPDATE issues SET parent = ?, verify = ? WHERE id = ?",
                [
                    (f"pn-{rng.randrange(n):08x}", rng.choice([None, '["make", "a \\"b\\""]']),
                     f"pn-{n:08x}")
                    for n in range(1, 600, 3)
                ],
            )  # fmt: skip
        yield store


FIELDS = ("id", "issue_type", "status", "priority", "spec", "assignee")


def oracle(store: Store, filters: Filters) -> list[dict[str, Any]]:
    """`ready` computed in Python from every issue and every edge, as JSON objects."""
    issues = {
        row[0]: dict(zip(FIELDS, row[:6], strict=True))
        | {"seq": row[6], "labels": json.loads(row[7] or "[]")}
        for row in store.rows(
            "SELECT id, issue_type, status, priority, spec, assignee, seq, labels FROM issues"
        )
    }
    edges: dict[str, list[str]] = {}
    for child, parent in store.rows("SELECT issue_id, depends_on_id FROM deps"):
        edges.setdefault(child, []).append(parent)
    waits: dict[str, list[str]] = {}
    parents: dict[str, str] = {
        str(i): str(p)
        for i, p in store.rows("SELECT id, parent FROM issues WHERE parent IS NOT NULL")
    }
    for child, parent in parents.items():
        waits.setdefault(parent, []).append(child)  # a parent waits for its children

    def ancestors(issue_id: str) -> list[str]:
        chain = []
        above = parents.get(issue_id)
        while above is not None:
            chain.append(above)
            above = parents.get(above)
        return chain

    def blocked(issue_id: str) -> bool:  # a dependency not closed, its own or an ancestor's
        deps = [d for i in (issue_id, *ancestors(issue_id)) for d in edges.get(i, ())]
        return any(issues[d]["status"] != "closed" for d in deps)

    chosen = [
        i
        for i in issues.values()
        if i["status"] == "open"
        and i["issue_type"] != "bug"
        and all(issues[p]["status"] == "closed" for p in waits.get(i["id"], ()))
        and not blocked(i["id"])
        and (i["assignee"] is None or filters.assignee is not None)
        and all(
            i[k] == str(v)
            for k, v in (
                ("priority", filters.priority),
                ("assignee", filters.assignee),
                ("issue_type", filters.issue_type),
                ("spec", filters.spec),
            )
            if v is not None
        )
        and set(filters.labels) <= set(i["labels"])
    ]
    chosen.sort(key=lambda i: (i["priority"], i["seq"]))
    everything = {r.id: r for r in Query(()).issues(store)}
    return [everything[i["id"]].to_json() for i in chosen]


FILTERS = [
    Filters(),
    Filters(issue_type=IssueType.TASK),
    Filters(priority=Priority.P1),
    Filters(spec="auth"),
    Filters(assignee="human"),
    Filters(assignee="ann"),
    Filters(labels=("b",)),
]


@pytest.mark.parametrize("filters", FILTERS)
def test_ready_is_what_the_oracle_computes(big: Store, filters: Filters) -> None:
    query = ready_query(filters)
    assert json.loads(b"".join(query.json_utf8(big))) == oracle(big, filters)
    assert [i.to_json() for i in query.issues(big)] == oracle(big, filters)


@pytest.mark.parametrize("filters", FILTERS)
def test_ready_prints_the_same_bytes_without_its_indexes(big: Store, filters: Filters) -> None:
    """Ready names issues_ready (views.READY_SOURCE); the same query left to the planner, the
    JSON computed from the table, prints the same bytes without the indexes."""
    with_indexes = b"".join(ready_query(filters).json_utf8(big))
    query = ready_query(filters)._replace(source="issues", json_column=ISSUE_JSON)
    big.rows("SAVEPOINT without")
    try:
        for name in READY_INDEXES:
            big.rows(f"DROP INDEX {name}")
        assert b"".join(query.json_utf8(big)) == with_indexes
    finally:
        big.rows("ROLLBACK TO without")
        big.rows("RELEASE without")
    assert {r[0] for r in big.rows("SELECT name FROM sqlite_master")} >= set(READY_INDEXES)


def test_ready_reads_only_its_indexes(big: Store) -> None:
    """The plan that makes `pn ready --json` fit its budget at 100k issues: the
    open issues, their JSON and whether each is blocked from issues_ready, the status of a
    parent's dependencies from issues_unclosed, no row of the table itself."""
    sql = ready_query(Filters())._sql("issue_json")
    plan = " | ".join(str(r[3]) for r in big.rows(f"EXPLAIN QUERY PLAN {sql}"))
    assert "USING INDEX issues_ready" in plan, plan
    assert "COVERING INDEX issues_unclosed" in plan, plan
    assert "TEMP B-TREE" not in plan, plan
    assert _table_reads(big.conn, sql) == [], "the JSON is computed from the table's rows"


def _table_reads(conn: sqlite3.Connection, sql: str) -> list[str]:
    """The opcodes of `sql` that read a column of the issues table's own rows. The query plan
    says `USING INDEX` rather than `COVERING INDEX` for an index on a generated column even
    when SQLite never seeks the row, so the bytecode is the evidence."""
    (root,) = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'issues'").fetchone()
    program = conn.execute(f"EXPLAIN {sql}").fetchall()
    cursors = {r[2] for r in program if r[1] == "OpenRead" and r[3] == root}
    return [str(r[:5]) for r in program if r[1] in ("Column", "Rowid") and r[2] in cursors]


def test_the_table_reads_detector_sees_a_column_read_from_the_table(big: Store) -> None:
    """Without issues_ready the same query computes the JSON from the rows. (On a copy: the
    connection caches the EXPLAIN above, and SQLite does not prepare it again.)"""
    sql = ready_query(Filters())._replace(source="issues")._sql("issue_json")
    copy = sqlite3.connect(":memory:")
    big.conn.backup(copy)
    copy.execute("DROP INDEX issues_ready")
    assert _table_reads(copy, sql)


def test_the_json_is_printed_in_pieces_that_join_to_the_array(big: Store) -> None:
    pieces = ready_query(Filters()).json_utf8(big)
    assert pieces[0].startswith(b"[{")
    assert pieces[-1] == b"]"
    assert all(p.startswith(b",{") for p in pieces[1:-1])
    assert ready_query(Filters(spec="nowhere")).json_utf8(big) == [b"[]"]


def test_text_that_is_not_utf8_fails_as_reading_it_as_text_does(tmp_path: Path) -> None:
    """Only a hand edit can put such bytes in; the command fails rather than print them."""
    from pensa.errors import StorageError

    with Store.open(tmp_path / "db.sqlite") as store:
        with store.write() as conn:
            conn.execute(
                "INSERT INTO issues (id, title, issue_type, created_at, updated_at) "
                "VALUES ('pn-1', CAST(x'ff41' AS TEXT), 'task', 'c', 'u')"
            )
        with pytest.raises(StorageError, match="decode"):
            Query(()).json_utf8(store)
        with pytest.raises(StorageError, match="decode"):
            store.rows(Query(())._sql("issue_json"))


def test_utf8_column_leaves_the_connection_reading_text_and_the_collector_as_it_was(
    store: Store,
) -> None:
    import gc

    assert gc.isenabled()
    assert store.utf8_column("SELECT 'ü'") == ["ü".encode()]
    assert store.rows("SELECT 'ü'") == [("ü",)]
    assert store.conn.text_factory is str
    assert gc.isenabled()
    gc.disable()
    try:
        store.utf8_column("SELECT 1")
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_the_ready_index_holds_the_json_and_every_column_ready_filters_on(store: Store) -> None:
    """A filter on a column issues_ready lacks would send ready to the table for every row."""
    columns = [r[2] for r in store.rows("PRAGMA index_xinfo(issues_ready)")]
    filtered = {"status", "priority", "seq", "issue_type", "assignee", "spec", "labels", "id"}
    assert filtered | {"issue_json"} <= set(columns)


def test_the_frozen_issue_json_is_the_one_queries_build() -> None:
    """issues.issue_json is frozen as m008 wrote it: a field added to models.ISSUE_FIELDS
    changes views.ISSUE_JSON and needs a migration that redefines the column too, or
    `ready --json` would leave the field out (the oracle tests check every field)."""
    assert ISSUE_JSON_M008 == ISSUE_JSON


def test_only_open_issues_carry_their_json(big: Store) -> None:
    """quick_check computes every row's virtual columns: closed issues must not cost JSON."""
    rows = big.rows("SELECT status, issue_json IS NULL FROM issues")
    assert {(status, status != "open") for status, _ in rows} == set(rows)


def test_queries_of_other_issues_build_their_json(big: Store) -> None:
    everything = Query(())
    assert everything.json_column == ISSUE_JSON
    assert json.loads(b"".join(everything.json_utf8(big))) == [
        i.to_json() for i in everything.issues(big)
    ]


def test_the_json_follows_every_kind_of_write(tmp_path: Path) -> None:
    """issue_json is computed, never written: edits, labels, claims, closes and reopens all
    show in `ready --json` at once, and the index stays consistent with the table."""
    from pensa.tracker import Tracker

    with Store.open(tmp_path / "db.sqlite") as store:
        tracker = Tracker(store)
        first = tracker.create("first", issue_type=IssueType.TASK, actor="ann")
        second = tracker.create("second", issue_type=IssueType.TEST, actor="ann")
        tracker.update(first.id, actor="ann", title='now "quoted"', priority=Priority.P0)
        tracker.relabel(second.id, actor="ann", add=("ui", "api"))
        tracker.claim(second.id, actor="ann")
        tracker.release(second.id, actor="ann")
        tracker.claim(first.id, actor="ann")
        tracker.close(first.id, actor="ann", reason="done")
        tracker.reopen(first.id, actor="ann")
        expected = [i.to_json() for i in ready_query(Filters()).issues(store)]
        assert json.loads(b"".join(ready_query(Filters()).json_utf8(store))) == expected
        assert [i["title"] for i in expected] == ['now "quoted"', "second"]
        assert expected[1]["labels"] == ["api", "ui"]
        assert store.rows("PRAGMA integrity_check") == [("ok",)]


def test_status_counts_from_covering_indexes_only(big: Store) -> None:
    """`pn status` at 100k issues: both grouped counts read indexes, no table row."""
    from pensa.stats import BLOCKED_COUNTED, EVERY_COUNTED

    for sql, index in ((EVERY_COUNTED, "issues_type_status"), (BLOCKED_COUNTED, "issues_unclosed")):
        plan = " | ".join(str(r[3]) for r in big.rows(f"EXPLAIN QUERY PLAN {sql}"))
        assert f"COVERING INDEX {index}" in plan, plan
        assert _table_reads(big.conn, sql) == [], sql


def test_the_statuses_not_closed_are_asked_as_one_range(big: Store) -> None:
    """`count` and `list` by default ask for every status but closed: one range of the
    status index, the same issues as naming each status."""
    clauses, params = Filters(ACTIVE).where()
    assert clauses == ["status > 'closed'"]
    assert params == []
    named = big.rows("SELECT count(*) FROM issues WHERE status IN ('open', 'in_progress')")
    assert big.rows(f"SELECT count(*) FROM issues WHERE {clauses[0]}") == named
