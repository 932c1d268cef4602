"""A merge's result written into the database with the fewest writes: issues by record,
edges and comments by what the files added or lost against their base, `fixes` that lost
their bug cleared. The merging sync (`committed.sync`) and git claims (`pensa.gitclaims`)
write through here.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, NamedTuple

from pensa.committed.records import COMMENT_FIELDS
from pensa.committed.snapshot import Snapshot, issue_row, split_extra
from pensa.models import ISSUE_FIELDS

if TYPE_CHECKING:
    import sqlite3


class Synced(NamedTuple):
    """What a sync changed in the database."""

    added: int
    updated: int
    removed: int
    changed: bool

    def to_json(self) -> dict[str, int | bool]:
        """The JSON object of `pn sync --json`."""
        return {
            "added": self.added,
            "updated": self.updated,
            "removed": self.removed,
            "changed": self.changed,
        }


class Diff(NamedTuple):
    """The records whose lines differ between the base and the files on disk."""

    base: Snapshot  # the old versions (lines gone from the files)
    theirs: Snapshot  # the new versions (lines new in the files)


def edges(conn: sqlite3.Connection, diff: Diff) -> None:
    """Edges: one removed in the files stays removed; one added is added if both ends exist
    and it closes no cycle (`pensa.committed.merge`: edges merge as a set against the base)."""
    gone = [k for k in diff.base.deps if k not in diff.theirs.deps]
    conn.executemany("DELETE FROM deps WHERE issue_id = ? AND depends_on_id = ?", gone)
    added = [(k, r) for k, r in diff.theirs.deps.items() if k not in diff.base.deps]
    if not added:
        return
    from pensa.cycles import find_cycles
    from pensa.links import WAITS_FOR

    edges: dict[str, list[str]] = {}
    for child, parent in conn.execute(WAITS_FOR):
        edges.setdefault(child, []).append(parent)
    exists = {
        row[0]
        for row in conn.execute(
            "SELECT id FROM issues WHERE id IN (SELECT value FROM json_each(?))",
            (json.dumps(sorted({end for key, _ in added for end in key})),),
        )
    }
    present = set(conn.execute("SELECT issue_id, depends_on_id FROM deps").fetchall())
    for (child, parent), record in sorted(added):
        if child not in exists or parent not in exists or (child, parent) in present:
            continue
        present.add((child, parent))
        edges.setdefault(child, []).append(parent)
        if find_cycles({c: list(p) for c, p in edges.items()}):
            edges[child].remove(parent)
            continue
        extra = split_extra(record, ("issue_id", "depends_on_id"))[1]
        conn.execute(
            "INSERT OR REPLACE INTO deps (issue_id, depends_on_id, extra) VALUES (?, ?, ?)",
            (child, parent, extra),
        )


def comments(conn: sqlite3.Connection, diff: Diff) -> None:
    """Comments follow the files as issues do: a new one is added to an issue that exists
    (one on an issue the database lacks waits in the files, `committed.waiting`), and one
    the base had and the files lost (a checkout of a branch without it) goes. One never
    committed is in no base, so it stays wherever the checkout goes."""
    gone = [(cid,) for cid in diff.base.comments if cid not in diff.theirs.comments]
    conn.executemany("DELETE FROM comments WHERE id = ?", gone)
    rows = []
    for cid, record in sorted(diff.theirs.comments.items(), key=lambda kv: kv[1]["created_at"]):
        if cid in diff.base.comments:
            continue
        known, extra = split_extra(record, COMMENT_FIELDS)
        rows.append((*(known.get(k) for k in COMMENT_FIELDS), extra))
    conn.executemany(
        "INSERT OR IGNORE INTO comments (id, issue_id, actor, text, created_at, extra) "
        "SELECT ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM issues WHERE id = ?2)",
        rows,
    )


def clear_dangling_fixes(conn: sqlite3.Connection, ids: set[str]) -> None:
    """A merged `fixes` that names no bug (deleted, or never here) is cleared, and so is a
    `parent` or `discovered_from` that names no issue, or a parent that closes a cycle with
    the edges (`pensa.links`: a parent waits for its children)."""
    within = json.dumps(sorted(ids))
    conn.execute(
        "UPDATE issues SET fixes = NULL WHERE id IN (SELECT value FROM json_each(?)) "
        "AND fixes IS NOT NULL AND fixes NOT IN (SELECT id FROM issues WHERE issue_type = 'bug')",
        (within,),
    )
    for key in ("parent", "discovered_from"):
        conn.execute(
            f"UPDATE issues SET {key} = NULL WHERE id IN (SELECT value FROM json_each(?)) "
            f"AND {key} IS NOT NULL AND {key} NOT IN (SELECT id FROM issues)",
            (within,),
        )
    with_parent = conn.execute(
        "SELECT id FROM issues WHERE id IN (SELECT value FROM json_each(?)) AND parent IS NOT NULL",
        (within,),
    ).fetchall()
    if with_parent:
        _break_parent_cycles(conn, {str(r[0]) for r in with_parent})


def _break_parent_cycles(conn: sqlite3.Connection, merged: set[str]) -> None:
    """Clear the parent of a merged issue on each cycle of waiting, until there is none."""
    from pensa.cycles import cycles_among
    from pensa.links import WAITS_FOR

    while cycles := cycles_among(conn.execute(f"{WAITS_FOR} ORDER BY 1, 2").fetchall()):
        cycle = cycles[0]
        on_cycle = [(cycle[i], cycle[(i + 1) % len(cycle)]) for i in range(len(cycle))]
        parents = {
            (str(p), str(c))
            for c, p in conn.execute(
                "SELECT id, parent FROM issues WHERE parent IS NOT NULL AND id IN "
                "(SELECT value FROM json_each(?))",
                (json.dumps(sorted(merged)),),
            )
        }
        links = [e for e in on_cycle if e in parents]
        if not links:
            return  # not of this merge's making: `pn doctor` reports it
        conn.execute("UPDATE issues SET parent = NULL WHERE id = ?", (max(links)[1],))


def apply(conn: sqlite3.Connection, ours: Snapshot, result: Snapshot) -> Synced:
    """Change the database from `ours` to `result` with the fewest writes."""
    conn.execute("PRAGMA defer_foreign_keys = ON")  # a new issue may fix one added after it
    gone = [i for i in ours.issues if i not in result.issues]
    conn.executemany("DELETE FROM issues WHERE id = ?", [(i,) for i in gone])
    new = [r for i, r in result.issues.items() if i not in ours.issues]
    changed_ = [r for i, r in result.issues.items() if i in ours.issues and ours.issues[i] != r]
    columns = (*ISSUE_FIELDS, "extra")
    rows = []
    for record in sorted(new, key=lambda r: (r["created_at"], r["id"])):
        values, extra = issue_row(record)
        rows.append((*values, extra))
    conn.executemany(
        f"INSERT INTO issues ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
        rows,
    )
    updates = []
    for record in changed_:
        values, extra = issue_row(record)
        updates.append((*values[1:], extra, record["id"]))
    assignments = ", ".join(f"{c} = ?" for c in (*ISSUE_FIELDS[1:], "extra"))
    conn.executemany(f"UPDATE issues SET {assignments} WHERE id = ?", updates)
    conn.executemany(
        "DELETE FROM deps WHERE issue_id = ? AND depends_on_id = ?",
        [key for key in ours.deps if key not in result.deps],
    )
    conn.executemany(
        "INSERT OR REPLACE INTO deps (issue_id, depends_on_id, extra) VALUES (?, ?, ?)",
        [
            (*key, split_extra(record, ("issue_id", "depends_on_id"))[1])
            for key, record in result.deps.items()
            if ours.deps.get(key) != record
        ],
    )
    conn.executemany(
        "DELETE FROM comments WHERE id = ?",
        [(c,) for c in ours.comments if c not in result.comments],
    )
    comment_rows = []
    for cid, record in sorted(result.comments.items(), key=lambda kv: kv[1]["created_at"]):
        if ours.comments.get(cid) != record:
            known, extra = split_extra(record, COMMENT_FIELDS)
            comment_rows.append((*(known.get(k) for k in COMMENT_FIELDS), extra))
    conn.executemany(
        "INSERT OR REPLACE INTO comments (id, issue_id, actor, text, created_at, extra) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        comment_rows,
    )
    conn.executemany(
        "INSERT OR REPLACE INTO tombstones (id, deleted_at, extra) VALUES (?, ?, ?)",
        [
            (tid, record["deleted_at"], split_extra(record, ("id", "deleted_at"))[1])
            for tid, record in result.deleted.items()
            if ours.deleted.get(tid) != record
        ],
    )
    touched = (len(new) + len(changed_) + len(gone)) > 0 or ours != result
    return Synced(len(new), len(changed_), len(gone), changed=touched)
