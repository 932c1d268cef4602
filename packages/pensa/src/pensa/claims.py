"""claim-next: ready + claim in one `BEGIN IMMEDIATE` transaction.

Under any number of concurrent processes each issue is claimed once: the write lock is taken
before the ready issue is chosen, so no two transactions can choose the same one (the beads
race, issue corpus #3570, came from choosing outside the transaction). This module is kept
apart from the tracker because the work loop runs it every iteration: start-up counts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pensa.models import Issue, IssueType, Priority, timestamp, utcnow
from pensa.store import fetch_issue, log_event
from pensa.views import READY, Filters

if TYPE_CHECKING:
    from collections.abc import Callable
    from datetime import datetime

    from pensa.store import Store


def claim_next(
    store: Store,
    *,
    actor: str,
    now: Callable[[], datetime] = utcnow,
    priority: Priority | None = None,
    issue_type: IssueType | tuple[IssueType, ...] | None = None,
    spec: str | None = None,
) -> Issue | None:
    """Claim the first ready issue not assigned to someone else, atomically; None if none.

    `issue_type` may name several types (the build loop takes tasks and chores)."""
    types = (issue_type,) if isinstance(issue_type, IssueType) else issue_type
    one = types[0] if types and len(types) == 1 else None
    clauses, params = Filters(priority=priority, issue_type=one, spec=spec).where()
    if types and len(types) > 1:
        clauses.append(f"issue_type IN ({', '.join('?' for _ in types)})")
        params.extend(t.value for t in types)
    where = " AND ".join([READY, "(assignee IS NULL OR assignee = ?)", *clauses])
    stamp = timestamp(now())
    with store.write() as conn:
        row = conn.execute(
            f"SELECT id FROM issues WHERE {where} ORDER BY priority, seq LIMIT 1",
            [actor, *params],
        ).fetchone()
        if row is None:
            return None
        conn.execute(
            "UPDATE issues SET status = 'in_progress', assignee = ?, updated_at = ? "
            "WHERE id = ? AND status = 'open'",
            (actor, stamp, row[0]),
        )
        log_event(conn, row[0], "claimed", actor=actor, detail="claim-next", at=stamp)
        claimed = fetch_issue(conn, row[0])
        assert claimed is not None  # we hold the write lock: it cannot have vanished
        return Issue.from_row(claimed)
