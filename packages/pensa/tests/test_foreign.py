"""The database is data: a schema pensa did not create is refused before any write, `pn
doctor` names what is foreign and `pn doctor --fix` rebuilds from the committed JSONL."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from pensa.errors import ForeignSchema
from pensa.foreign import QUERY, SCHEMA
from pensa.store import Store

from .conftest import Pn, database_at_version

TRIGGER = (
    "CREATE TRIGGER rewrite AFTER UPDATE ON issues BEGIN "
    "UPDATE issues SET title = 'pwned' WHERE id != NEW.id; END"
)


def plant(db: Path, statement: str) -> None:
    """What the sandboxed agent can do to the file: any SQL at all."""
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute(statement)
    conn.close()


def test_schema_is_exactly_what_the_migrations_create(tmp_path: Path) -> None:
    with Store.open(tmp_path / "db.sqlite") as store:
        assert tuple(store.rows(QUERY)) == SCHEMA


@pytest.mark.parametrize(
    ("statement", "named"),
    [
        (TRIGGER, "trigger rewrite on issues"),
        ("CREATE VIEW v AS SELECT 1", "view v"),
        ("CREATE TABLE loot (x)", "table loot"),
        ("CREATE INDEX sneaky ON issues (title)", "index sneaky on issues"),
        ("ALTER TABLE issues ADD COLUMN x TEXT", "table issues (changed"),
        ("DROP INDEX issues_fixes", "index issues_fixes (missing)"),
    ],
)
def test_a_foreign_schema_is_refused_on_opening(tmp_path: Path, statement: str, named: str) -> None:
    db = tmp_path / "db.sqlite"
    Store.open(db).close()
    plant(db, statement)
    with pytest.raises(ForeignSchema) as caught:
        Store.open(db)
    assert named in str(caught.value)
    assert caught.value.code == "foreign_schema"


def test_a_trigger_planted_after_opening_is_refused_under_the_write_lock(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite"
    with Store.open(db) as store:
        with store.write() as conn:
            conn.execute("INSERT INTO migrations VALUES ('kept', 'now')")
        plant(db, TRIGGER)
        with pytest.raises(ForeignSchema, match="trigger rewrite"), store.write() as conn:
            conn.execute("UPDATE migrations SET applied_at = 'then'")
        assert store.rows("SELECT applied_at FROM migrations WHERE name = 'kept'") == [("now",)]


def test_an_old_database_with_a_trigger_is_refused_before_migrating(tmp_path: Path) -> None:
    """The migrations update rows: a trigger would run inside them."""
    db = database_at_version(
        tmp_path / "db.sqlite", 2, "INSERT INTO migrations VALUES ('m', 'now')"
    )
    plant(db, "CREATE TRIGGER t AFTER UPDATE ON issues BEGIN DELETE FROM deps; END")
    with pytest.raises(ForeignSchema, match="trigger t on issues"):
        Store.open(db)
    assert sqlite3.connect(db).execute("PRAGMA user_version").fetchone() == (2,)


@pytest.mark.process
def test_close_on_a_tampered_database_is_refused_and_doctor_rebuilds_it(pn: Pn, repo: Path) -> None:
    first = pn("create", "first", "-t", "task", "--json").json()["id"]
    second = pn("create", "second", "-t", "task", "--json").json()["id"]
    assert pn("export").code == 0
    db = repo / ".pensa" / "db.sqlite"
    plant(db, TRIGGER)

    done = pn("close", first, "--reason", "done", "--json")
    assert done.code == 1
    assert done.error()["code"] == "foreign_schema"
    assert "trigger rewrite on issues" in done.error()["error"]
    done = pn("close", first, "--reason", "done")
    assert done.code == 1
    assert len(done.err.splitlines()) == 1
    titles = sqlite3.connect(db).execute("SELECT title FROM issues ORDER BY seq").fetchall()
    assert titles == [("first",), ("second",)]

    done = pn("doctor")
    assert done.code == 0
    assert "[foreign_schema] trigger rewrite on issues" in done.out
    assert "no problems found" not in done.out
    findings = pn("doctor", "--json").json()["findings"]
    assert [f["check"] for f in findings] == ["foreign_schema"]

    fixed = pn("doctor", "--fix", "--json").json()
    assert [f["check"] for f in fixed["fixes"]] == ["foreign_schema"]
    assert "no problems found" in pn("doctor").out
    assert pn("close", first, "--reason", "done").code == 0
    shown = {i["id"]: i for i in pn("list", "--all", "--json").json()}
    assert shown[first]["status"] == "closed"
    assert shown[second]["title"] == "second"
    assert shown[second]["status"] == "open"


@pytest.mark.process
def test_import_rebuilds_a_tampered_database_beside_it(pn: Pn, repo: Path) -> None:
    pn("create", "first", "-t", "task")
    assert pn("export").code == 0
    plant(repo / ".pensa" / "db.sqlite", TRIGGER)
    assert pn("import").code == 0
    assert pn("list", "--json").json()[0]["title"] == "first"


def test_trusted_schema_is_off_wherever_sqlite_accepts_pensas_schema_under_it(
    tmp_path: Path,
) -> None:
    """SQLite 3.40 counts json_object (issues.issue_json) as unsafe under OFF; newer ones
    may not. Either way pensa's own statements keep working."""
    db = tmp_path / "db.sqlite"
    Store.open(db).close()
    probe = sqlite3.connect(db)
    probe.execute("PRAGMA trusted_schema = OFF")
    try:
        probe.execute("SELECT issue_json FROM issues LIMIT 0")
        accepted = True
    except sqlite3.DatabaseError:
        accepted = False
    with Store.open(db) as store:
        assert store.rows("PRAGMA trusted_schema") == [(0 if accepted else 1,)]
        with store.write() as conn:
            conn.execute(
                "INSERT INTO issues (id, title, issue_type, created_at, updated_at) "
                "VALUES ('pn-1', 't', 'task', 'x', 'x')"
            )
        assert store.rows("SELECT issue_json IS NOT NULL FROM issues") == [(1,)]
