"""Writing a beads export into the database: ids, edges, comments, in one transaction.

The mapping of each issue is `pensa.beads`; this module gives each imported issue a pensa
id, turns beads edges into pensa deps or comments (see `pensa.beads` for which), breaks any
cycle the edges would close, and inserts everything inside one `BEGIN IMMEDIATE`: a bad
line anywhere leaves the database as it was, like `pn import`.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, NamedTuple

from pensa import beads, ids
from pensa.beads import BLOCKING, DISCOVERED_FROM, LINK_WORDS, PARENT_CHILD, Summary
from pensa.cycles import find_cycles
from pensa.models import encode_labels, timestamp
from pensa.store import log_event

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Callable
    from datetime import datetime

    from pensa.store import Store


class Edge(NamedTuple):
    """A pensa dep from a beads edge: `child` waits for `parent`; for a `parent-child` edge,
    `child` is the parent (an epic) that waits for `parent`, its child."""

    child: str
    parent: str
    kind: str
    other: str  # the beads id on the far side, for the note if the edge is dropped
    owner: str  # the pensa id of the issue that carried the edge in beads


def import_beads(store: Store, path: str, *, actor: str, now: Callable[[], datetime]) -> Summary:
    """Import the beads export at `path` (file, `.beads` directory or project)."""
    found = beads.locate(path)
    stamp = timestamp(now())
    issues: dict[str, beads.Issue] = {}
    records: dict[str, dict[str, object]] = {}
    why_not: dict[str, str] = {}
    skipped: Counter[str] = Counter()
    read = 0
    for number, record in beads.read(found):
        read += 1
        result = beads.convert(record, f"{found}:{number}", now=stamp)
        beads_id = str(record["id"])
        if beads_id in issues or beads_id in why_not:
            skipped["duplicate line (the later one kept)"] += 1
            issues.pop(beads_id, None)
            why_not.pop(beads_id, None)
        if isinstance(result, str):
            why_not[beads_id] = result
            skipped[result] += 1
        else:
            issues[beads_id] = result
            records[beads_id] = record
    with store.write() as conn:
        known = _already_imported(conn)
        pensa_ids: dict[str, str] = {}
        new = []
        for beads_id, issue in sorted(issues.items(), key=lambda kv: (kv[1].created_at, kv[0])):
            if beads_id in known:
                pensa_ids[beads_id] = known[beads_id]
                skipped["already imported (labelled beads:ID)"] += 1
            else:
                new.append(issue)
        taken = set(pensa_ids.values())
        for issue in new:
            pensa_ids[issue.beads_id] = ids.new_id(lambda c: c in taken or _exists(conn, c))
            taken.add(pensa_ids[issue.beads_id])
        notes, edges, dangling, links, found_from = _edges(new, pensa_ids, why_not)
        edges, broken = _acyclic(conn, edges)
        for edge in broken:
            notes.append(
                (edge.owner, f"from beads: {edge.kind} {edge.other} was not made a dependency: "
                 "it would close a dependency cycle")
            )  # fmt: skip
        parents = {e.parent: e.child for e in edges if e.kind == PARENT_CHILD}
        edges = [e for e in edges if e.kind != PARENT_CHILD]
        links_ = Links(parents, found_from)
        _insert(conn, new, pensa_ids, edges, links_, notes, actor=actor, stamp=stamp)
    return Summary(
        found,
        read,
        len(new),
        dict(sorted(Counter(i.issue_type for i in new).items())),
        dict(sorted(Counter(m for i in new for m in i.mapped).items())),
        dict(sorted(skipped.items())),
        len(edges),
        len(parents),
        links,
        dangling,
        len(broken),
        sum(len(i.comments) for i in new),
        len({label for i in new for label in i.labels}),
        beads.dropped(records[i.beads_id] for i in new),
    )


def _already_imported(conn: sqlite3.Connection) -> dict[str, str]:
    """beads id -> pensa id of issues an earlier import made (their `beads:` label)."""
    rows = conn.execute(
        "SELECT substr(l.value, 7), i.id FROM issues i, json_each(i.labels) l "
        "WHERE l.value LIKE 'beads:%'"
    ).fetchall()
    return {str(b): str(p) for b, p in rows}


def _exists(conn: sqlite3.Connection, issue_id: str) -> bool:
    row = conn.execute(
        "SELECT 1 FROM issues WHERE id = ?1 UNION ALL SELECT 1 FROM tombstones WHERE id = ?1",
        (issue_id,),
    ).fetchone()
    return row is not None


class Links(NamedTuple):
    """The issue fields beads edges become: each child's parent, each issue's origin."""

    parent: dict[str, str]  # child -> parent (pensa ids)
    discovered_from: dict[str, str]


def _edges(
    new: list[beads.Issue], pensa_ids: dict[str, str], why_not: dict[str, str]
) -> tuple[list[tuple[str, str]], list[Edge], int, int, dict[str, str]]:
    """(notes as (pensa id, text), deps and parent links, edges to issues not imported, links
    as comments, each issue's origin). An issue keeps its first parent and its first origin:
    a field holds one."""
    notes: list[tuple[str, str]] = []
    edges: dict[tuple[str, str], Edge] = {}
    has_parent: set[str] = set()
    found_from: dict[str, str] = {}
    dangling = links = 0
    for issue in new:
        me = pensa_ids[issue.beads_id]
        for kind, other in issue.deps:
            target = pensa_ids.get(other)
            if target is None:
                dangling += 1
                reason = why_not.get(other, "not in the export")
                notes.append((me, f"from beads: {kind} {other}, which was not imported ({reason})"))
            elif target == me:
                continue
            elif kind in BLOCKING:
                edges.setdefault((me, target), Edge(me, target, kind, other, me))
            elif kind == PARENT_CHILD and me not in has_parent:
                has_parent.add(me)  # the parent, `target`, waits for its child
                edges.setdefault((target, me), Edge(target, me, kind, other, me))
            elif kind == DISCOVERED_FROM and me not in found_from:
                found_from[me] = target
            else:
                links += 1
                words = LINK_WORDS.get(kind, f"{kind}:")
                notes.append((me, f"from beads: {words} {target} ({other})"))
    return notes, list(edges.values()), dangling, links, found_from


def _acyclic(conn: sqlite3.Connection, edges: list[Edge]) -> tuple[list[Edge], list[Edge]]:
    """The edges that close no cycle of waiting (`pensa.links`), and the dropped ones
    (parent links go first: a `blocks` edge says more about the order of the work)."""
    from pensa.links import WAITS_FOR

    graph: dict[str, list[str]] = {}
    for child, parent in conn.execute(WAITS_FOR):
        graph.setdefault(child, []).append(parent)
    kept = list(edges)
    for edge in kept:
        graph.setdefault(edge.child, []).append(edge.parent)
    broken = []
    while cycles := find_cycles(graph):
        cycle = cycles[0]
        on_cycle = {(cycle[i], cycle[(i + 1) % len(cycle)]) for i in range(len(cycle))}
        candidates = [e for e in kept if (e.child, e.parent) in on_cycle]
        drop = min(candidates, key=lambda e: (e.kind != PARENT_CHILD, e.child, e.parent))
        kept.remove(drop)
        graph[drop.child].remove(drop.parent)
        broken.append(drop)
    return kept, broken


def _insert(
    conn: sqlite3.Connection,
    new: list[beads.Issue],
    pensa_ids: dict[str, str],
    edges: list[Edge],
    links: Links,
    notes: list[tuple[str, str]],
    *,
    actor: str,
    stamp: str,
) -> None:
    conn.execute("PRAGMA defer_foreign_keys = ON")
    for issue in new:
        issue_id = pensa_ids[issue.beads_id]
        conn.execute(
            "INSERT INTO issues (id, title, description, issue_type, status, priority, assignee, "
            "created_at, updated_at, closed_at, close_reason, labels, parent, discovered_from) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                issue_id,
                issue.title,
                issue.description,
                issue.issue_type,
                issue.status,
                issue.priority,
                issue.assignee,
                issue.created_at,
                issue.updated_at,
                issue.closed_at,
                issue.close_reason,
                encode_labels(issue.labels),
                links.parent.get(issue_id),
                links.discovered_from.get(issue_id),
            ),
        )
        log_event(
            conn, issue_id, "created", actor=actor, detail=f"from beads {issue.beads_id}", at=stamp
        )
    conn.executemany(
        "INSERT INTO deps (issue_id, depends_on_id) VALUES (?, ?)",
        [(e.child, e.parent) for e in edges],
    )
    comments = [
        (pensa_ids[i.beads_id], author, text, at) for i in new for author, text, at in i.comments
    ]
    comments += [(issue_id, "pensa", text, stamp) for issue_id, text in notes]
    for issue_id, author, text, at in sorted(comments, key=lambda c: c[3]):
        comment_id = ids.new_id(
            lambda c: (
                conn.execute("SELECT 1 FROM comments WHERE id = ?", (c,)).fetchone() is not None
            ),
            prefix=ids.COMMENT_PREFIX,
        )
        conn.execute(
            "INSERT INTO comments (id, issue_id, actor, text, created_at) VALUES (?, ?, ?, ?, ?)",
            (comment_id, issue_id, author, text, at),
        )
