"""integrity.quick_check says what `PRAGMA quick_check` says, whatever the database holds."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pensa import integrity
from pensa.errors import StorageError
from pensa.integrity import CHECKS, OneOf
from pensa.store import Store


def _checks_in(sql: str) -> list[str]:
    """The condition of every `CHECK (...)` in a CREATE TABLE, parentheses balanced."""
    found = []
    for start in (m.end() for m in re.finditer(r"CHECK\s*\(", sql)):
        depth, end = 1, start
        while depth:
            depth += {"(": 1, ")": -1}.get(sql[end], 0)
            end += 1
        found.append(" ".join(sql[start : end - 1].split()))
    return found


def test_the_checks_are_every_check_of_the_schema(store: Store) -> None:
    in_schema = {
        str(name): _checks_in(str(sql))
        for name, sql in store.rows("SELECT name, sql FROM sqlite_master WHERE type = 'table'")
    }
    mirrored = {
        table: [c if isinstance(c, str) else c.written() for c in checks]
        for table, checks in CHECKS.items()
    }
    assert {t: c for t, c in in_schema.items() if c} == mirrored


@pytest.mark.parametrize("value", [None, "bug", "task", "chore", "BUG", "", "bugs", "'", 1])
def test_a_one_of_test_is_true_false_or_null_exactly_when_the_check_is(
    store: Store, value: object
) -> None:
    check = OneOf("x", ("bug", "task", "test", "chore"))
    written, tested = store.rows(
        f"SELECT {check.written()}, {check.test()} FROM (SELECT ? AS x)", (value,)
    )[0]
    assert written == tested


def test_a_healthy_database_is_ok_and_checks_stay_enforced(store: Store) -> None:
    assert integrity.quick_check(store) == ["ok"]
    assert store.rows("PRAGMA ignore_check_constraints") == [(0,)]


@pytest.mark.parametrize(
    ("table", "row"),
    [
        ("issues", "('pn-1', 't', 'story', 'open', 'p2', 'c', 'u')"),
        ("issues", "('pn-1', 't', 'task', 'done', 'p2', 'c', 'u')"),
        ("issues", "('pn-1', 't', 'task', 'open', 'p9', 'c', 'u')"),
        ("deps", "('pn-1', 'pn-1')"),
    ],
)
def test_a_row_that_breaks_a_check_gets_quick_checks_own_words(
    tmp_path: Path, table: str, row: str
) -> None:
    with Store.open(tmp_path / "db.sqlite") as store:
        store.rows("PRAGMA ignore_check_constraints = ON")
        store.rows("PRAGMA foreign_keys = OFF")
        columns = {
            "issues": "(id, title, issue_type, status, priority, created_at, updated_at)",
            "deps": "(issue_id, depends_on_id)",
        }[table]
        store.rows(f"INSERT INTO {table} {columns} VALUES {row}")
        store.rows("PRAGMA ignore_check_constraints = OFF")
        expected = [str(r[0]) for r in store.rows("PRAGMA quick_check")]
        assert expected != ["ok"]
        assert integrity.quick_check(store) == expected


def test_a_table_too_damaged_to_scan_is_left_to_quick_check(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    def damaged(*_: object) -> bool:
        raise StorageError("database disk image is malformed")

    asked: list[str] = []
    rows = store.rows

    def spy(sql: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
        asked.append(sql)
        return rows(sql, params)

    monkeypatch.setattr(store, "rows", spy)
    assert integrity.quick_check(store, violated=damaged) == ["ok"]
    assert asked[-1] == "PRAGMA quick_check"
    assert asked.count("PRAGMA quick_check") == 2


def test_a_broken_structure_is_left_to_quick_check_without_scanning(store: Store) -> None:
    def unseen(*_: object) -> bool:
        raise AssertionError("scanned a table quick_check already failed")

    assert integrity.quick_check(store, structure_ok=lambda _store: False, violated=unseen) == [
        "ok"
    ]  # the plain check's own verdict
