"""Three-way merge of tracker snapshots: the one set of rules behind sync, export and git.

`merge(base, ours, theirs)` is used by the merging sync (ours = the database, theirs = the
JSONL on disk, base = what was last synced), by `pn export` before it writes, and by the git
merge driver (the three versions of a file). The rules:

- Per issue, per field: changed on one side only → that side; changed on both → the side
  with the later `updated_at` (ties broken by the text, so the result is the same whichever
  side is "ours"). `status` is special: when both sides changed it and one side closed the
  issue, it is closed (with that side's `closed_at` and `close_reason`); a close made
  anywhere is never undone by a claim or an edit made from a stale copy. A reopen on one
  side and a new close of the same issue on the other (it stayed closed there, with a new
  `closed_at`): the later of the two wins.
- An issue one side lacks: if the other side still holds it exactly as the base did, it is
  gone (the checkout or branch does not have it); if the other side changed it, or it is
  new there, it stays (uncommitted work rides along, like uncommitted files do). A comment
  or an edge the base lacks changes its issue too: dropping the issue would drop them.
- A tombstone (an explicit `pn delete`, in `deleted.jsonl`) on any side removes the issue,
  with its edges and comments, and tombstones are never removed.
- Comments are a union by id. Edges merge as a set against the base: an edge removed on one
  side stays removed. Edges that would close a cycle are dropped, newest-first.
- Labels, too, merge as a set against the base: a label added on either side is
  kept, one removed on either side stays removed.
- `parent` and `discovered_from` are fields like the others; one naming an issue the merge
  does not keep is dropped (as a `fixes` that names no bug), and a parent that would close a
  cycle with the edges (a parent waits for its children) is dropped, a new one first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pensa.committed.records import Record
from pensa.committed.snapshot import DepKey, Snapshot

if TYPE_CHECKING:
    from collections.abc import Collection, Iterable, Mapping

_MISSING: Any = object()
_CLOSE_FIELDS = ("closed_at", "close_reason")
_LINKS = ("parent", "discovered_from")


def _order(record: Record) -> tuple[str, str]:
    """Sort key for "which side is newer": updated_at, then the text as a stable tie-break."""
    import json

    return (str(record.get("updated_at", "")), json.dumps(record, sort_keys=True))


def merge_issue(base: Record | None, ours: Record, theirs: Record) -> Record:
    """Merge one issue present on both sides, field by field."""
    if ours == theirs:
        return ours
    if base is not None:
        if ours == base:
            return theirs
        if theirs == base:
            return ours
    base = base or {}
    newer = ours if _order(ours) >= _order(theirs) else theirs
    merged: Record = {}
    for key in dict.fromkeys([*ours, *theirs, *base]):
        b, o, t = base.get(key, _MISSING), ours.get(key, _MISSING), theirs.get(key, _MISSING)
        if key == "labels":
            labels = merge_labels(base.get(key, ()), ours.get(key, ()), theirs.get(key, ()))
            if labels:
                merged[key] = labels
            continue
        if o == t or t == b:
            value = o
        elif o == b:
            value = t
        else:
            value = newer.get(key, _MISSING)
        if value is not _MISSING:
            merged[key] = value
    b, o, t = base.get("status"), ours.get("status"), theirs.get("status")
    if o != t and "closed" in (o, t):
        closer = ours if o == "closed" else theirs
        both_changed = o != b and t != b
        # One side reopened the issue; the other left it closed, but closed it again
        # meanwhile (a new `closed_at`): the later of the two wins, as for any field.
        closed_again = (
            b == "closed" and closer.get("closed_at") != base.get("closed_at") and newer is closer
        )
        if both_changed or closed_again:
            merged["status"] = "closed"
            for key in _CLOSE_FIELDS:
                if key in closer:
                    merged[key] = closer[key]
    updated = max(str(ours.get("updated_at", "")), str(theirs.get("updated_at", "")))
    if updated:
        merged["updated_at"] = updated
    return merged


def merge_labels(base: Iterable[str], ours: Iterable[str], theirs: Iterable[str]) -> list[str]:
    """A label is kept when both sides have it, or one side has it and the base did not."""
    b, o, t = set(base), set(ours), set(theirs)
    return sorted(label for label in o | t if (label in o and label in t) or label not in b)


def merge_issues(
    base: Mapping[str, Record],
    ours: Mapping[str, Record],
    theirs: Mapping[str, Record],
    deleted: Mapping[str, Record],
    touched: Collection[str] = (),
) -> dict[str, Record]:
    """Merge the issues of three snapshots; ids in `deleted` are gone. An issue in `touched`
    (new comments or edges on it) is changed even where its record is the base's."""
    out: dict[str, Record] = {}
    for issue_id in dict.fromkeys([*ours, *theirs]):
        if issue_id in deleted:
            continue
        b, o, t = base.get(issue_id), ours.get(issue_id), theirs.get(issue_id)
        if o is not None and t is not None:
            out[issue_id] = merge_issue(b, o, t)
            continue
        present = o if o is not None else t
        assert present is not None
        if b is None or present != b or issue_id in touched:
            out[issue_id] = present
    return out


def merge_deps(
    base: Mapping[DepKey, Record], ours: Mapping[DepKey, Record], theirs: Mapping[DepKey, Record]
) -> dict[DepKey, Record]:
    """Edges as a set against the base; cycles broken by dropping edges the base lacked."""
    out = {
        key: ours.get(key) or theirs[key]
        for key in sorted({*ours, *theirs})
        if (key in ours and key in theirs) or key not in base
    }
    return _acyclic(out, base)


def _acyclic(deps: dict[DepKey, Record], base: Mapping[DepKey, Record]) -> dict[DepKey, Record]:
    from pensa.cycles import find_cycles

    while True:
        edges: dict[str, list[str]] = {}
        for child, parent in deps:
            edges.setdefault(child, []).append(parent)
        cycles = find_cycles(edges)
        if not cycles:
            return deps
        cycle = cycles[0]
        on_cycle = [(cycle[i], cycle[(i + 1) % len(cycle)]) for i in range(len(cycle))]
        new = [edge for edge in on_cycle if edge not in base] or on_cycle
        del deps[max(new)]


def touched(base: Snapshot, *sides: Snapshot) -> set[str]:
    """The issues a side gave a comment or an edge the base lacks: work on them."""
    out: set[str] = set()
    for side in sides:
        out.update(c["issue_id"] for cid, c in side.comments.items() if cid not in base.comments)
        for key in side.deps.keys() - base.deps.keys():
            out.update(key)
    return out


def merge(base: Snapshot, ours: Snapshot, theirs: Snapshot) -> Snapshot:
    """The merged tracker, consistent: no edge or comment points at a missing issue."""
    deleted = {**base.deleted, **theirs.deleted, **ours.deleted}
    issues = merge_issues(
        base.issues, ours.issues, theirs.issues, deleted, touched(base, ours, theirs)
    )
    deps = {
        key: record
        for key, record in merge_deps(base.deps, ours.deps, theirs.deps).items()
        if key[0] in issues and key[1] in issues
    }
    comments = {
        cid: record
        for cid, record in {**theirs.comments, **ours.comments}.items()
        if record["issue_id"] in issues
    }
    for issue in list(issues.values()):
        fixes = issue.get("fixes")
        if fixes is not None and issues.get(fixes, {}).get("issue_type") != "bug":
            issue = issues[issue["id"]] = {k: v for k, v in issue.items() if k != "fixes"}
        for key in _LINKS:
            if issue.get(key) is not None and issue[key] not in issues:
                issue = issues[issue["id"]] = {k: v for k, v in issue.items() if k != key}
    _no_waiting_cycle(issues, deps, base)
    return Snapshot(issues, deps, comments, deleted)


def _no_waiting_cycle(
    issues: dict[str, Record], deps: dict[DepKey, Record], base: Snapshot
) -> None:
    """Break every cycle the merged parents close with the merged edges (a parent waits for
    its children, `pensa.links`): the parent link the base lacked goes first, else an edge
    the base lacked, else the largest link on the cycle."""
    from pensa.cycles import find_cycles

    while True:
        parents = {(r["parent"], i) for i, r in issues.items() if r.get("parent") is not None}
        if not parents:
            return
        edges: dict[str, list[str]] = {}
        for child, parent in (*deps, *parents):
            edges.setdefault(child, []).append(parent)
        cycles = find_cycles(edges)
        if not cycles:
            return
        cycle = cycles[0]
        on_cycle = [(cycle[i], cycle[(i + 1) % len(cycle)]) for i in range(len(cycle))]
        links = [e for e in on_cycle if e in parents]
        new_links = [e for e in links if base.issues.get(e[1], {}).get("parent") != e[0]]
        new_deps = [e for e in on_cycle if e in deps and e not in base.deps]
        if new_links or not new_deps:
            _, child = max(new_links or links)
            issues[child] = {k: v for k, v in issues[child].items() if k != "parent"}
        else:
            del deps[max(new_deps)]


def merge_file(kind: str, base: Snapshot, ours: Snapshot, theirs: Snapshot) -> str:
    """One file's merged canonical text, for the git merge driver (`kind`: `disk.KINDS`).

    The driver sees one file at a time, so nothing here may depend on the other files:
    dangling edges and tombstoned issues are settled by the next sync, which sees them all.
    """
    if kind == "issues.jsonl":
        merged = Snapshot(merge_issues(base.issues, ours.issues, theirs.issues, {}), {}, {}, {})
    elif kind == "deps.jsonl":
        merged = Snapshot({}, merge_deps(base.deps, ours.deps, theirs.deps), {}, {})
    elif kind == "comments.jsonl":
        merged = Snapshot({}, {}, {**theirs.comments, **ours.comments}, {})
    else:
        merged = Snapshot({}, {}, {}, {**base.deleted, **theirs.deleted, **ours.deleted})
    return merged.render()[kind]
