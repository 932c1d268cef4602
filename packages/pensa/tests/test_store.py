"""SQLite access: pragmas, migrations, write transactions, error translation."""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from pathlib import Path

import pytest

from pensa import views
from pensa.errors import Busy, DamagedDatabase, ReadOnly, StorageError
from pensa.schema import MIGRATIONS
from pensa.store import Store, translate

from .conftest import database_at_version


def test_every_connection_sets_the_pragmas_and_keeps_its_journal(store: Store) -> None:
    assert store.rows("PRAGMA busy_timeout") == [(5000,)]
    assert store.rows("PRAGMA foreign_keys") == [(1,)]
    assert store.rows("PRAGMA journal_mode") == [("persist",)]


def test_migrations_are_recorded_and_not_rerun(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    with Store.open(path) as first:
        assert first.version() == len(MIGRATIONS)
        names = first.rows("SELECT name FROM migrations")
    with Store.open(path) as second:
        assert (
            second.rows("SELECT name FROM migrations")
            == names
            == [
                ("m001_initial",),
                ("m002_sync",),
                ("m003_labels",),
                ("m004_status_indexes",),
                ("m005_ready_indexes",),
                ("m006_issue_json",),
                ("m007_shards",),
                ("m008_shapes",),
                ("m009_inherited_blockers",),
                ("m010_blocked",),
                ("m011_id_index",),
            ]
        )


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    with pytest.raises(StorageError, match="newer than this pn"):
        Store.open(path)


def test_write_rolls_back_on_error(store: Store) -> None:
    def failing_write() -> None:
        with store.write() as conn:
            conn.execute(
                "INSERT INTO events (issue_id, event_type, created_at) VALUES ('x', 'y', 'z')"
            )
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        failing_write()
    assert store.rows("SELECT count(*) FROM events") == [(0,)]


def test_sqlite_errors_inside_a_write_are_translated(store: Store) -> None:
    with pytest.raises(StorageError, match="SQLite failed"), store.write() as conn:
        conn.execute("INSERT INTO nowhere VALUES (1)")


@pytest.mark.parametrize(
    ("message", "error"),
    [
        ("attempt to write a readonly database", ReadOnly),
        ("unable to open database file", ReadOnly),
        ("database is locked", Busy),
        ("disk I/O error", StorageError),
        ("file is not a database", DamagedDatabase),
        ("database disk image is malformed", DamagedDatabase),
    ],
)
def test_translate(message: str, error: type[Exception]) -> None:
    assert type(translate(sqlite3.OperationalError(message), path="db.sqlite")) is error


def test_a_waiting_writer_gets_the_lock_when_the_holder_commits(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    Store.open(path).close()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("INSERT INTO events (issue_id, event_type, created_at) VALUES ('a', 'h', 'n')")
    done = threading.Event()

    def wait_and_write() -> None:
        with Store.open(path) as waiter, waiter.write() as conn:  # blocks in BEGIN IMMEDIATE
            conn.execute(
                "INSERT INTO events (issue_id, event_type, created_at) VALUES ('b', 'w', 'n')"
            )
        done.set()

    thread = threading.Thread(target=wait_and_write)
    thread.start()
    assert not done.wait(timeout=0.3)  # still waiting for the lock, not failing
    holder.execute("COMMIT")
    holder.close()
    thread.join(timeout=10)
    assert done.is_set()
    with Store.open(path) as check:
        assert check.rows("SELECT event_type FROM events ORDER BY seq") == [("h",), ("w",)]


def test_each_migration_is_declared_once_in_order() -> None:
    names = [step.__name__ for step in MIGRATIONS]
    assert names == sorted(set(names))
    assert [name[:4] for name in names] == [f"m{n:03}" for n in range(1, len(names) + 1)]


def test_writers_take_turns_on_a_lock_file_git_ignores(tmp_path: Path) -> None:
    """Writers queue on `<db>.lock` (flock) before BEGIN IMMEDIATE; the file is
    in pensa's .gitignore, and a write waits while another process holds the turn."""
    import fcntl
    import threading
    import time

    from pensa.project import GITIGNORE

    db = tmp_path / "db.sqlite"
    assert "db.sqlite.lock\n" in GITIGNORE
    with Store.open(db) as store:
        lock = os.open(str(db) + ".lock", os.O_RDWR)
        fcntl.flock(lock, fcntl.LOCK_EX)  # another writer's turn
        wrote = threading.Event()

        def write() -> None:
            with Store.open(db) as other, other.write() as conn:
                conn.execute("INSERT INTO migrations VALUES ('m', 'now')")
            wrote.set()

        thread = threading.Thread(target=write)
        thread.start()
        time.sleep(0.2)
        assert not wrote.is_set()  # waiting for its turn
        os.close(lock)
        thread.join(timeout=10)
        assert wrote.is_set()
        assert store.rows("SELECT applied_at FROM migrations WHERE name = 'm'") == [("now",)]


def test_a_write_goes_ahead_where_no_lock_file_can_be_made(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite"
    with Store.open(db) as store:
        store.path = str(tmp_path / "missing-dir" / "db.sqlite")  # the lock file cannot exist
        with store.write() as conn:
            conn.execute("CREATE TABLE t (x)")
        assert store.rows("SELECT count(*) FROM t") == [(0,)]


def test_labels_a_newer_pensa_left_in_extra_move_to_their_column(tmp_path: Path) -> None:
    path = database_at_version(
        tmp_path / "db.sqlite",
        2,
        "INSERT INTO issues (id, title, issue_type, created_at, updated_at, extra) VALUES "
        "('pn-1', 't', 'task', 'c', 'u', '{\"labels\":[\"b\",\"a\",\"b\"],\"x\":1}'), "
        "('pn-2', 't', 'task', 'c', 'u', '{\"labels\":[]}'), "
        "('pn-3', 't', 'task', 'c', 'u', NULL)",
    )
    with Store.open(path) as store:
        assert store.rows("SELECT id, labels, extra FROM issues ORDER BY id") == [
            ("pn-1", '["a","b"]', '{"x":1}'),
            ("pn-2", None, None),
            ("pn-3", None, None),
        ]
        assert ("m003_labels",) in store.rows("SELECT name FROM migrations")


def test_a_version_4_database_gains_the_ready_indexes_over_its_rows(tmp_path: Path) -> None:
    path = database_at_version(
        tmp_path / "db.sqlite",
        4,
        "INSERT INTO issues (id, title, issue_type, status, created_at, updated_at) "
        "VALUES (?, 't', 'task', ?, 'c', 'u')",
        [("pn-1", "open"), ("pn-2", "in_progress"), ("pn-3", "closed")],
    )
    with Store.open(path) as store:
        assert store.version() == len(MIGRATIONS) == 11
        indexed = {
            name: {r[0] for r in store.rows(f"SELECT id FROM issues INDEXED BY {name} WHERE {w}")}
            for name, w in (
                ("issues_ready", "status = 'open'"),
                ("issues_unclosed", "status > 'closed'"),
            )
        }
        assert indexed == {"issues_ready": {"pn-1"}, "issues_unclosed": {"pn-1", "pn-2"}}
        assert store.rows("PRAGMA integrity_check") == [("ok",)]


def test_a_version_5_database_gains_each_open_issues_json_in_its_ready_index(
    tmp_path: Path,
) -> None:
    path = database_at_version(
        tmp_path / "db.sqlite",
        5,
        "INSERT INTO issues (id, title, issue_type, status, created_at, updated_at, labels) "
        "VALUES (?, 'ü \"t\"', 'task', ?, 'c', 'u', ?)",
        [("pn-1", "open", '["a","b"]'), ("pn-2", "closed", None), ("pn-3", "open", None)],
    )
    with Store.open(path) as store:
        assert store.version() == 11
        names = {r[0] for r in store.rows("SELECT name FROM sqlite_master")}
        assert "issues_ready" in names
        assert "issues_open" not in names
        in_index = store.rows(
            "SELECT id, issue_json FROM issues INDEXED BY issues_ready WHERE status = 'open' "
            "ORDER BY id"
        )
        assert [(i, json.loads(j)) for i, j in in_index] == [
            (issue.id, issue.to_json())
            for issue in views.select(store, ["status = 'open'"], [], order="id")
        ]
        assert json.loads(in_index[0][1])["labels"] == ["a", "b"]
        assert store.rows("PRAGMA integrity_check") == [("ok",)]


def test_labels_broken_by_hand_are_kept_as_one_label_rather_than_fail_the_json_index(
    tmp_path: Path,
) -> None:
    path = database_at_version(
        tmp_path / "db.sqlite",
        5,
        "INSERT INTO issues (id, title, issue_type, created_at, updated_at, labels) "
        "VALUES (?, 't', 'task', 'c', 'u', ?)",
        [("pn-1", "[broken"), ("pn-2", "5"), ("pn-3", '["fine"]'), ("pn-4", None)],
    )
    with Store.open(path) as store:
        labels = {i.id: i.labels for i in views.select(store, [], [], order="id")}
        assert labels == {"pn-1": ("[broken",), "pn-2": ("5",), "pn-3": ("fine",), "pn-4": ()}
        assert json.loads(b"".join(views.Query(()).json_utf8(store)))[0]["labels"] == ["[broken"]


def test_an_sqlite_too_old_for_the_schema_is_named_before_anything_is_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite3, "sqlite_version_info", (3, 30, 1))
    monkeypatch.setattr(sqlite3, "sqlite_version", "3.30.1")
    with pytest.raises(StorageError, match=r"needs SQLite 3\.31\.0 or newer; .* SQLite 3\.30\.1"):
        Store.open(tmp_path / "db.sqlite")
    assert not (tmp_path / "db.sqlite").exists()


def test_a_version_6_database_keeps_its_sync_base_and_will_write_every_shard(
    tmp_path: Path,
) -> None:
    """m007: the files move to the shards at the next export (`export_dirty`'s `all`), and
    the base of the old files is kept for the sync that reads them until then."""
    path = database_at_version(
        tmp_path / "db.sqlite",
        6,
        "INSERT INTO sync_base (name, fingerprint, content) VALUES (?, ?, ?)",
        [("issues.jsonl", "1:2:3", b"old"), ("deps.jsonl", "4:5:6", b"")],
    )
    with Store.open(path) as store:
        assert store.version() == 11
        assert store.rows("SELECT name, fingerprint, oid, written, content FROM sync_base") == [
            ("issues.jsonl", "1:2:3", None, None, b"old"),
            ("deps.jsonl", "4:5:6", None, None, b""),
        ]
        assert store.rows("SELECT kind, key FROM export_dirty") == [("all", "")]
        with store.write() as conn:
            conn.execute(
                "INSERT INTO issues (id, title, issue_type, created_at, updated_at) "
                "VALUES ('pn-1a000000', 't', 'task', 'c', 'u')"
            )
        assert ("issues", "pn-1a000000") in store.rows("SELECT kind, key FROM export_dirty")


def test_a_version_10_database_keeps_every_row_and_makes_ids_unique_by_an_index(
    tmp_path: Path,
) -> None:
    """m011: `issues` rebuilt without the column's UNIQUE, which `issues_id` now keeps (the
    import drops and sorts it once). Rows, links, flags and the seq counter stay; ids stay
    unique, dependencies still need their issues, and the triggers still keep the flags and
    the export's notes."""
    path = database_at_version(
        tmp_path / "db.sqlite",
        10,
        "INSERT INTO issues (id, title, issue_type, status, created_at, updated_at) "
        "VALUES (?, 't', 'task', ?, 'c', 'u')",
        [("pn-1", "open"), ("pn-2", "open"), ("pn-3", "closed")],
    )
    conn = sqlite3.connect(path, isolation_level=None)
    conn.executescript(
        "INSERT INTO deps (issue_id, depends_on_id) VALUES ('pn-1', 'pn-2');"
        "UPDATE issues SET blocked = 1 WHERE id = 'pn-1';"
        "INSERT INTO comments (id, issue_id, actor, text, created_at) "
        "VALUES ('pc-1', 'pn-1', 'a', 'kept', 'c');"
        "INSERT INTO events (issue_id, event_type, created_at) VALUES ('pn-1', 'created', 'c');"
        "DELETE FROM issues WHERE id = 'pn-3';"
        "DELETE FROM export_dirty;"
    )
    conn.close()
    with Store.open(path) as store:
        assert store.version() == 11
        assert store.rows("SELECT seq, id, blocked FROM issues ORDER BY seq") == [
            (1, "pn-1", 1),
            (2, "pn-2", 0),
        ]
        assert store.rows("SELECT issue_id, depends_on_id FROM deps") == [("pn-1", "pn-2")]
        assert store.rows("SELECT text FROM comments") == [("kept",)]
        assert store.rows("SELECT count(*) FROM events") == [(1,)]
        assert store.rows("SELECT seq FROM sqlite_sequence WHERE name = 'issues'") == [(3,)]
        assert (
            store.rows("SELECT name FROM sqlite_master WHERE tbl_name = 'issues' AND sql IS NULL")
            == []
        )
        assert store.rows("PRAGMA integrity_check") == [("ok",)]

        def write(sql: str) -> None:
            with store.write() as conn2:
                conn2.execute(sql)

        with pytest.raises(StorageError, match=r"UNIQUE constraint failed: issues\.id"):
            write(
                "INSERT INTO issues (id, title, issue_type, created_at, updated_at) "
                "VALUES ('pn-2', 't', 'task', 'c', 'u')"
            )
        with pytest.raises(StorageError, match="FOREIGN KEY constraint failed"):
            write("INSERT INTO deps (issue_id, depends_on_id) VALUES ('pn-1', 'pn-9')")
        with store.write() as conn2:  # the triggers: pn-2 closes, pn-1 waits no more
            conn2.execute("UPDATE issues SET status = 'closed' WHERE id = 'pn-2'")
        assert store.rows("SELECT blocked FROM issues WHERE id = 'pn-1'") == [(0,)]
        assert ("issues", "pn-2") in store.rows("SELECT kind, key FROM export_dirty")
        plan = store.rows("EXPLAIN QUERY PLAN SELECT title FROM issues WHERE id = 'pn-1'")
        assert "USING INDEX issues_id (id=?)" in str(plan)


def test_the_id_index_migration_runs_only_pensas_own_sql(tmp_path: Path) -> None:
    """m011 rebuilds `issues` from pensa's own statements, never from text the database
    holds (the sandboxed agent can write it): an index or a column planted on the old table
    goes with it, and nothing of theirs is run on the host."""
    path = database_at_version(
        tmp_path / "db.sqlite",
        10,
        "INSERT INTO issues (id, title, issue_type, created_at, updated_at) "
        "VALUES (?, 't', 'task', 'c', 'u')",
        [("pn-1",)],
    )
    conn = sqlite3.connect(path, isolation_level=None)
    conn.executescript(
        "CREATE INDEX sneaky ON issues (title);"
        'ALTER TABLE issues ADD COLUMN "x) SELECT 1; --" TEXT;'
    )
    conn.close()
    with Store.open(path) as store:  # (a foreign index or column would be refused here)
        assert store.version() == 11
        assert store.rows("SELECT id, title FROM issues") == [("pn-1", "t")]
        assert store.rows("SELECT name FROM sqlite_master WHERE name = 'sneaky'") == []
