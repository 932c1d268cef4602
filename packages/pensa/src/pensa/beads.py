"""`pn import --from-beads`: a beads (`bd`) export read into pensa issues, all or nothing.

beads writes one issue per line (`.beads/issues.jsonl`, or `bd export`), with its labels,
dependencies and comments embedded (beads-notes §1-2). What has a counterpart is mapped;
what has none is said in the summary, which accounts for every beads issue read:

- types: epic, feature, task, bug, spike, test and chore stay; a story becomes a feature and
  a milestone an epic, labelled with their beads type; anything else (event, message,
  molecule, agent, gate, decision, custom types) is orchestration or record keeping, not
  work: not imported.
- statuses: open, in_progress and closed stay; blocked, deferred, pinned, hooked and custom
  statuses become open with the status as a label; tombstones (deleted in beads) are not
  imported.
- priorities 0-3 become p0-p3; 4 (backlog) becomes p3 labelled `backlog`.
- dependencies that hold work back become pensa deps: `blocks`, `conditional-blocks`,
  `waits-for` (the issue waits for the other); `parent-child` becomes the child's `parent`
  (the epic or feature waits for its children and closes with the last of them) and
  `discovered-from` its `discovered_from` (one each: a second becomes a comment); every
  other kind (related, duplicates, supersedes, ...) and any edge to an issue not imported
  becomes a comment naming both ids. A link that would close a cycle is dropped the same
  way, a parent before a dependency.
- comments keep author and time (new `pc-` ids); labels and assignees are kept; design,
  acceptance criteria and notes are appended to the description under headings;
  `external_ref` becomes a `ref:` label. Each issue is labelled `beads:<its beads id>`, so
  `pn list --all --label beads:bd-a3f8` finds it and a second import skips it.
"""

from __future__ import annotations

import os
from collections import Counter
from typing import TYPE_CHECKING, Any, NamedTuple

from pensa.errors import InvalidData
from pensa.models import parse_timestamp, timestamp

if TYPE_CHECKING:
    from collections.abc import Iterable
    from datetime import datetime

Record = dict[str, Any]

TYPES = {
    t: t for t in ("epic", "feature", "task", "bug", "spike", "test", "chore")
}  # fmt: skip
# beads types pensa keeps as a near one, labelled with the beads type.
TYPES_MAPPED = {"story": "feature", "milestone": "epic"}
STATUSES = {"open": "open", "in_progress": "in_progress", "closed": "closed"}
BLOCKING = ("blocks", "conditional-blocks", "waits-for")
PARENT_CHILD = "parent-child"
DISCOVERED_FROM = "discovered-from"
LINK_WORDS = {
    "related": "related to",
    "relates-to": "related to",
    "parent-child": "a child of",
    "discovered-from": "discovered while working on",
    "duplicates": "a duplicate of",
    "supersedes": "supersedes",
    "replies-to": "a reply to",
    "caused-by": "caused by",
}
SECTIONS = (
    ("design", "Design"),
    ("acceptance_criteria", "Acceptance criteria"),
    ("notes", "Notes"),
)
# Read and mapped above, or beads-internal (never meant to travel): not "dropped".
HANDLED = frozenset(
    {
        "id", "title", "description", "status", "priority", "issue_type", "assignee",
        "created_at", "updated_at", "closed_at", "close_reason", "labels", "dependencies",
        "comments", "external_ref", "schema_version", "content_hash", "deleted_at",
        "deleted_by", "delete_reason", "original_type", *(k for k, _ in SECTIONS),
    }
)  # fmt: skip


class Issue(NamedTuple):
    """A beads issue as pensa will store it (ids still beads ids)."""

    beads_id: str
    title: str
    description: str | None
    issue_type: str
    status: str
    priority: str
    assignee: str | None
    created_at: str
    updated_at: str
    closed_at: str | None
    close_reason: str | None
    labels: tuple[str, ...]
    deps: tuple[tuple[str, str], ...]  # (beads type, other beads id)
    comments: tuple[tuple[str, str, str], ...]  # (author, text, created_at)
    mapped: tuple[str, ...]  # what changed on the way, e.g. "type feature -> task"


class Summary(NamedTuple):
    """What an import did, accounting for every beads issue read."""

    path: str
    read: int
    imported: int
    types: dict[str, int]  # pensa type -> issues imported
    mapped: dict[str, int]  # e.g. "type feature -> task" -> issues
    skipped: dict[str, int]  # reason -> issues not imported
    deps: int
    parents: int
    links_as_comments: int
    dangling: int
    cycles_broken: int
    comments: int
    labels: int
    dropped_fields: dict[str, int]

    def to_json(self) -> dict[str, Any]:
        """The JSON object of `pn import --from-beads --json`."""
        return {
            "path": self.path,
            "read": self.read,
            "imported": self.imported,
            "types": self.types,
            "mapped": self.mapped,
            "skipped": self.skipped,
            "deps": self.deps,
            "parents": self.parents,
            "links_as_comments": self.links_as_comments,
            "dangling": self.dangling,
            "cycles_broken": self.cycles_broken,
            "comments": self.comments,
            "labels": self.labels,
            "dropped_fields": self.dropped_fields,
        }


def locate(path: str) -> str:
    """The export file `path` names: a JSONL file, a `.beads` directory, or a project."""
    for candidate in (path, os.path.join(path, "issues.jsonl")):
        if os.path.isfile(candidate):
            return candidate
    nested = os.path.join(path, ".beads", "issues.jsonl")
    if os.path.isfile(nested):
        return nested
    raise InvalidData(f"{path}: no beads export here (give .beads/issues.jsonl or its directory)")


def read(path: str) -> list[tuple[int, Record]]:
    """Every JSON object of the export with its line number (blank lines skipped)."""
    from pensa.committed.records import parse_line

    with open(path, "rb") as f:
        data = f.read()
    name = os.path.basename(path)
    out = []
    for number, raw in enumerate(data.splitlines(), start=1):
        record = parse_line(raw, f"{name}:{number}")
        if record is not None:
            out.append((number, record))
    return out


def _time(value: Any, where: str, key: str) -> str | None:
    """A beads time (RFC 3339 with nanoseconds and any offset) as pensa's UTC stamp."""
    if value in (None, ""):
        return None
    if not isinstance(value, str):
        raise InvalidData(f"{where}: {key} is not a time: {value!r}")
    try:
        moment = parse_timestamp(value)
    except ValueError as e:
        raise InvalidData(f"{where}: {key} is not an RFC 3339 time: {value!r}") from e
    return timestamp(_utc(moment))


def _utc(moment: datetime) -> datetime:
    from datetime import UTC

    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment


def _priority(value: Any, where: str) -> tuple[str, tuple[str, ...]]:
    if value is None:
        return "p2", ()
    text = str(value).strip().lower().removeprefix("p")
    if text not in ("0", "1", "2", "3", "4") or isinstance(value, bool):
        raise InvalidData(f"{where}: priority must be 0-4, got {value!r}")
    return ("p3", ("backlog",)) if text == "4" else (f"p{text}", ())


def _text(record: Record, key: str, where: str) -> str | None:
    value = record.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise InvalidData(f"{where}: {key} must be a string")
    return value


def _label(text: str) -> str:
    """A beads value usable as a pensa label (no commas, no line breaks)."""
    return " ".join(text.replace(",", ";").split())


def convert(record: Record, where: str, *, now: str) -> Issue | str:
    """The pensa form of one beads issue, or why it has none (a summary key)."""
    beads_id = record.get("id")
    if not isinstance(beads_id, str) or not beads_id:
        raise InvalidData(f"{where}: not a beads issue (no id)")
    kind = str(record.get("issue_type") or "task").lower()
    status = str(record.get("status") or "open").lower()
    if status == "tombstone":
        return "tombstone (deleted in beads)"
    labels = [f"beads:{beads_id}"]
    mapped = []
    if kind in TYPES:
        issue_type = TYPES[kind]
    elif kind in TYPES_MAPPED:
        issue_type = TYPES_MAPPED[kind]
        labels.append(kind)
        mapped.append(f"type {kind} -> {issue_type}, labelled {kind}")
    else:
        return f"type {kind} (no pensa counterpart)"
    title = _text(record, "title", where)
    if title is None or not title.strip():
        raise InvalidData(f"{where}: {beads_id} has no title")
    if status not in STATUSES:
        labels.append(status)
        mapped.append(f"status {status} -> open, labelled {status}")
    priority, extra = _priority(record.get("priority"), where)
    labels.extend(extra)
    if extra:
        mapped.append("priority 4 -> p3, labelled backlog")
    raw_labels = record.get("labels") or []
    if not isinstance(raw_labels, list) or not all(isinstance(x, str) for x in raw_labels):
        raise InvalidData(f"{where}: labels must be an array of strings")
    labels.extend(raw_labels)
    ref = _text(record, "external_ref", where)
    if ref:
        labels.append(f"ref:{ref}")
    description = _text(record, "description", where)
    for key, heading in SECTIONS:
        body = _text(record, key, where)
        if body:
            description = f"{description}\n\n## {heading}\n\n{body}" if description else body
    created = _time(record.get("created_at"), where, "created_at")
    updated = _time(record.get("updated_at"), where, "updated_at") or created or now
    created = created or updated
    closed = STATUSES.get(status) == "closed"
    closed_at = (_time(record.get("closed_at"), where, "closed_at") or updated) if closed else None
    return Issue(
        beads_id,
        title.strip(),
        description,
        issue_type,
        STATUSES.get(status, "open"),
        priority,
        _text(record, "assignee", where),
        created,
        max(updated, created),
        closed_at,
        _text(record, "close_reason", where) if closed else None,
        tuple(sorted({_label(x) for x in labels if _label(x)})),
        _deps(record, beads_id, where),
        _comments(record, where, fallback=created),
        tuple(mapped),
    )


def _deps(record: Record, beads_id: str, where: str) -> tuple[tuple[str, str], ...]:
    out = []
    for dep in record.get("dependencies") or []:
        if not isinstance(dep, dict) or not isinstance(dep.get("depends_on_id"), str):
            raise InvalidData(f"{where}: a dependency without depends_on_id")
        if dep.get("issue_id", beads_id) != beads_id:
            continue  # beads embeds outgoing edges only; anything else is not this issue's
        out.append((str(dep.get("type") or "blocks"), dep["depends_on_id"]))
    return tuple(out)


def _comments(record: Record, where: str, *, fallback: str) -> tuple[tuple[str, str, str], ...]:
    out = []
    for comment in record.get("comments") or []:
        if not isinstance(comment, dict):
            raise InvalidData(f"{where}: a comment is not an object")
        text = comment.get("text")
        if not isinstance(text, str) or not text.strip():
            continue
        author = comment.get("author") or comment.get("actor") or "beads"
        at = _time(comment.get("created_at"), where, "comment created_at") or fallback
        out.append((str(author), text, at))
    return tuple(out)


def dropped(records: Iterable[Record]) -> dict[str, int]:
    """Fields set on imported issues that pensa has no place for, and how often."""
    counts: Counter[str] = Counter()
    for record in records:
        counts.update(k for k, v in record.items() if k not in HANDLED and v not in (None, "", []))
    return dict(sorted(counts.items()))
