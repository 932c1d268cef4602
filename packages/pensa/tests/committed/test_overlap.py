"""The import's second threads: SQL beside Python work, records freed beside SQLite."""

from __future__ import annotations

import sqlite3
import threading

import pytest

from pensa.committed.contents import Contents
from pensa.committed.overlap import FREED_AT_ONCE, SideStatements, freed_meanwhile
from pensa.committed.records import Table


def connection() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    conn.execute("CREATE TABLE t (n INTEGER)")
    return conn


def test_side_statements_run_in_order_on_another_thread_inside_the_transaction() -> None:
    conn = connection()
    conn.execute("BEGIN")
    seen: list[str] = []
    conn.create_function("thread", 0, lambda: seen.append(threading.current_thread().name))
    with SideStatements(conn) as side:
        side.run(["INSERT INTO t VALUES (1)", "INSERT INTO t SELECT n + 1 FROM t"])
        side.wait()
        side.run(["INSERT INTO t SELECT 30 WHERE thread() IS NULL"])
    assert conn.execute("SELECT n FROM t ORDER BY n").fetchall() == [(1,), (2,), (30,)]
    assert conn.in_transaction
    conn.execute("ROLLBACK")
    assert seen == ["pensa-import-sql"]
    assert conn.execute("SELECT count(*) FROM t").fetchone() == (0,)


def test_a_failed_side_statement_is_raised_by_wait_and_stops_the_rest() -> None:
    conn = connection()
    with SideStatements(conn) as side:
        side.run(["INSERT INTO t VALUES (1)", "INSERT INTO nowhere VALUES (1)", "DELETE FROM t"])
        with pytest.raises(sqlite3.OperationalError, match="no such table: nowhere"):
            side.wait()
        side.wait()  # raised once
    assert conn.execute("SELECT n FROM t").fetchall() == [(1,)]


def test_leaving_a_failed_block_waits_for_the_statements_and_keeps_the_first_error() -> None:
    """The caller rolls back next: no statement may still be running then, and the block's
    own error is the one that counts (the statements' is dropped)."""
    conn = connection()
    before = threading.enumerate()

    def failing() -> None:
        with SideStatements(conn) as side:
            side.run(["INSERT INTO t VALUES (1)", "INSERT INTO nowhere VALUES (1)"])
            raise KeyError("the block's own")

    with pytest.raises(KeyError):
        failing()
    assert threading.enumerate() == before
    assert conn.execute("SELECT n FROM t").fetchall() == [(1,)]


def test_the_records_are_freed_a_slice_at_a_time_on_the_second_thread() -> None:
    """One `clear()` would free them in a single call that keeps the GIL to the end, so the
    main thread, back from SQLite, would wait for all of it: the thread empties each list a
    slice at a time (whoever else holds a list, as this test does, sees it emptied)."""
    records = [{"id": f"pn-{n}"} for n in range(3 * FREED_AT_ONCE)]
    rows = [(f"pn-{n}",) for n in range(3 * FREED_AT_ONCE)]
    table = Table(range(1, len(records) + 1), records, rows)
    empty = Table([], [], [])
    garbage = [Contents({}, table, empty, empty, empty)]
    with freed_meanwhile(garbage):
        assert garbage == []  # the thread holds the last references
    assert (records, rows) == ([], [])
