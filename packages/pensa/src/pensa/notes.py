"""What is said about an issue: its comments and its audit log (`history`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pensa import ids
from pensa.models import Comment, Event
from pensa.store import log_event, not_found

if TYPE_CHECKING:
    import sqlite3

    from pensa.store import Store


def add_comment(
    conn: sqlite3.Connection, issue_id: str, text: str, *, actor: str, now: str
) -> Comment:
    """Attach a comment (a fresh `pc-` id) inside the caller's transaction."""
    taken = "SELECT 1 FROM comments WHERE id = ?"
    comment_id = ids.new_id(
        lambda c: conn.execute(taken, (c,)).fetchone() is not None, prefix=ids.COMMENT_PREFIX
    )
    conn.execute(
        "INSERT INTO comments (id, issue_id, actor, text, created_at) VALUES (?, ?, ?, ?, ?)",
        (comment_id, issue_id, actor, text, now),
    )
    log_event(conn, issue_id, "commented", actor=actor, detail=comment_id, at=now)
    return Comment(comment_id, issue_id, actor, text, now)


def comments(store: Store, issue_id: str) -> list[Comment]:
    """The issue's comments, oldest first."""
    rows = store.rows(
        "SELECT id, issue_id, actor, text, created_at FROM comments "
        "WHERE issue_id = ? ORDER BY seq",
        (issue_id,),
    )
    return [Comment(*r) for r in rows]


def history(store: Store, text: str) -> list[Event]:
    """The audit log of the issue `text` names, newest first. A deleted issue keeps its
    events, so its full id (in any case, `pn-` optional) still finds them."""
    issue_id = ids.resolve(store.conn, text)
    if issue_id is None:
        issue_id = ids.PREFIX + text.strip().lower().removeprefix(ids.PREFIX)
    rows = store.rows(
        "SELECT issue_id, event_type, actor, detail, created_at FROM events "
        "WHERE issue_id = ? ORDER BY seq DESC",
        (issue_id,),
    )
    if not rows:
        raise not_found(text)
    return [Event(*r) for r in rows]
