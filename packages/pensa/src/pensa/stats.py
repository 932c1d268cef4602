"""Counting: `count` and the `status` snapshot."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from pensa.blocked import BLOCKED_IDS
from pensa.models import IssueType, Status, Vocabulary
from pensa.ready import BLOCKED, BLOCKED_ABOVE, OPEN_CHILDREN
from pensa.views import Filters

if TYPE_CHECKING:
    from pensa.store import Store


class GroupKey(Vocabulary):
    """`count --by-*`."""

    STATUS = "status"
    PRIORITY = "priority"
    ISSUE_TYPE = "issue_type"
    ASSIGNEE = "assignee"


def labels(store: Store) -> dict[str, int]:
    """Every label in use and how many issues carry it, by name."""
    rows = store.rows(
        "SELECT value, count(*) FROM issues, json_each(issues.labels) GROUP BY 1 ORDER BY 1"
    )
    return {str(name): int(n) for name, n in rows}


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


# Functional form on purpose: the class form compiles every (string) annotation at
# import, start-up that every `pn` run would pay.
_CountsFields = NamedTuple(  # noqa: UP014
    "_CountsFields",
    [
        ("total", int),
        ("groups", dict[str, int] | None),
    ],
)


class Counts(_CountsFields):
    """`count`: a total, and groups when counted `--by-*`."""

    __slots__ = ()

    def __new__(cls, total: int, groups: dict[str, int] | None = None) -> Counts:
        return super().__new__(cls, total, groups)

    def to_json(self) -> dict[str, Any]:
        """The JSON object of the output contract."""
        if self.groups is None:
            return {"count": self.total}
        return {"total": self.total, "groups": dict(self.groups)}


# Functional form on purpose: the class form compiles every (string) annotation at
# import, start-up that every `pn` run would pay.
_StatusReportFields = NamedTuple(  # noqa: UP014
    "_StatusReportFields",
    [
        ("by_type", dict[str, dict[str, int]]),
        ("ready", int),
        ("blocked", int),
        ("needs_human", int),
        ("bars", dict[str, dict[str, int]]),
    ],
)
BAR_STATES = ("open", "in_progress", "blocked", "closed")
# Two grouped counts instead of a correlated subquery per row: every issue by type, status
# and assignee (m004's issues_type_status), then the same for the blocked ones, not closed
# and waiting on one that is not closed either (`pensa.blocked`'s rule for every issue at
# once, over m006's issues_unclosed, which holds the type and assignee counted).
EVERY_COUNTED = "SELECT issue_type, status, assignee, count(*) FROM issues GROUP BY 1, 2, 3"
BLOCKED_COUNTED = (
    "SELECT issue_type, status, assignee, count(*) FROM issues "
    f"WHERE status > 'closed' AND id IN ({BLOCKED_IDS}) GROUP BY 1, 2, 3"
)
# Free to start and not blocked, yet not ready: parents with an open child (`pensa.ready.READY`),
# found from the few issues that have a parent (m008's issues_children).
PARENTS_COUNTED = (
    "SELECT count(*) FROM issues INDEXED BY issues_id WHERE id IN "
    "(SELECT parent FROM issues WHERE parent IS NOT NULL AND status > 'closed') "
    "AND status = 'open' "
    f"AND assignee IS NULL AND issue_type != 'bug' AND NOT {BLOCKED}"
)

# Free, unblocked and a leaf, yet not ready: below a blocked ancestor (`pensa.ready.BLOCKED_ABOVE`).
BELOW_BLOCKED_COUNTED = (
    f"SELECT count(*) FROM issues WHERE {BLOCKED_ABOVE} AND status = 'open' "
    f"AND assignee IS NULL AND issue_type != 'bug' AND NOT {BLOCKED} AND NOT {OPEN_CHILDREN}"
)


class StatusReport(_StatusReportFields):
    """`status`: a project health snapshot. `bars` splits each type into open (free to
    start), in progress, blocked (waiting on something not closed) and closed, for the
    terminal's bar; the JSON keeps its contract shape."""

    __slots__ = ()

    def totals(self) -> dict[str, int]:
        """Issues per status over all types."""
        return {s.value: sum(row[s.value] for row in self.by_type.values()) for s in Status}

    def to_json(self) -> dict[str, Any]:
        """The JSON object of the output contract."""
        totals = self.totals()
        return {
            "total": sum(totals.values()),
            **totals,
            "ready": self.ready,
            "blocked": self.blocked,
            "needs_human": self.needs_human,
            "by_type": self.by_type,
        }


def status(store: Store) -> StatusReport:
    """Counts per type and status, plus how many issues are ready and blocked."""
    from pensa.shared.assignee import HUMAN  # `count`, beside it here, never asks

    by_type = {t.value: {s.value: 0 for s in Status} for t in IssueType}
    bars = {t.value: dict.fromkeys(BAR_STATES, 0) for t in IssueType}
    ready_n = blocked_n = human_n = 0
    with store.snapshot() as conn:
        every = conn.execute(EVERY_COUNTED).fetchall()
        waiting = conn.execute(BLOCKED_COUNTED).fetchall()
        ready_n -= conn.execute(PARENTS_COUNTED).fetchone()[0]
        ready_n -= conn.execute(BELOW_BLOCKED_COUNTED).fetchone()[0]
    for issue_type, state, assignee, n in every:
        by_type[issue_type][state] += n
        bars[issue_type][state] += n
        if state == Status.OPEN and assignee == HUMAN:
            human_n += n  # stuck tasks claim-next handed to a human (claims.mark_stuck)
        elif state == Status.OPEN and issue_type != IssueType.BUG and assignee is None:
            ready_n += n
    for issue_type, state, assignee, n in waiting:
        bars[issue_type][state] -= n
        bars[issue_type]["blocked"] += n
        blocked_n += n
        if state == Status.OPEN and assignee is None and issue_type != IssueType.BUG:
            ready_n -= n
    return StatusReport(by_type, ready_n, blocked_n, human_n, bars)
