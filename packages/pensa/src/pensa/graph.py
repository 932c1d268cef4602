"""Dependencies: `CHILD depends on PARENT` edges, kept acyclic, and walks over them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, NamedTuple

from pensa.cycles import cycles_among
from pensa.errors import InvalidArgument, NotFound
from pensa.links import FIELDS, WAITS_FOR, check_link, refuse_cycle
from pensa.models import Issue, LinkKind, timestamp, utcnow
from pensa.store import find, log_event, set_fields
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
    """The result of `dep add` / `dep remove`: for `parent`, `depends_on_id` is the parent;
    for `discovered-from`, the issue it was found from."""

    status: Literal["added", "removed", "exists"]
    issue_id: str
    depends_on_id: str
    kind: LinkKind = LinkKind.BLOCKS

    def to_json(self) -> dict[str, str]:
        """The JSON object of the output contract."""
        return {
            "status": self.status,
            "issue_id": self.issue_id,
            "depends_on_id": self.depends_on_id,
            "kind": self.kind.value,
        }


class Graph:
    """Dependency edges over one store."""

    def __init__(self, store: Store, *, now: Callable[[], datetime] = utcnow) -> None:
        self.store = store
        self.now = now

    def add(
        self, child: str, parent: str, *, actor: str, kind: LinkKind = LinkKind.BLOCKS
    ) -> EdgeChange:
        """Make `child` depend on `parent` (or, by `kind`, be its child, or have been
        discovered from it); refuses self-edges and cycles (`pensa.links`)."""
        now = timestamp(self.now())
        with self.store.write() as conn:
            child = find(conn, child).id
            parent = find(conn, parent).id
            if kind is not LinkKind.BLOCKS:
                return _set_link(conn, kind, child, parent, actor=actor, now=now)
            if child == parent:
                raise InvalidArgument(f"{child} cannot depend on itself")
            exists = conn.execute(
                "SELECT 1 FROM deps WHERE issue_id = ? AND depends_on_id = ?", (child, parent)
            ).fetchone()
            if exists:
                return EdgeChange("exists", child, parent)
            refuse_cycle(conn, parent, child, f"{child} waits for {parent}")
            conn.execute(
                "INSERT INTO deps (issue_id, depends_on_id) VALUES (?, ?)", (child, parent)
            )
            log_event(conn, child, "dep_added", actor=actor, detail=f"depends on {parent}", at=now)
            return EdgeChange("added", child, parent)

    def remove(
        self, child: str, parent: str, *, actor: str, kind: LinkKind = LinkKind.BLOCKS
    ) -> EdgeChange:
        """Drop the edge `child` → `parent` (of `kind`)."""
        now = timestamp(self.now())
        with self.store.write() as conn:
            child = find(conn, child).id
            parent = find(conn, parent).id
            if kind is not LinkKind.BLOCKS:
                return _clear_link(conn, kind, child, parent, actor=actor, now=now)
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
        dependencies, `fixes` or parent links, in either direction and of any status; without, every
        issue not closed (with `include_closed`, every issue)."""
        from pensa.diagram import Picture, edges_among
        from pensa.ready import BLOCKED

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
        parts = [
            (str(a), str(b))
            for a, b in self.store.rows(
                "SELECT id, parent FROM issues WHERE parent IS NOT NULL ORDER BY seq"
            )
        ]
        if issue_id is None:
            where = [] if include_closed else ["status != 'closed'"]
            issues = select(self.store, where, [], order="seq")
        else:
            root = find(self.store.conn, issue_id).id
            around: dict[str, set[str]] = {}
            for a, b in (*deps, *fixes, *parts):
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
        return Picture(
            issues,
            edges_among(deps, shown),
            edges_among(fixes, shown),
            blocked,
            tuple(edges_among(parts, shown)),
        )

    def cycles(self) -> list[list[str]]:
        """Every cycle of waiting, through dependencies and parents (only possible if the
        database was edited by hand)."""
        return cycles_among(self.store.rows(f"{WAITS_FOR} ORDER BY 1, 2"))


def _set_link(
    conn: sqlite3.Connection, kind: LinkKind, child: str, other: str, *, actor: str, now: str
) -> EdgeChange:
    """`dep add CHILD OTHER --kind parent|discovered-from`: `pn update CHILD --parent OTHER`
    (or `--discovered-from`), with the same checks and event."""
    field = FIELDS[kind]
    old = conn.execute(f"SELECT {field} FROM issues WHERE id = ?", (child,)).fetchone()[0]
    if old == other:
        return EdgeChange("exists", child, other, kind)
    check_link(conn, kind, child, other)
    set_fields(conn, child, {field: other}, now)
    log_event(
        conn, child, "updated", actor=actor, detail=f"{field}: {old or 'none'} -> {other}", at=now
    )
    return EdgeChange("added", child, other, kind)


def _clear_link(
    conn: sqlite3.Connection, kind: LinkKind, child: str, other: str, *, actor: str, now: str
) -> EdgeChange:
    """`dep remove CHILD OTHER --kind ...`: clear the link if it names OTHER."""
    field = FIELDS[kind]
    old = conn.execute(f"SELECT {field} FROM issues WHERE id = ?", (child,)).fetchone()[0]
    if old != other:
        raise NotFound(f"{child} has no {kind.value} link to {other} ({field}: {old or 'none'})")
    set_fields(conn, child, {field: None}, now)
    log_event(conn, child, "updated", actor=actor, detail=f"{field}: {other} -> none", at=now)
    return EdgeChange("removed", child, other, kind)
