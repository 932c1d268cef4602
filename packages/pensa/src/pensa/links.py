"""Parent and discovered-from links: checked where they are set, and the graph of waiting.

An issue's `parent` is the epic or feature (or any issue but a bug) it is a part of; the
parent waits for its children: it is not ready while one is open, and it closes when its
last child closes (`pensa.closing`). `discovered_from` names the issue whose work found
this one; nothing waits on it.

A dependency (`blocks`) makes an issue wait for another, and a parent waits for its
children: both are edges of one graph, `WAITS_FOR`, which must stay acyclic, or some issue
could never be ready (a task that waits for its own epic waits for itself).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pensa.errors import CycleDetected, InvalidArgument, InvalidStatusTransition
from pensa.models import IssueType, LinkKind, Status
from pensa.store import fetch_issue, resolve

if TYPE_CHECKING:
    import sqlite3


# Every "A waits for B" pair, as (A, B): an issue for what it depends on, a parent for each
# of its children.
WAITS_FOR = (
    "SELECT issue_id, depends_on_id FROM deps "
    "UNION ALL SELECT parent, id FROM issues WHERE parent IS NOT NULL"
)
# The flag of each link kind an issue field holds (`pn create`, `pn update`).
FLAGS = {LinkKind.PARENT: "--parent", LinkKind.DISCOVERED_FROM: "--discovered-from"}
FIELDS = {LinkKind.PARENT: "parent", LinkKind.DISCOVERED_FROM: "discovered_from"}


def waits_for(conn: sqlite3.Connection, node: str) -> list[str]:
    """What `node` waits for directly: its dependencies and its children."""
    return [
        str(r[0])
        for r in conn.execute(
            "SELECT depends_on_id FROM deps WHERE issue_id = ?1 "
            "UNION ALL SELECT id FROM issues WHERE parent = ?1",
            (node,),
        )
    ]


def waiting_path(conn: sqlite3.Connection, start: str, goal: str) -> list[str] | None:
    """A path start → … → goal, each issue waiting for the next, or None."""
    came_from: dict[str, str] = {}
    frontier = [start]
    seen = {start}
    while frontier:
        node = frontier.pop()
        if node == goal:
            path = [node]
            while path[-1] != start:
                path.append(came_from[path[-1]])
            return path[::-1]
        for nxt in waits_for(conn, node):
            if nxt not in seen:
                seen.add(nxt)
                came_from[nxt] = node
                frontier.append(nxt)
    return None


def refuse_cycle(conn: sqlite3.Connection, first: str, waiter: str, why: str) -> None:
    """CycleDetected if `waiter` waiting for `first` would close a cycle. Drawn as
    `pn dep add` and `pn graph` draw edges, from the issue to do first to the one waiting for
    it, the new edge first: `first -> waiter -> ... -> first`."""
    back = waiting_path(conn, first, waiter)  # first already waits, through these, for waiter
    if back is not None:
        cycle = " -> ".join([first, *reversed(back)])
        raise CycleDetected(f"{first} -> {waiter} ({why}) would make a cycle: {cycle}")


def check_link(conn: sqlite3.Connection, kind: LinkKind, issue_id: str | None, text: str) -> str:
    """The id `text` names as `issue_id`'s parent or origin (None: an issue being created),
    inside the caller's transaction; refuses what would be wrong to link."""
    other = resolve(conn, text, flag=FLAGS[kind])
    if other == issue_id:
        raise InvalidArgument(f"{issue_id} cannot be its own {FIELDS[kind].replace('_', ' ')}")
    if kind is not LinkKind.PARENT:
        return other
    row = fetch_issue(conn, other)
    assert row is not None  # resolved inside this transaction
    if row[3] == IssueType.BUG:
        raise InvalidArgument(
            f"--parent must name an epic, a feature or a task; {other} is a bug "
            "(plan the work that fixes it with --fixes)"
        )
    if row[4] == Status.CLOSED:
        raise InvalidStatusTransition(
            f"{other} is closed: it cannot take a child; reopen it first (`pn reopen {other}`)"
        )
    if issue_id is not None:
        refuse_cycle(conn, issue_id, other, f"{other} waits for its child {issue_id}")
    return other


def open_children(conn: sqlite3.Connection, issue_id: str) -> list[str]:
    """The ids of the issue's children that are not closed, oldest first."""
    return [
        str(r[0])
        for r in conn.execute(
            "SELECT id FROM issues WHERE parent = ? AND status != 'closed' ORDER BY seq",
            (issue_id,),
        )
    ]
