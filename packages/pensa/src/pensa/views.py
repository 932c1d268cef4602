"""Read-only queries: list, ready, blocked, search, count, status."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from pensa.models import Issue, IssueType, Priority, Status, Vocabulary
from pensa.store import ISSUE_COLUMNS

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pensa.store import Store

# An issue is blocked while any issue it depends on is not closed.
BLOCKED = (
    "EXISTS (SELECT 1 FROM deps d JOIN issues p ON p.id = d.depends_on_id "
    "WHERE d.issue_id = issues.id AND p.status != 'closed')"
)
READY = f"status = 'open' AND issue_type != 'bug' AND NOT {BLOCKED}"


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


class GroupKey(Vocabulary):
    """`count --by-*`."""

    STATUS = "status"
    PRIORITY = "priority"
    ISSUE_TYPE = "issue_type"
    ASSIGNEE = "assignee"


class Filters(NamedTuple):
    """The filters `list`, `ready`, `claim-next` and `count` share; None means any."""

    statuses: Sequence[Status] | None = None
    priority: Priority | None = None
    assignee: str | None = None
    issue_type: IssueType | None = None
    spec: str | None = None

    def where(self) -> tuple[list[str], list[Any]]:
        """SQL conditions and their parameters."""
        clauses: list[str] = []
        params: list[Any] = []
        if self.statuses is not None:
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
        return clauses, params


ACTIVE = (Status.OPEN, Status.IN_PROGRESS)


def select(
    store: Store,
    conditions: Sequence[str],
    params: Sequence[Any],
    *,
    order: str = "priority, seq",
    limit: int | None = None,
) -> list[Issue]:
    """Issues matching every condition, in `order`."""
    where = " AND ".join(conditions) or "1"
    sql = f"SELECT {ISSUE_COLUMNS} FROM issues WHERE {where} ORDER BY {order}"
    if limit is not None:
        sql += f" LIMIT {int(limit)}"
    return [Issue.from_row(r) for r in store.rows(sql, params)]


def list_issues(
    store: Store, filters: Filters, *, sort: SortKey = SortKey.PRIORITY, limit: int | None = None
) -> list[Issue]:
    """`list`: the filtered issues (callers pass `statuses=ACTIVE` for the default view)."""
    clauses, params = filters.where()
    return select(store, clauses, params, order=_ORDER[sort], limit=limit)


def ready(store: Store, filters: Filters, *, limit: int | None = None) -> list[Issue]:
    """Open tasks, tests and chores whose dependencies are all closed; priority, then age."""
    clauses, params = filters.where()
    return select(store, [READY, *clauses], params, limit=limit)


def blocked(store: Store) -> list[Issue]:
    """Issues not closed that wait on at least one dependency that is not closed."""
    return select(store, ["status != 'closed'", BLOCKED], [])


def search(store: Store, query: str) -> list[Issue]:
    """Every issue (any status) whose title or description contains `query`, any case."""
    pattern = "%" + query.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    return select(
        store,
        ["(title LIKE ? ESCAPE '\\' OR description LIKE ? ESCAPE '\\')"],
        [pattern, pattern],
    )


def count(store: Store, filters: Filters, *, by: GroupKey | None = None) -> Counts:
    """How many issues match; grouped by one field when `by` is given."""
    clauses, params = filters.where()
    where = " AND ".join(clauses) or "1"
    if by is None:
        total = store.rows(f"SELECT count(*) FROM issues WHERE {where}", params)[0][0]
        return Counts(int(total))
    rows = store.rows(
        f"SELECT coalesce({by.value}, '-'), count(*) FROM issues WHERE {where} "
        f"GROUP BY 1 ORDER BY 1",
        params,
    )
    groups = {str(key): int(n) for key, n in rows}
    return Counts(sum(groups.values()), groups)


class Counts(NamedTuple):
    """`count`: a total, and groups when counted `--by-*`."""

    total: int
    groups: dict[str, int] | None = None

    def to_json(self) -> dict[str, Any]:
        if self.groups is None:
            return {"count": self.total}
        return {"total": self.total, "groups": dict(self.groups)}


class StatusReport(NamedTuple):
    """`status`: a project health snapshot."""

    by_type: dict[str, dict[str, int]]
    ready: int
    blocked: int

    def totals(self) -> dict[str, int]:
        """Issues per status over all types."""
        return {s.value: sum(row[s.value] for row in self.by_type.values()) for s in Status}

    def to_json(self) -> dict[str, Any]:
        totals = self.totals()
        return {
            "total": sum(totals.values()),
            **totals,
            "ready": self.ready,
            "blocked": self.blocked,
            "by_type": self.by_type,
        }


def status(store: Store) -> StatusReport:
    """Counts per type and status, plus how many issues are ready and blocked."""
    by_type = {t.value: {s.value: 0 for s in Status} for t in IssueType}
    for issue_type, state, n in store.rows(
        "SELECT issue_type, status, count(*) FROM issues GROUP BY 1, 2"
    ):
        by_type[issue_type][state] = int(n)
    ready_n = store.rows(f"SELECT count(*) FROM issues WHERE {READY}")[0][0]
    blocked_n = store.rows(f"SELECT count(*) FROM issues WHERE status != 'closed' AND {BLOCKED}")[
        0
    ][0]
    return StatusReport(by_type, int(ready_n), int(blocked_n))
