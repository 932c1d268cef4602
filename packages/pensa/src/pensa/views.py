"""Read-only queries: list, ready, blocked, search, count, status."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from pensa.models import (
    ISSUE_COLUMNS,
    ISSUE_FIELDS,
    LIST_FIELDS,
    Issue,
    IssueType,
    Priority,
    Status,
    Vocabulary,
)
from pensa.ready import BLOCKED, HAS_VERIFY, READY, UNASSIGNED

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pensa.store import Store

# An issue's dependencies and its dependents, as WHERE conditions on `issues` (one parameter:
# the issue's id): written once for show, dep list and dep tree.
DEPENDENCIES_OF = "id IN (SELECT depends_on_id FROM deps WHERE issue_id = ?)"
DEPENDENTS_OF = "id IN (SELECT issue_id FROM deps WHERE depends_on_id = ?)"
CHILDREN_OF = "parent = ?"


class SortKey(Vocabulary):
    """`list --sort`: priority then creation (default), or one field."""

    PRIORITY = "priority"
    CREATED = "created"
    UPDATED = "updated"
    STATUS = "status"
    TITLE = "title"
    ID = "id"

    @classmethod
    def kind(cls) -> str:
        """How the vocabulary is called in messages."""
        return "sort key"


_ORDER = {
    SortKey.PRIORITY: "priority, seq",
    SortKey.CREATED: "seq",
    SortKey.UPDATED: "updated_at DESC, seq",
    SortKey.STATUS: "CASE status WHEN 'open' THEN 0 WHEN 'in_progress' THEN 1 ELSE 2 END, "
    "priority, seq",
    SortKey.TITLE: "title, seq",
    SortKey.ID: "id",
}


# Functional form on purpose: the class form compiles every (string) annotation at
# import, start-up that every `pn` run would pay.
_FiltersFields = NamedTuple(  # noqa: UP014
    "_FiltersFields",
    [
        ("statuses", tuple[Status, ...] | None),
        ("priority", Priority | None),
        ("assignee", str | None),
        ("issue_type", IssueType | None),
        ("spec", str | None),
        ("labels", tuple[str, ...]),
    ],
)
# An issue carries a label (one `?` parameter).
HAS_LABEL = "EXISTS (SELECT 1 FROM json_each(issues.labels) WHERE value = ?)"


class Filters(_FiltersFields):
    """The filters `list`, `ready`, `claim-next` and `count` share; None means any, and an
    issue must carry every label in `labels`."""

    __slots__ = ()

    def __new__(
        cls,
        statuses: tuple[Status, ...] | None = None,
        priority: Priority | None = None,
        assignee: str | None = None,
        issue_type: IssueType | None = None,
        spec: str | None = None,
        labels: tuple[str, ...] = (),
    ) -> Filters:
        return super().__new__(cls, statuses, priority, assignee, issue_type, spec, labels)

    def where(self) -> tuple[list[str], list[Any]]:
        """SQL conditions and their parameters."""
        clauses: list[str] = []
        params: list[Any] = []
        if self.statuses is not None and set(self.statuses) == set(ACTIVE):
            # Every status but closed, as the range they sort into (a test keeps that order
            # true): the index is read to its end, not compared with each entry.
            clauses.append("status > 'closed'")
        elif self.statuses is not None:
            clauses.append(f"status IN ({', '.join('?' for _ in self.statuses)})")
            params.extend(s.value for s in self.statuses)
        for column, value in (
            ("priority", self.priority),
            ("assignee", self.assignee),
            ("issue_type", self.issue_type),
            ("spec", self.spec),
        ):
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(str(value))
        for label in dict.fromkeys(self.labels):
            clauses.append(HAS_LABEL)
            params.append(label)
        return clauses, params


ACTIVE = (Status.OPEN, Status.IN_PROGRESS)


# Functional form on purpose: the class form compiles every (string) annotation at
# import, start-up that every `pn` run would pay.
_QueryFields = NamedTuple(  # noqa: UP014
    "_QueryFields",
    [
        ("conditions", tuple[str, ...]),
        ("params", tuple[Any, ...]),
        ("order", str),
        ("limit", int | None),
        ("json_column", str),
        ("source", str),
    ],
)

# An issue's JSON object, built by SQLite. A list column is NULL when empty, so `json()`
# parses only the lists there are rather than a '[]' for every issue without labels.
ISSUE_JSON = (
    "json_object("
    + ", ".join(
        f"'{f}', coalesce(json({f}), json_array())" if f in LIST_FIELDS else f"'{f}', {f}"
        for f in ISSUE_FIELDS
    )
    + ")"
)
# The same JSON, kept in issues_ready for every open issue (schema.m006_issue_json): for a
# query of open issues only, SQLite reads it from the index instead of building it.
OPEN_ISSUE_JSON = "issue_json"
# Named, not left to the planner: it weighs issues_ready against issues_status by the
# width of the table, and since m008's columns it took issues_status, which computes the JSON
# of every row from the table instead of reading it from the index (several times slower).
READY_SOURCE = "issues INDEXED BY issues_ready"


class Query(_QueryFields):
    """A selection of issues, run either into Issue records or straight into JSON."""

    __slots__ = ()

    def __new__(
        cls,
        conditions: tuple[str, ...],
        params: tuple[Any, ...] = (),
        order: str = "priority, seq",
        limit: int | None = None,
        json_column: str = ISSUE_JSON,
        source: str = "issues",
    ) -> Query:
        return super().__new__(cls, conditions, params, order, limit, json_column, source)

    def _sql(self, columns: str) -> str:
        where = " AND ".join(self.conditions) or "1"
        sql = f"SELECT {columns} FROM {self.source} WHERE {where} ORDER BY {self.order}"
        return sql if self.limit is None else f"{sql} LIMIT {int(self.limit)}"

    def issues(self, store: Store) -> list[Issue]:
        """The matching issues."""
        return [Issue.from_row(r) for r in store.rows(self._sql(ISSUE_COLUMNS), self.params)]

    def json_utf8(self, store: Store) -> list[bytes]:
        """The matching issues as a compact JSON array built by SQLite, in pieces of UTF-8
        neither decoded nor joined: what `--json` prints (`render.Output.raw` hands them to
        the kernel in a few calls). Joined, identical to dumping `issues()` (a test proves
        it), and several times faster for the thousands of rows `pn ready --json` may print.

        Decoding megabytes into strings, joining them and encoding the whole again on the
        way out was a large part of `pn ready --json`'s budget."""
        sql = self._sql(f"',' || {self.json_column}")  # each object after its separator
        pieces = store.utf8_column(sql, self.params)
        if not pieces:
            return [b"[]"]
        pieces[0] = b"[" + pieces[0][1:]
        pieces.append(b"]")
        if not all(map(bytes.isascii, pieces)):
            try:
                for piece in pieces:
                    piece.decode()
            except UnicodeDecodeError:
                # Text no pensa wrote (a hand edit): fail as reading it as text fails.
                store.rows(sql, self.params)
                raise
        return pieces


def select(
    store: Store,
    conditions: Sequence[str],
    params: Sequence[Any],
    *,
    order: str = "priority, seq",
    limit: int | None = None,
) -> list[Issue]:
    """Issues matching every condition, in `order`."""
    return Query(tuple(conditions), tuple(params), order, limit).issues(store)


def list_query(
    filters: Filters, *, sort: SortKey = SortKey.PRIORITY, limit: int | None = None
) -> Query:
    """`list`: the filtered issues (callers pass `statuses=ACTIVE` for the default view)."""
    clauses, params = filters.where()
    return Query(tuple(clauses), tuple(params), _ORDER[sort], limit)


def ready_query(
    filters: Filters, *, limit: int | None = None, require_verify: bool = False
) -> Query:
    """Open issues other than bugs whose dependencies are all closed and that have no open
    child (leaves); priority, then age. With `require_verify`, only those that carry verify
    commands.

    Issues assigned to someone (stuck tasks waiting for a human among them) are left out,
    unless the filter asks for their assignee."""
    clauses, params = filters.where()
    if filters.assignee is None:
        clauses.append(UNASSIGNED)
    if require_verify:
        clauses.append(HAS_VERIFY)
    return Query(
        (READY, *clauses),
        tuple(params),
        limit=limit,
        json_column=OPEN_ISSUE_JSON,
        source=READY_SOURCE,
    )


def blocked_query() -> Query:
    """Issues not closed that wait on at least one dependency that is not closed."""
    return Query(("status != 'closed'", BLOCKED))


def search_query(text: str) -> Query:
    """Every issue (any status) whose title or description contains `text`, any case."""
    pattern = "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    return Query(
        ("(title LIKE ? ESCAPE '\\' OR description LIKE ? ESCAPE '\\')",), (pattern, pattern)
    )


def list_issues(
    store: Store, filters: Filters, *, sort: SortKey = SortKey.PRIORITY, limit: int | None = None
) -> list[Issue]:
    """`list` as records."""
    return list_query(filters, sort=sort, limit=limit).issues(store)


def ready(
    store: Store, filters: Filters, *, limit: int | None = None, require_verify: bool = False
) -> list[Issue]:
    """`ready` as records."""
    return ready_query(filters, limit=limit, require_verify=require_verify).issues(store)


def open_blockers(store: Store, issue_ids: Sequence[str]) -> dict[str, list[tuple[str, str]]]:
    """For each issue, the (id, status) of every dependency not yet closed, most urgent
    first: what `pn blocked` says each issue waits on."""
    import json

    out: dict[str, list[tuple[str, str]]] = {}
    for child, parent, status in store.rows(
        "SELECT d.issue_id, p.id, p.status FROM deps d JOIN issues p ON p.id = d.depends_on_id "
        "WHERE p.status != 'closed' AND d.issue_id IN (SELECT value FROM json_each(?)) "
        "ORDER BY p.priority, p.seq",
        (json.dumps(list(issue_ids)),),
    ):
        out.setdefault(child, []).append((parent, status))
    return out
