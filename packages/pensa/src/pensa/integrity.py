"""SQLite's `quick_check` for `pn doctor`: the same verdict, in half the time.

Most of `PRAGMA quick_check`'s time went into evaluating the issues table's three CHECK
constraints row by row. So the check runs with `ignore_check_constraints` on, the
constraints are tested by one scan of each table, and only if either finds
anything does the plain `quick_check` run again, so that a damaged database gets the very
messages it always got.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from pensa.errors import StorageError

if TYPE_CHECKING:
    from pensa.store import Store


class OneOf(NamedTuple):
    """`CHECK (column IN (values))`."""

    column: str
    values: tuple[str, ...]

    def written(self) -> str:
        """The constraint as the schema writes it."""
        return f"{self.column} IN ({', '.join(repr(v) for v in self.values)})"

    def test(self) -> str:
        """The same truth value, NULL included, as a chain of `=`: for an IN list of more
        than two values SQLite builds and probes a little index for every row."""
        return "(" + " OR ".join(f"{self.column} = {v!r}" for v in self.values) + ")"


# Every CHECK constraint of the schema (schema.m001_initial, m008_shapes) by table: a
# column's allowed values, or any other condition as SQL. A test compares them with the
# CHECKs of a freshly migrated database, so that a migration cannot add one unseen here.
CHECKS: dict[str, tuple[OneOf | str, ...]] = {
    "issues": (
        OneOf("issue_type", ("epic", "feature", "task", "bug", "spike", "test", "chore")),
        OneOf("status", ("open", "in_progress", "closed")),
        OneOf("priority", ("p0", "p1", "p2", "p3")),
        OneOf("size", ("S", "M", "L")),
        "parent != id",
    ),
    "deps": ("issue_id != depends_on_id",),
}


def quick_check(
    store: Store,
    *,
    structure_ok: Callable[[Store], bool] | None = None,
    violated: Callable[[Store, str, tuple[OneOf | str, ...]], bool] | None = None,
) -> list[str]:
    """What `PRAGMA quick_check` says: `["ok"]`, or its messages. `structure_ok` and
    `violated` are the two cheaper checks it tries first (tests pass their own)."""
    structure_ok = structure_ok or _structure_ok
    violated = violated or _violated
    try:
        if structure_ok(store) and not any(violated(store, *check) for check in CHECKS.items()):
            return ["ok"]
    except StorageError:  # a table too damaged to scan: quick_check describes the damage
        pass
    return [str(r[0]) for r in store.rows("PRAGMA quick_check")]


def _structure_ok(store: Store) -> bool:
    """quick_check without the CHECK constraints: pages, b-trees, NOT NULL, affinities."""
    store.rows("PRAGMA ignore_check_constraints = ON")
    try:
        return [r[0] for r in store.rows("PRAGMA quick_check")] == ["ok"]
    finally:
        store.rows("PRAGMA ignore_check_constraints = OFF")


def _violated(store: Store, table: str, checks: tuple[OneOf | str, ...]) -> bool:
    """Whether a row of `table` fails a CHECK, that is makes it false (NULL passes).

    NOT INDEXED: quick_check tests the table's own rows, and so must this."""
    tests = " AND ".join(c if isinstance(c, str) else c.test() for c in checks)
    return bool(store.rows(f"SELECT 1 FROM {table} NOT INDEXED WHERE NOT ({tests}) LIMIT 1"))
