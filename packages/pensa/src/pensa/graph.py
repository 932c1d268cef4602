"""Dependencies: `CHILD depends on PARENT` edges, kept acyclic, and walks over them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, NamedTuple

from pensa.cycles import cycles_among
from pensa.errors import CycleDetected, InvalidArgument, NotFound
from pensa.models import Issue, timestamp, utcnow
from pensa.store import find, log_event
from pensa.views import DEPENDENCIES_OF, DEPENDENTS_OF, select

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Callable
    from datetime import datetime

    from pensa.diagram import Picture
    from pensa.store import Store

Direction = Literal["down", "up"]


class DepLists(NamedTuple):
    """`dep list`: both directions of one issue's edges."""

    depends_on: tuple[Issue, ...]
    dependents: tuple[Issue, ...]

    def to_json(self) -> dict[str, list[dict[str, str | None]]]:
        """The JSON object of the output contract."""
        return {
            "depends_on": [i.to_json() for i in self.depends_on],
            "dependents": [i.to_json() for i in self.dependents],
        }


class TreeNode(NamedTuple):
    """One line of `dep tree`: an issue at its depth below the root."""

    issue: Issue
    depth: int

    def to_json(self) -> dict[str, str | int]:
        """The JSON object of the output contract."""
        i = self.issue
        return {
            "id": i.id,
            "title": i.title,
            "status": i.status.value,
            "priority": i.priority.value,
            "issue_type": i.issue_type.value,
            "depth": self.depth,
        }


class EdgeChange(NamedTuple):
    """The result of `dep add` / `dep remove`."""

    status: Literal["added", "removed", "exists"]
    issue_id: str
    depends_on_id: str

    def to_json(self) -> dict[str, str]:
        """The JSON object of the output contract."""
        return {
            "status": self.status,
            "issue_id": self.issue_id,
            "depends_on_id": self.depends_on_id,
        }


def path_between(conn: sqlite3.Connection, start: str, goal: str) -> list[str] | None:
    """A dependency path start → … → goal (following depends_on), or None."""
    parents: dict[str, str] = {}
    frontier = [start]
    seen = {start}
    while frontier:
        node = frontier.pop()
        if node == goal:
            path = [node]
            while path[-1] != start:
                path.append(parents[path[-1]])
            return path[::-1]
        for (nxt,) in conn.execute("SELECT depends_on_id FROM deps WHERE issue_id = ?", (node,)):
            if nxt not in seen:
                seen.add(nxt)
                parents[nxt] = node
                frontier.append(nxt)
    return None


class Graph:
    """Dependency edges over one store."""

    def __init__(self, store: Store, *, now: Callable[[], datetime] = utcnow) -> None:
        self.store = store
        self.now = now

    def add(self, child: str, parent: str, *, actor: str) -> EdgeChange:
        """Make `child` depend on `parent`; refuses self-edges and cycles."""
        now = timestamp(self.now())
        with self.store.write() as conn:
            child = find(conn, child).id
            parent = find(conn, parent).id
            if child == parent:
                raise InvalidArgument(f"{child} cannot depend on itself")
            exists = conn.execute(
                "SELECT 1 FROM deps WHERE issue_id = ? AND depends_on_id = ?", (child, parent)
            ).fetchone()
            if exists:
                return EdgeChange("exists", child, parent)
            back = path_between(conn, parent, child)  # parent depends on ... on child
            if back is not None:
                # Drawn as `dep add` and `pn graph` draw edges: from the issue to do first to
                # the one waiting for it, so the new edge comes first.
                cycle = " -> ".join([parent, *reversed(back)])
                raise CycleDetected(
                    f"{parent} -> {child} ({child} waits for {parent}) would make a cycle: {cycle}"
                )
            conn.execute(
                "INSERT INTO deps (issue_id, depends_on_id) VALUES (?, ?)", (child, parent)
            )
            log_event(conn, child, "dep_added", actor=actor, detail=f"depends on {parent}", at=now)
            return EdgeChange("added", child, parent)

    def remove(self, child: str, parent: str, *, actor: str) -> EdgeChange:
        """Drop the edge `child` → `parent`."""
        now = timestamp(self.now())
        with self.store.write() as conn:
            child = find(conn, child).id
            parent = find(conn, parent).id
            gone = conn.execute(
                "DELETE FROM deps WHERE issue_id = ? AND depends_on_id = ?", (child, parent)
            ).rowcount
            if not gone:
                raise NotFound(f"{child} does not depend on {parent}")
            log_event(
                conn,
                child,
                "dep_removed",
                actor=actor,
                detail=f"no longer depends on {parent}",
                at=now,
            )
            return EdgeChange("removed", child, parent)

    def lists(self, issue_id: str) -> DepLists:
        """What the issue depends on, and what depends on it."""
        issue_id = find(self.store.conn, issue_id).id
        return DepLists(
            tuple(
                select(
                    self.store,
                    [DEPENDENCIES_OF],
                    [issue_id],
                )
            ),
            tuple(
                select(
                    self.store,
                    [DEPENDENTS_OF],
                    [issue_id],
                )
            ),
        )

    def tree(self, issue_id: str, *, direction: Direction = "down") -> list[TreeNode]:
        """Depth-first walk below the root (not included); each issue is listed once."""
        issue_id = find(self.store.conn, issue_id).id
        sql = DEPENDENCIES_OF if direction == "down" else DEPENDENTS_OF
        nodes: list[TreeNode] = []
        seen = {issue_id}

        def walk(node: str, depth: int) -> None:
            """Visit the neighbours of `node` depth first."""
            for child in select(self.store, [sql], [node]):
                if child.id in seen:
                    continue
                seen.add(child.id)
                nodes.append(TreeNode(child, depth))
                walk(child.id, depth + 1)

        walk(issue_id, 1)
        return nodes

    def picture(self, issue_id: str | None = None, *, include_closed: bool = False) -> Picture:
        """What `pn graph` draws: with `issue_id`, every issue joined to it through
        dependencies or `fixes` links, in either direction and of any status; without, every
        issue not closed (with `include_closed`, every issue)."""
        from pensa.diagram import Picture, edges_among
        from pensa.views import BLOCKED

        deps = [
            (str(a), str(b))
            for a, b in self.store.rows("SELECT issue_id, depends_on_id FROM deps ORDER BY 1, 2")
        ]
        fixes = [
            (str(a), str(b))
            for a, b in self.store.rows(
                "SELECT id, fixes FROM issues WHERE fixes IS NOT NULL ORDER BY seq"
            )
        ]
        if issue_id is None:
            where = [] if include_closed else ["status != 'closed'"]
            issues = select(self.store, where, [], order="seq")
        else:
            root = find(self.store.conn, issue_id).id
            around: dict[str, set[str]] = {}
            for a, b in (*deps, *fixes):
                around.setdefault(a, set()).add(b)
                around.setdefault(b, set()).add(a)
            seen, frontier = {root}, [root]
            while frontier:
                for other in around.get(frontier.pop(), ()):
                    if other not in seen:
                        seen.add(other)
                        frontier.append(other)
            issues = [i for i in select(self.store, [], [], order="seq") if i.id in seen]
        shown = {i.id for i in issues}
        blocked = frozenset(
            str(r[0]) for r in self.store.rows(f"SELECT id FROM issues WHERE {BLOCKED}")
        )
        return Picture(issues, edges_among(deps, shown), edges_among(fixes, shown), blocked)

    def cycles(self) -> list[list[str]]:
        """Every dependency cycle (only possible if the database was edited by hand)."""
        return cycles_among(
            self.store.rows("SELECT issue_id, depends_on_id FROM deps ORDER BY 1, 2")
        )
