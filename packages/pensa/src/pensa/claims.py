"""claim-next: ready + claim in one `BEGIN IMMEDIATE` transaction, and one claim per agent.

Under any number of concurrent processes each issue is claimed once: the write lock is taken
before the ready issue is chosen, so no two transactions can choose the same one (beads had
that race: it chose outside the transaction). This module is kept
apart from the tracker because the work loop runs it every iteration: start-up counts.

An agent works on one task at a time, and may hold one spike beside it (norma's WIP rule):
a second claim is refused, and claim-next hands an agent the task it already holds, so a
task claimed for it beforehand (by the host that starts it) is the task it gets.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from pensa.errors import AlreadyClaimed
from pensa.models import Issue, IssueType, Priority, timestamp, utcnow
from pensa.ready import HAS_VERIFY, READY
from pensa.shared.assignee import HUMAN
from pensa.store import fetch_issue, log_event
from pensa.views import Filters

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Callable, Collection
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
    stuck_after: int | None = None,
    labels: tuple[str, ...] = (),
    require_verify: bool = False,
) -> Issue | None:
    """Claim the first ready issue not assigned to someone else, atomically; None if none.
    An actor that holds a task in progress gets that task back (a `resumed` event, which
    claims_since_reset does not count) instead; one that holds a spike gets no second one.

    `issue_type` may name several types (the build loop takes tasks and chores). With
    `stuck_after`, an issue already claimed that many times since it was last closed, marked
    stuck or handed back by a human is taken out of the queue instead (`mark_stuck`) and the
    next one is claimed: a task an agent gives up on every iteration stops eating them."""
    asked = Asked(actor, priority, issue_type, spec, labels, require_verify)
    stamp = timestamp(now())
    with store.write() as conn:
        holding = _holding(conn, actor)
        task = next((i for i, kind in holding if kind != IssueType.SPIKE), None)
        if task is not None:
            log_event(conn, task, "resumed", actor=actor, detail="claim-next: held", at=stamp)
            return _issue(conn, task)  # we hold the write lock: it cannot have vanished
        # holding a spike: the one other claim may not be a second spike
        no_spike = (f"issue_type != '{IssueType.SPIKE.value}'",) if holding else ()
        chosen = _choose(conn, asked, stuck_after=stuck_after, at=stamp, also=no_spike)
        return None if chosen is None else _take(conn, chosen, actor=actor, at=stamp)


class Asked(NamedTuple):
    """What a claim asks for: whose it is and the filters of `pn claim-next`."""

    actor: str
    priority: Priority | None = None
    issue_type: IssueType | tuple[IssueType, ...] | None = None
    spec: str | None = None
    labels: tuple[str, ...] = ()
    require_verify: bool = False  # only issues carrying Verify commands (`--require-verify`)

    def where(self, *first: str) -> tuple[str, list[object]]:
        """The WHERE clause (after `first`) and its parameters for issues of these filters."""
        types = (self.issue_type,) if isinstance(self.issue_type, IssueType) else self.issue_type
        one = types[0] if types and len(types) == 1 else None
        filters = Filters(
            priority=self.priority, issue_type=one, spec=self.spec, labels=self.labels
        )
        clauses, params = filters.where()
        if types and len(types) > 1:
            clauses.append(f"issue_type IN ({', '.join('?' for _ in types)})")
            params.extend(t.value for t in types)
        if self.require_verify:
            clauses.append(HAS_VERIFY)
        return " AND ".join([*first, *clauses]), params


def pick(
    store: Store,
    asked: Asked,
    *,
    now: Callable[[], datetime] = utcnow,
    stuck_after: int | None = None,
    skip: Collection[str] = (),
    keep_held: bool = False,
) -> Issue | None:
    """The issue `claim_next` would claim, not claimed yet (`take` does that); stuck issues
    met on the way are handed to a human as `claim_next` does. `skip`: ids no one may take
    here (others hold them elsewhere). With `keep_held`, an issue the actor already holds
    comes first: one claim per agent (`pensa.gitclaims`)."""
    with store.write() as conn:
        chosen = _choose(
            conn,
            asked,
            stuck_after=stuck_after,
            at=timestamp(now()),
            skip=skip,
            keep_held=keep_held,
        )
        return None if chosen is None else _issue(conn, chosen)


def take(store: Store, issue_id: str, *, actor: str, at: str) -> Issue | None:
    """Claim the issue `pick` chose, stamped `at`; None when it was closed meanwhile."""
    with store.write() as conn:
        row = conn.execute("SELECT status FROM issues WHERE id = ?", (issue_id,)).fetchone()
        if row is None or row[0] == "closed":
            return None
        return _take(conn, issue_id, actor=actor, at=at)


def held(store: Store, asked: Asked) -> Issue | None:
    """The issue the actor holds in progress that `pick(keep_held=True)` would keep, or None:
    `pn claim-next` of an agent whose loop claims for it (PN_CLAIMS=held)."""
    where, params = asked.where("status = 'in_progress'", "assignee = ?")
    with store.snapshot() as conn:
        row = conn.execute(
            f"SELECT id FROM issues WHERE {where} ORDER BY priority, seq LIMIT 1",
            [asked.actor, *params],
        ).fetchone()
        return None if row is None else _issue(conn, row[0])


def _choose(
    conn: sqlite3.Connection,
    asked: Asked,
    *,
    stuck_after: int | None,
    at: str,
    skip: Collection[str] = (),
    keep_held: bool = False,
    also: tuple[str, ...] = (),
) -> str | None:
    """The id to claim, inside the caller's write transaction (stuck ones marked meanwhile);
    `also`: more conditions every candidate meets."""
    outside: list[str] = [*also]
    excluded: list[object] = []
    if skip:
        import json

        outside.append("id NOT IN (SELECT value FROM json_each(?))")
        excluded.append(json.dumps(sorted(skip)))
    queries = []
    if keep_held:
        queries.append(asked.where("status = 'in_progress'", "assignee = ?", *outside))
    queries.append(asked.where(READY, "(assignee IS NULL OR assignee = ?)", *outside))
    for where, params in queries:
        while True:
            row = conn.execute(
                f"SELECT id FROM issues WHERE {where} ORDER BY priority, seq LIMIT 1",
                [asked.actor, *excluded, *params],
            ).fetchone()
            if row is None:
                break
            holders = claims_since_reset(conn, row[0])
            if stuck_after is None or len(holders) < stuck_after:
                return str(row[0])
            mark_stuck(conn, row[0], holders, at=at)
    return None


def _issue(conn: sqlite3.Connection, issue_id: str) -> Issue:
    row = fetch_issue(conn, issue_id)
    assert row is not None  # chosen inside this very transaction
    return Issue.from_row(row)


def _take(conn: sqlite3.Connection, issue_id: str, *, actor: str, at: str) -> Issue:
    conn.execute(
        "UPDATE issues SET status = 'in_progress', assignee = ?, updated_at = ? WHERE id = ?",
        (actor, at, issue_id),
    )
    log_event(conn, issue_id, "claimed", actor=actor, detail="claim-next", at=at)
    return _issue(conn, issue_id)  # we hold the write lock: it cannot have vanished


def _holding(conn: sqlite3.Connection, actor: str) -> list[tuple[str, str]]:
    """(id, type) of every issue `actor` holds in progress, most urgent first."""
    rows = conn.execute(
        "SELECT id, issue_type FROM issues INDEXED BY issues_held "
        "WHERE status = 'in_progress' AND assignee = ? ORDER BY priority, seq",
        (actor,),
    ).fetchall()
    return [(str(i), str(t)) for i, t in rows]


def refuse_second_claim(conn: sqlite3.Connection, issue: Issue, actor: str) -> None:
    """AlreadyClaimed if `actor` already holds a task in progress (or, claiming a spike, a
    spike): one claim per agent, and a spike beside it."""
    spike = issue.issue_type is IssueType.SPIKE
    for other, kind in _holding(conn, actor):
        if other != issue.id and (kind == IssueType.SPIKE) == spike:
            what = "a spike" if spike else "an issue"
            raise AlreadyClaimed(
                f"{actor} already holds {what} in progress ({other}): one claim per agent, "
                f"plus one spike; close or release {other} first (`pn release {other}`)"
            )


# Who takes a stuck task: HUMAN, an assignee no loop is, so claim-next (which skips issues
# assigned to someone else) passes it by, while `pn list -a human` / `pn ready -a human` find
# it. `pn release ID` hands it back to the agents. The JSON contract is unchanged: assignee
# stays a string, and the reason is an ordinary comment, so both survive export and import.
_RESETS = ("closed", "reopened", "stuck", "returned")


def claims_since_reset(conn: sqlite3.Connection, issue_id: str) -> list[str]:
    """The actors of the issue's claims since it was last closed, stuck or handed back.

    Only real attempts count: an `interrupted` release (a loop stopped by Ctrl+C, a signal,
    a budget or a watchdog in the middle of the attempt, `Tracker.release_held`) takes back
    the claim it ended, so two stopped loops never send a task to a human."""
    placeholders = ", ".join("?" for _ in _RESETS)
    rows = conn.execute(
        "SELECT event_type, actor FROM events WHERE issue_id = ? "
        "AND event_type IN ('claimed', 'interrupted') AND seq > "
        f"coalesce((SELECT max(seq) FROM events WHERE issue_id = ? AND event_type IN "
        f"({placeholders})), 0) ORDER BY seq",
        (issue_id, issue_id, *_RESETS),
    ).fetchall()
    holders: list[str] = []
    for event_type, actor in rows:
        if event_type == "claimed":
            holders.append(str(actor))
        elif holders:
            holders.pop()
    return holders


def last_claim_at(conn: sqlite3.Connection, issue_id: str) -> str:
    """When the issue was last claimed (a `timestamp`), or "" if it never was."""
    row = conn.execute(
        "SELECT max(created_at) FROM events WHERE issue_id = ? AND event_type = 'claimed'",
        (issue_id,),
    ).fetchone()
    return str(row[0] or "")


def mark_stuck(conn: sqlite3.Connection, issue_id: str, holders: list[str], *, at: str) -> None:
    """Take the issue out of the agents' queue: assignee `human`, a comment saying why."""
    from pensa.ids import COMMENT_PREFIX, new_id

    loops = ", ".join(dict.fromkeys(holders))
    text = (
        f"stuck: claimed {len(holders)} times without being closed (by {loops}); "
        f"taken out of the agents' queue. `pn release {issue_id}` hands it back."
    )
    conn.execute(
        "UPDATE issues SET status = 'open', assignee = ?, updated_at = ? WHERE id = ?",
        (HUMAN, at, issue_id),
    )

    def taken(cid: str) -> bool:
        return conn.execute("SELECT 1 FROM comments WHERE id = ?", (cid,)).fetchone() is not None

    conn.execute(
        "INSERT INTO comments (id, issue_id, actor, text, created_at) VALUES (?, ?, ?, ?, ?)",
        (new_id(taken, prefix=COMMENT_PREFIX), issue_id, "pensa", text, at),
    )
    log_event(conn, issue_id, "stuck", actor="pensa", detail=text, at=at)
