"""Comments and dependency edges the files hold for an issue the database lacks: they wait in
the files for it.

A cherry-pick of the commit that commented on an issue, without the one that created it,
brings the comment's line and not the issue (the same for an edge). The database cannot hold
a comment or an edge without its issue, so the sync leaves it out. The export used to render
the shard from the database alone, and so dropped the line: a removal that, merged into the
branch that has the issue, removed the comment there too (git takes the one side that
changed). And when the issue came later (a merge, a switch back), the line was no news to the
sync (it was in the base already), so the issue came without it, and the next export of the
shard dropped it on that branch.

So the export (and `pending.settle`, which must agree with it) keeps every such line
(`keep`), and a sync that brings an issue in takes in what the files hold for it
(`take_in`). A tombstone ends the wait: the record goes with its issue, as everywhere.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

from pensa.committed.disk import file_name, kind_of, read_file, read_files
from pensa.committed.snapshot import Snapshot, parse
from pensa.errors import InvalidData

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Collection, Iterable, Mapping

    from pensa.committed.records import Record
    from pensa.committed.snapshot import DepKey
    from pensa.project import Project

KINDS = ("comments.jsonl", "deps.jsonl")
# The issue ids a comment or edge line names, found without parsing it: only the few lines
# naming an issue that came in are parsed (the files may hold every comment of the tracker).
_NAMED = re.compile(rb'"(?:issue_id|depends_on_id)"\s*:\s*"([^"\\]*)"')


def waits_in(name: str) -> bool:
    """Whether the committed file `name` may hold records that wait for their issue."""
    return kind_of(name) in KINDS


def keep(
    conn: sqlite3.Connection, texts: dict[str, str], on_disk: Mapping[str, bytes]
) -> dict[str, str]:
    """`texts` (files rendered from the database, by name) with the comment and edge lines
    the same files on disk hold that name an issue the database lacks and no tombstone names.
    A line pn cannot read is not kept (the sync has reported it when it came)."""
    out = dict(texts)
    for name, text in texts.items():
        data = on_disk.get(name)
        if not data or not waits_in(name):
            continue
        rendered = set(text.encode().splitlines())
        left = [line for line in data.splitlines() if line.strip() and line not in rendered]
        if not left:
            continue
        waiting = _waiting(conn, _readable(name, left))
        if waiting.comments or waiting.deps:
            ours = parse({name: text.encode()})
            whole = Snapshot(
                {}, {**waiting.deps, **ours.deps}, {**waiting.comments, **ours.comments}, {}
            )
            kind = kind_of(name)
            assert kind is not None
            out[name] = whole.render()[kind]
    return out


def keep_on_disk(
    conn: sqlite3.Connection, project: Project, texts: dict[str, str], current: Collection[str]
) -> dict[str, str]:
    """`keep`, reading the files it needs from `project` (`current`: the names there)."""
    names = [n for n in texts if n in current and waits_in(n)]
    return keep(conn, texts, read_files(project, names))


def take_in(
    conn: sqlite3.Connection,
    project: Project,
    arrived: Collection[str],
    current: Iterable[str],
    read: Mapping[str, bytes],
) -> None:
    """After a sync brought the issues `arrived` into the database: the comments and edges
    the files on disk (`current`: their names; `read`: those already read) hold for them,
    added as a sync adds them (`committed.apply`)."""
    from pensa.committed import apply
    from pensa.committed.apply import Diff

    if not arrived:
        return
    on_disk = set(current)
    # Comments are filed by their issue; an edge by its dependent, so one to an issue that
    # came may be in any deps file.
    names = {file_name("comments.jsonl", i) for i in arrived} & on_disk
    names |= {n for n in on_disk if kind_of(n) == "deps.jsonl"}
    wanted = {i.encode() for i in arrived}
    found = Snapshot.empty()
    for name in sorted(names):
        data = read[name] if name in read else read_file(project, name)
        if wanted.isdisjoint(_NAMED.findall(data)):  # one pass over the file, in C
            continue
        lines = [line for line in data.splitlines() if wanted.intersection(_NAMED.findall(line))]
        if lines:
            snap = _readable(name, lines)
            found.comments.update(snap.comments)
            found.deps.update(snap.deps)
    comments = {c: r for c, r in found.comments.items() if r["issue_id"] in arrived}
    deps = {k: r for k, r in found.deps.items() if k[0] in arrived or k[1] in arrived}
    came = Snapshot({}, deps, comments, {})
    apply.edges(conn, Diff(Snapshot.empty(), came))
    apply.comments(conn, Diff(Snapshot.empty(), came))


def _readable(name: str, lines: list[bytes]) -> Snapshot:
    """The records of these lines of file `name`, each line on its own: one pn cannot read is
    left out."""
    out = Snapshot.empty()
    for line in lines:
        try:
            snap = parse({name: line})
        except InvalidData:
            continue
        out.comments.update(snap.comments)
        out.deps.update(snap.deps)
    return out


def _waiting(conn: sqlite3.Connection, found: Snapshot) -> Snapshot:
    """The comments and edges of `found` that name an issue the database lacks, none of them
    tombstoned (an edge to itself never waits: no issue could make it valid)."""
    named = {c["issue_id"] for c in found.comments.values()}
    named.update(end for key in found.deps for end in key)
    ids = json.dumps(sorted(named))
    present = _ids(conn, "SELECT id FROM issues WHERE id IN (SELECT value FROM json_each(?))", ids)
    dead = _ids(conn, "SELECT id FROM tombstones WHERE id IN (SELECT value FROM json_each(?))", ids)
    comments = {
        cid: record
        for cid, record in found.comments.items()
        if record["issue_id"] not in present and record["issue_id"] not in dead
    }
    deps: dict[DepKey, Record] = {
        key: record
        for key, record in found.deps.items()
        if key[0] != key[1] and not present.issuperset(key) and dead.isdisjoint(key)
    }
    return Snapshot({}, deps, comments, {})


def _ids(conn: sqlite3.Connection, sql: str, ids: str) -> set[str]:
    return {str(row[0]) for row in conn.execute(sql, (ids,))}
