"""The tracker as plain records: parsed from JSONL, read from the database, rendered back.

A `Snapshot` is what the committed layer holds: issues, dependency edges, comments and
tombstones (ids deleted on purpose), each as the JSON object of its JSONL line. Fields this
version of pensa does not know ride along in the same object and are written back unchanged
(beads dropped such fields for months; pensa must not).

The merging sync, `pn export`'s reconcile step and the git merge driver all work on
snapshots, so the three agree on one canonical text: known keys in their fixed order, then
unknown keys sorted, compact, UTF-8 (the same bytes the SQL export produces).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, NamedTuple

from pensa.committed.disk import file_name, kind_of, ordered, shard_of
from pensa.committed.records import COMMENT_FIELDS, DEP_FIELDS, TOMBSTONE_FIELDS, Record, parse_file
from pensa.models import ISSUE_FIELDS, LIST_FIELDS, decode_labels, encode_list

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Iterable

DepKey = tuple[str, str]


class Snapshot(NamedTuple):
    """Issues by id, edges by (issue, parent), comments by id, tombstones by id."""

    issues: dict[str, Record]
    deps: dict[DepKey, Record]
    comments: dict[str, Record]
    deleted: dict[str, Record]

    @classmethod
    def empty(cls) -> Snapshot:
        """A tracker with nothing in it."""
        return cls({}, {}, {}, {})

    def render(self) -> dict[str, str]:
        """Each kind's records as canonical text, keyed by kind (`disk.KINDS`): what the merge
        driver writes back into the one file it merged."""
        return {
            "issues.jsonl": _lines([self.issues[k] for k in sorted(self.issues)], ISSUE_FIELDS),
            "deps.jsonl": _lines([self.deps[k] for k in sorted(self.deps)], DEP_FIELDS),
            "comments.jsonl": _lines(
                sorted(
                    self.comments.values(), key=lambda c: (c["issue_id"], c["created_at"], c["id"])
                ),
                COMMENT_FIELDS,
            ),
            "deleted.jsonl": _lines(
                [self.deleted[k] for k in sorted(self.deleted)], TOMBSTONE_FIELDS
            ),
        }


def canonical(record: Record, fields: tuple[str, ...]) -> str:
    """One JSONL line (no newline): known keys in order, null members and empty lists
    (`labels`) dropped, then extras."""
    known = {k: record[k] for k in fields if record.get(k) not in (None, [])}
    extra = {k: record[k] for k in sorted(record) if k not in fields}
    return json.dumps({**known, **extra}, ensure_ascii=False, separators=(",", ":"))


def _lines(records: list[Record], fields: tuple[str, ...]) -> str:
    return "".join(canonical(r, fields) + "\n" for r in records)


def split_extra(record: Record, fields: tuple[str, ...]) -> tuple[Record, str | None]:
    """The known fields, and the unknown ones as canonical JSON text (None when there are none)."""
    known = {k: v for k, v in record.items() if k in fields}
    extra = {k: record[k] for k in sorted(record) if k not in fields}
    if not extra:
        return known, None
    return known, json.dumps(extra, ensure_ascii=False, separators=(",", ":"))


def with_extra(record: Record, extra: str | None) -> Record:
    """`record` plus the unknown fields stored beside it."""
    if extra:
        record.update(json.loads(extra))
    return record


# --- parsing ------------------------------------------------------------------------------


def parse(files: dict[str, bytes], *, prefix: str = "") -> Snapshot:
    """A snapshot from committed files' bytes, by file name (any shard; a missing file is
    empty). Later duplicates win, and a shard is read after its kind's own file."""
    snap = Snapshot.empty()
    for name in ordered(n for n in files if kind_of(n) is not None):
        kind = kind_of(name)
        assert kind is not None
        for _, record in parse_file(files[name], kind, label=prefix + name):
            if kind == "issues.jsonl":
                snap.issues[record["id"]] = record
            elif kind == "deps.jsonl":
                snap.deps[(record["issue_id"], record["depends_on_id"])] = record
            elif kind == "comments.jsonl":
                snap.comments[record["id"]] = record
            else:
                snap.deleted[record["id"]] = record
    return snap


# --- the database -------------------------------------------------------------------------

_COLUMNS = ", ".join(ISSUE_FIELDS)


def issue_record(row: tuple[Any, ...]) -> Record:
    """An issue row (`ISSUE_FIELDS`, then `extra`) as its JSONL record: unset fields
    omitted, labels as a list."""
    record = {k: v for k, v in zip(ISSUE_FIELDS, row, strict=False) if v is not None}
    for key in LIST_FIELDS:
        if key in record:
            record[key] = list(decode_labels(record[key]))
    return with_extra(record, row[-1])


def issue_row(record: Record) -> tuple[tuple[Any, ...], str | None]:
    """The column values (`ISSUE_FIELDS` order) and `extra` text of an issue record."""
    known, extra = split_extra(record, ISSUE_FIELDS)
    values = tuple(
        encode_list(k, known.get(k)) if k in LIST_FIELDS else known.get(k) for k in ISSUE_FIELDS
    )
    return values, extra


def read_issues(conn: sqlite3.Connection, ids: set[str]) -> dict[str, Record]:
    """The issues with these ids (the ones a sync touches), as records."""
    out: dict[str, Record] = {}
    for row in conn.execute(
        f"SELECT {_COLUMNS}, extra FROM issues WHERE id IN (SELECT value FROM json_each(?))",
        (json.dumps(sorted(ids)),),
    ):
        record = issue_record(row)
        out[record["id"]] = record
    return out


def _object(fields: tuple[str, ...]) -> str:
    members = ", ".join(f"'{f}', json({f})" if f in LIST_FIELDS else f"'{f}', {f}" for f in fields)
    known = f"json_patch('{{}}', json_object({members}))"
    # Unknown fields are stored as canonical JSON text; their members are spliced in after
    # the known ones, exactly as `canonical` orders them.
    return (
        f"CASE WHEN extra IS NULL THEN {known} "
        f"ELSE substr({known}, 1, length({known}) - 1) || ',' || substr(extra, 2) END"
    )


class _Source(NamedTuple):
    """Where a kind's records are in the database: the table, the column holding the issue id
    that names the shard, the line's fields and the file's order."""

    table: str
    key: str
    fields: tuple[str, ...]
    order: str


_SOURCES = {
    "issues.jsonl": _Source("issues", "id", ISSUE_FIELDS, "id"),
    "deps.jsonl": _Source("deps", "issue_id", DEP_FIELDS, "issue_id, depends_on_id"),
    "comments.jsonl": _Source("comments", "issue_id", COMMENT_FIELDS, "issue_id, created_at, id"),
    "deleted.jsonl": _Source("tombstones", "id", TOMBSTONE_FIELDS, "id"),
}


def _select(source: _Source, where: str = "") -> str:
    # SQLite builds each line in C: json_patch onto '{}' drops the null members (RFC 7396)
    # and keeps the key order, and its escaping matches json.dumps(ensure_ascii=False,
    # separators=(",", ":")) (tests/committed/test_jsonl.py proves both), so an export stays within
    # its bench target without building Python objects.
    return (
        f"SELECT {source.key}, {_object(source.fields)} FROM {source.table} {where} "
        f"ORDER BY {source.order}"
    )


def render_db(conn: sqlite3.Connection, names: Iterable[str] | None = None) -> dict[str, str]:
    """Committed files' canonical text straight from the database (the bytes `render` makes),
    by file name: the files `names` (each, empty or not), or every file that has records.

    One file reads its shard's range of the id index (`pn-1` <= id < `pn-2`: exactly the ids
    starting `pn-1`); a kind's own file, the ids no shard takes (`disk.shard`'s rule as
    GLOB)."""
    if names is None:
        return _render_all(conn)
    out: dict[str, str] = {}
    for name in names:
        kind = kind_of(name)
        assert kind is not None, name
        source, part = _SOURCES[kind], shard_of(name)
        if part:
            start = f"pn-{part}"
            where = f"WHERE {source.key} >= ? AND {source.key} < ?"
            params: tuple[str, ...] = (start, start[:-1] + chr(ord(start[-1]) + 1))
        else:
            where, params = f"WHERE NOT ({source.key} GLOB 'pn-[0-9a-f]*')", ()
        out[name] = "".join(row[1] + "\n" for row in conn.execute(_select(source, where), params))
    return out


def _render_all(conn: sqlite3.Connection) -> dict[str, str]:
    """Every file that has records: one ordered pass per kind, each line to its shard."""
    out: dict[str, list[str]] = {}
    for kind, source in _SOURCES.items():
        for key, line in conn.execute(_select(source)):
            out.setdefault(file_name(kind, key), []).append(line + "\n")
    return {name: "".join(lines) for name, lines in out.items()}


def read_db(conn: sqlite3.Connection) -> Snapshot:
    """Everything the committed layer would hold, read inside the caller's transaction."""
    snap = Snapshot.empty()
    for row in conn.execute(f"SELECT {_COLUMNS}, extra FROM issues"):
        record = issue_record(row)
        snap.issues[record["id"]] = record
    for a, b, extra in conn.execute("SELECT issue_id, depends_on_id, extra FROM deps"):
        snap.deps[(a, b)] = with_extra({"issue_id": a, "depends_on_id": b}, extra)
    for row in conn.execute("SELECT id, issue_id, actor, text, created_at, extra FROM comments"):
        record = dict(zip(COMMENT_FIELDS, row, strict=False))
        snap.comments[record["id"]] = with_extra(record, row[-1])
    for tid, at, extra in conn.execute("SELECT id, deleted_at, extra FROM tombstones"):
        snap.deleted[tid] = with_extra({"id": tid, "deleted_at": at}, extra)
    return snap
