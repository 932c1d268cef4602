"""JSONL, the git-committed layer: deterministic export and an all-or-nothing import.

Export: one compact object per line, unset fields omitted, fixed key order, UTF-8 (no `\\u`
escapes), issues sorted by id (random ids spread concurrent additions over the file so git
merges rarely conflict), deps by (issue_id, depends_on_id), comments by (issue_id,
created_at, id). Re-exporting an unchanged database gives byte-identical files.

Import: every line is validated first; the database is built in a temporary file and swapped
in with `os.replace`, so a bad line leaves the existing database exactly as it was.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from pensa.errors import Busy, InvalidArgument, InvalidData
from pensa.graph import find_cycles
from pensa.models import ISSUE_FIELDS, IssueType, Priority, Status, parse_timestamp
from pensa.store import Store

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Iterator

    from pensa.project import Project

COMMENT_FIELDS = ("id", "issue_id", "actor", "text", "created_at")
DEP_FIELDS = ("issue_id", "depends_on_id")
EVENT_FIELDS = ("issue_id", "event_type", "actor", "detail", "created_at")
Record = dict[str, Any]


def _object(fields: tuple[str, ...]) -> str:
    return "json_object(" + ", ".join(f"'{f}', {f}" for f in fields) + ")"


# SQLite builds each line in C: json_patch onto '{}' drops the null members (RFC 7396) and
# keeps the key order, and its escaping matches json.dumps(ensure_ascii=False,
# separators=(",", ":")) (tests/test_jsonl.py proves both). Export of 10,000 issues stays far
# under its 0.5 s budget.
_ISSUE_LINES = f"SELECT json_patch('{{}}', {_object(ISSUE_FIELDS)}) FROM issues ORDER BY id"
_DEP_LINES = f"SELECT {_object(DEP_FIELDS)} FROM deps ORDER BY issue_id, depends_on_id"
_COMMENT_LINES = f"SELECT {_object(COMMENT_FIELDS)} FROM comments ORDER BY issue_id, created_at, id"


def render(store: Store) -> dict[str, str]:
    """The three files' exact contents, keyed by file name."""
    return {
        name: "".join(row[0] + "\n" for row in store.rows(sql))
        for name, sql in (
            ("issues.jsonl", _ISSUE_LINES),
            ("deps.jsonl", _DEP_LINES),
            ("comments.jsonl", _COMMENT_LINES),
        )
    }


def write_atomically(path: Path, text: str) -> bool:
    """Write via a temp file and rename; skip (return False) when the content is the same."""
    data = text.encode()
    with contextlib.suppress(FileNotFoundError):
        if path.read_bytes() == data:
            return False
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return True


class Summary(NamedTuple):
    """How many records an export or import moved."""

    issues: int
    deps: int
    comments: int
    staged: bool = False
    events_kept: int | None = None

    def to_json(self) -> dict[str, Any]:
        """The JSON object of the output contract."""
        out: dict[str, Any] = {"issues": self.issues, "deps": self.deps, "comments": self.comments}
        if self.events_kept is not None:
            out["events_kept"] = self.events_kept
        else:
            out["staged"] = self.staged
        return out


def export(store: Store, project: Project) -> Summary:
    """Write the three JSONL files of `project` from `store`."""
    project.ensure()
    files = render(store)
    for name, text in files.items():
        write_atomically(Path(project.dir, name), text)
    issues, deps, comments = (files[n].count("\n") for n in files)
    return Summary(issues, deps, comments)


# --- import -----------------------------------------------------------------------------


def _records(
    path: Path, fields: tuple[str, ...], required: tuple[str, ...]
) -> list[tuple[int, Record]]:
    """Parse and shape-check every line of `path` (missing file: no records)."""
    if not path.exists():
        return []
    out: list[tuple[int, Record]] = []
    with path.open("rb") as f:  # decoded per line, so bad bytes are reported with their line
        for number, raw in enumerate(f, start=1):
            where = f"{path.name}:{number}"
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise InvalidData(f"{where}: not UTF-8 text ({e.reason} at byte {e.start})") from e
            if not text.strip():
                continue
            if text.startswith(("<<<<<<<", "=======", ">>>>>>>", "|||||||")):
                raise InvalidData(f"{where}: git merge conflict marker; resolve the conflict first")
            try:
                record = json.loads(text)
            except json.JSONDecodeError as e:
                raise InvalidData(f"{where}: not valid JSON ({e.msg} at column {e.colno})") from e
            if not isinstance(record, dict):
                raise InvalidData(f"{where}: expected a JSON object, got {type(record).__name__}")
            unknown = sorted(set(record) - set(fields))
            if unknown:
                raise InvalidData(f"{where}: unknown field(s) {', '.join(unknown)}")
            missing = [k for k in required if k not in record]
            if missing:
                raise InvalidData(f"{where}: missing field(s) {', '.join(missing)}")
            for key, value in record.items():
                if not isinstance(value, str) or (key in required and not value):
                    raise InvalidData(f"{where}: field {key} must be a non-empty string")
            for key in ("created_at", "updated_at", "closed_at"):
                if key in record:
                    try:
                        parse_timestamp(record[key])
                    except ValueError as e:
                        raise InvalidData(
                            f"{where}: {key} is not an RFC 3339 time: {record[key]!r}"
                        ) from e
            out.append((number, record))
    return out


def _validate(
    project: Project,
) -> tuple[list[Record], list[Record], list[Record]]:
    issues = _records(
        Path(project.issues_jsonl),
        ISSUE_FIELDS,
        ("id", "title", "issue_type", "status", "priority", "created_at", "updated_at"),
    )
    kinds: dict[str, str] = {}
    for number, issue in issues:
        where = f"issues.jsonl:{number}"
        if issue["id"] in kinds:
            raise InvalidData(f"{where}: duplicate id {issue['id']}")
        for key, vocab in (("issue_type", IssueType), ("status", Status), ("priority", Priority)):
            try:
                vocab.parse(issue[key])
            except InvalidArgument as e:
                raise InvalidData(f"{where}: {e}") from e
        kinds[issue["id"]] = issue["issue_type"]
    for number, issue in issues:
        fixes = issue.get("fixes")
        if fixes is not None and kinds.get(fixes) != "bug":
            why = "no such issue" if fixes not in kinds else f"a {kinds[fixes]}, not a bug"
            raise InvalidData(f"issues.jsonl:{number}: fixes {fixes}: {why}")
    deps = _records(Path(project.deps_jsonl), DEP_FIELDS, DEP_FIELDS)
    edges: dict[str, list[str]] = {}
    first_line: dict[tuple[str, str], int] = {}
    for number, dep in deps:
        where = f"deps.jsonl:{number}"
        pair = (dep["issue_id"], dep["depends_on_id"])
        for end in pair:
            if end not in kinds:
                raise InvalidData(f"{where}: dangling reference to {end} (no such issue)")
        if pair[0] == pair[1]:
            raise InvalidData(f"{where}: {pair[0]} depends on itself")
        if pair in first_line:
            raise InvalidData(f"{where}: duplicate of line {first_line[pair]}")
        first_line[pair] = number
        edges.setdefault(pair[0], []).append(pair[1])
    cycles = find_cycles(edges)
    if cycles:
        cycle = cycles[0]
        line = first_line[(cycle[0], cycle[1 % len(cycle)])]
        path = " -> ".join([*cycle, cycle[0]])
        raise InvalidData(f"deps.jsonl:{line}: dependency cycle {path}")
    comments = _records(Path(project.comments_jsonl), COMMENT_FIELDS, COMMENT_FIELDS)
    seen: set[str] = set()
    for number, comment in comments:
        where = f"comments.jsonl:{number}"
        if comment["issue_id"] not in kinds:
            raise InvalidData(
                f"{where}: dangling reference to {comment['issue_id']} (no such issue)"
            )
        if comment["id"] in seen:
            raise InvalidData(f"{where}: duplicate id {comment['id']}")
        seen.add(comment["id"])
    return [r for _, r in issues], [r for _, r in deps], [r for _, r in comments]


def import_(project: Project, *, only_if_absent: bool = False) -> Summary | None:
    """Rebuild `project`'s database from its JSONL files; None when there is nothing to import.

    With `only_if_absent` (the automatic first-use import) the new database is linked into
    place only if none appeared meanwhile, so concurrent first runs cannot clobber each other.
    """
    if not os.path.exists(project.issues_jsonl):
        return None
    issues, deps, comments = _validate(project)
    project.ensure()
    with _locked(project.db) as old:
        ids = {r["id"] for r in issues}
        events = [e for e in _events(old) if e[0] in ids]
        tmp = Path(project.dir, f"db.sqlite.import-{os.getpid()}.tmp")
        tmp.unlink(missing_ok=True)
        try:
            _build(tmp, issues, deps, comments, events)
            if only_if_absent:
                try:
                    os.link(tmp, project.db)
                except FileExistsError:
                    return None
            else:
                os.replace(tmp, project.db)
        finally:
            tmp.unlink(missing_ok=True)
    return Summary(len(issues), len(deps), len(comments), events_kept=len(events))


def _build(
    path: Path,
    issues: list[Record],
    deps: list[Record],
    comments: list[Record],
    events: list[tuple[Any, ...]],
) -> None:
    """Write a complete new database at `path`; issues and comments in creation order.

    sqlite-utils' `insert_all` does the bulk inserts: records go in as the dicts they were
    read as (an omitted field is NULL), in batched multi-row INSERTs, each batch a savepoint
    inside the one write transaction. It is imported here, never at module level: its import
    alone costs about 100 ms, which pn's hot path must not pay.
    """
    import sqlite_utils

    with Store.open(str(path)) as store, store.write() as conn:
        db = sqlite_utils.Database(conn, recursive_triggers=False, execute_plugins=False)
        db.table("issues").insert_all(sorted(issues, key=lambda r: (r["created_at"], r["id"])))
        db.table("deps").insert_all(deps)
        db.table("comments").insert_all(sorted(comments, key=lambda r: (r["created_at"], r["id"])))
        db.table("events").insert_all(dict(zip(EVENT_FIELDS, e, strict=True)) for e in events)


@contextlib.contextmanager
def _locked(db: str) -> Iterator[sqlite3.Connection | None]:
    """Hold the old database's EXCLUSIVE lock until it has been replaced.

    No writer is then half-way through a transaction, and a hot journal left by a crashed
    writer is rolled back into the old file rather than applied to the new one. Yields None
    when there is no old database, or one too damaged to lock: import is how that gets
    repaired."""
    import sqlite3

    if not os.path.exists(db):
        yield None
        return
    conn = sqlite3.connect(db, timeout=5.0, isolation_level=None)
    try:
        try:
            conn.execute("BEGIN EXCLUSIVE")
        except sqlite3.OperationalError as e:
            if "locked" in str(e) or "busy" in str(e):
                raise Busy(f"{db} stayed locked by a writer; import again when it is done") from e
            yield None
            return
        except sqlite3.DatabaseError:
            yield None
            return
        yield conn
    finally:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        conn.close()


def _events(old: sqlite3.Connection | None) -> list[tuple[Any, ...]]:
    """The old database's events, oldest first; none if it has none or cannot be read."""
    import sqlite3

    if old is None:
        return []
    try:
        return old.execute(f"SELECT {', '.join(EVENT_FIELDS)} FROM events ORDER BY seq").fetchall()
    except sqlite3.Error:  # a damaged database loses its history, not the import
        return []
