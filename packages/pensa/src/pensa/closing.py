"""Closing, reopening and deleting issues, several at once, and what a close unblocks.

`pn close A B C` closes all three in one transaction or none (an unknown id or a refused
close changes nothing). The result names the bugs closed because their last fix closed, the
parents (epics, features) closed because their last child closed, and the issues the closes
made ready, so a person sees what they unblocked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from pensa.errors import Conflict, InvalidStatusTransition
from pensa.models import Issue, Status
from pensa.ready import READY
from pensa.store import find, get, log_event, set_fields

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Sequence


class Closed(NamedTuple):
    """What `close` did: the issues asked for, the bugs they fixed, the work now ready."""

    closed: list[Issue]
    also_closed: list[Issue]
    now_ready: list[Issue]


def _resolve_all(conn: sqlite3.Connection, texts: Sequence[str]) -> list[Issue]:
    found = [find(conn, text) for text in texts]
    return list({issue.id: issue for issue in found}.values())


def _ready_dependents(conn: sqlite3.Connection, parents: Sequence[str]) -> list[str]:
    """The ready issues that depend on any of `parents`, by priority then creation.

    From the few dependents to their rows by id: given READY's `status = 'open'`, the planner
    walked every open issue (issues_ready) and tested each for blockers, twice per close (a
    close at 100k issues cost half again the start-up floor)."""
    marks = ", ".join("?" * len(parents))
    rows = conn.execute(
        "SELECT issues.id FROM (SELECT DISTINCT issue_id AS child FROM deps WHERE depends_on_id "
        f"IN ({marks})) AS c CROSS JOIN issues INDEXED BY "
        f"issues_id ON issues.id = c.child WHERE {READY} "
        "ORDER BY issues.priority, issues.seq",
        tuple(parents),
    ).fetchall()
    return [str(r[0]) for r in rows]


def close(
    conn: sqlite3.Connection,
    texts: Sequence[str],
    *,
    actor: str,
    now: str,
    reason: str | None = None,
    force: bool = False,
) -> Closed:
    """Close every issue `texts` names, inside the caller's transaction."""
    from pensa.links import open_children

    issues = _resolve_all(conn, texts)
    ids = [issue.id for issue in issues]
    for issue in issues:
        if not force and issue.status is Status.CLOSED:
            raise Conflict(f"{issue.id} is already closed; pass --force to close it again")
        if not force and issue.status is Status.IN_PROGRESS and issue.assignee not in (None, actor):
            raise Conflict(
                f"{issue.id} is claimed by {issue.assignee}; pass --force to close it anyway"
            )
        kids = [kid for kid in open_children(conn, issue.id) if kid not in ids]
        if kids and not force:
            raise Conflict(
                f"{issue.id} has open children ({', '.join(kids)}): it closes by itself when "
                "the last of them closes; pass --force to close it now"
            )
    ready_before = set(_ready_dependents(conn, ids))
    also: list[Issue] = []
    for issue in issues:
        mark_closed(conn, issue.id, reason or None, now=now, actor=actor)
    # what closes with them, in turn: a bug with its last fix, a parent with its last child,
    # and what those close (a feature's close may finish its epic, or fix a bug)
    queue = [get(conn, i) for i in ids]
    while queue:
        done_one = queue.pop(0)
        for then in (_close_fixed_bug, _close_finished_parent):
            closed = then(conn, done_one, now=now, actor=actor)
            if closed is not None:
                also.append(closed)
                queue.append(closed)
    unblocked = _ready_dependents(conn, [*ids, *(bug.id for bug in also)])
    return Closed(
        [get(conn, i) for i in ids],
        also,
        [get(conn, i) for i in unblocked if i not in ready_before],
    )


def mark_closed(
    conn: sqlite3.Connection, issue_id: str, reason: str | None, *, now: str, actor: str
) -> None:
    """Set the issue closed, with its reason, and log it."""
    set_fields(conn, issue_id, {"status": "closed", "closed_at": now, "close_reason": reason}, now)
    log_event(conn, issue_id, "closed", actor=actor, detail=reason, at=now)


def _close_fixed_bug(
    conn: sqlite3.Connection, issue: Issue, *, now: str, actor: str
) -> Issue | None:
    """Close the bug `issue` fixes once no issue fixing it is still open."""
    if issue.fixes is None:
        return None
    return _close_when_none_open(conn, "fixes", issue.fixes, f"fixed by {issue.id}", now, actor)


def _close_finished_parent(
    conn: sqlite3.Connection, issue: Issue, *, now: str, actor: str
) -> Issue | None:
    """Close the issue's parent once no child of it is open: a feature whose last task
    closed. As a bug closes with its last fix: a `closed` event, the reason naming the child."""
    if issue.parent is None:
        return None
    reason = f"last child {issue.id} closed"
    return _close_when_none_open(conn, "parent", issue.parent, reason, now, actor)


def _close_when_none_open(
    conn: sqlite3.Connection, link: str, target: str, reason: str, now: str, actor: str
) -> Issue | None:
    """Close `target` once no open issue names it in its `link` column (`fixes` or
    `parent`); the closed target, or None when it stays as it was."""
    found = get(conn, target)
    if found.status is Status.CLOSED:
        return None
    assert link in ("fixes", "parent")  # a column name, never data
    pending = conn.execute(
        f"SELECT count(*) FROM issues WHERE {link} = ? AND status != 'closed'", (target,)
    ).fetchone()[0]
    if pending:
        return None
    mark_closed(conn, found.id, reason, now=now, actor=actor)
    return get(conn, found.id)


def reopen(
    conn: sqlite3.Connection,
    texts: Sequence[str],
    *,
    actor: str,
    now: str,
    reason: str | None = None,
) -> list[Issue]:
    """Reopen every closed issue `texts` names, clearing `closed_at` and `close_reason`."""
    issues = _resolve_all(conn, texts)
    for issue in issues:
        if issue.status is not Status.CLOSED:
            raise InvalidStatusTransition(
                f"{issue.id} is {issue.status}, not closed; only closed issues reopen"
            )
    for issue in issues:
        # A reopened issue is everyone's to claim: the old assignee kept, claim-next skipped
        # it while `pn ready` listed it.
        fields = {"status": "open", "closed_at": None, "close_reason": None, "assignee": None}
        set_fields(conn, issue.id, fields, now)
        log_event(conn, issue.id, "reopened", actor=actor, detail=reason or None, at=now)
        if issue.assignee is not None:
            detail = f"assignee: {issue.assignee} -> (none)"
            log_event(conn, issue.id, "updated", actor=actor, detail=detail, at=now)
        _reopen_ancestors(conn, issue, actor=actor, now=now)
    return [get(conn, issue.id) for issue in issues]


def _reopen_ancestors(conn: sqlite3.Connection, child: Issue, *, actor: str, now: str) -> None:
    """A feature or epic closes when its last child does, so one with an open child is open:
    reopen each closed ancestor of `child`."""
    seen = {child.id}
    above, below = child.parent, child.id
    while above is not None and above not in seen:
        seen.add(above)
        parent = get(conn, above)
        if parent.status is Status.CLOSED:
            fields = {"status": "open", "closed_at": None, "close_reason": None}
            set_fields(conn, parent.id, fields, now)
            log_event(conn, parent.id, "reopened", actor=actor, detail=f"child {below} reopened",
                      at=now)  # fmt: skip
        above, below = parent.parent, parent.id


def delete(
    conn: sqlite3.Connection, issue_id: str, *, actor: str, now: str, force: bool = False
) -> None:
    """Delete the issue inside the caller's transaction; with `force` also its deps,
    comments and `fixes` links, else Conflict naming what is attached."""
    issue_id = find(conn, issue_id).id
    (n_deps, n_dependents, n_comments, n_fixers, n_children) = conn.execute(
        "SELECT (SELECT count(*) FROM deps WHERE issue_id = :id), "
        "(SELECT count(*) FROM deps WHERE depends_on_id = :id), "
        "(SELECT count(*) FROM comments WHERE issue_id = :id), "
        "(SELECT count(*) FROM issues WHERE fixes = :id), "
        "(SELECT count(*) FROM issues WHERE parent = :id)",
        {"id": issue_id},
    ).fetchone()
    attached = [
        f"{n} {one if n == 1 else many}"
        for n, one, many in (
            (n_deps, "dependency", "dependencies"),
            (n_dependents, "dependent", "dependents"),
            (n_comments, "comment", "comments"),
            (n_fixers, "issue fixing it", "issues fixing it"),
            (n_children, "child", "children"),
        )
        if n
    ]
    if attached and not force:
        raise Conflict(f"{issue_id} has {', '.join(attached)}; pass --force to delete them too")
    conn.execute("DELETE FROM deps WHERE issue_id = ?1 OR depends_on_id = ?1", (issue_id,))
    conn.execute("DELETE FROM comments WHERE issue_id = ?", (issue_id,))
    conn.execute("UPDATE issues SET fixes = NULL WHERE fixes = ?", (issue_id,))
    # its children stay, without a parent; what it led to finding keeps no dangling origin
    conn.execute("UPDATE issues SET parent = NULL WHERE parent = ?", (issue_id,))
    conn.execute("UPDATE issues SET discovered_from = NULL WHERE discovered_from = ?", (issue_id,))
    conn.execute("DELETE FROM events WHERE issue_id = ?", (issue_id,))
    conn.execute("DELETE FROM issues WHERE id = ?", (issue_id,))
    # The tombstone travels in deleted.jsonl, so no clone brings the issue back.
    conn.execute(
        "INSERT OR REPLACE INTO tombstones (id, deleted_at) VALUES (?, ?)", (issue_id, now)
    )
    detail = f"deleted with {', '.join(attached)}" if attached else None
    log_event(conn, issue_id, "deleted", actor=actor, detail=detail, at=now)
