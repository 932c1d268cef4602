"""A bundle of field changes to one issue, how it is checked and written, and how an event
words what changed.

`Tracker.update`, `claim` and `release` each decide status and assignee by their own rule;
the other fields travel in a `Changes`, so `pn update ID --claim -p p1` is one claim, one
transaction and one event rather than a claim followed by an update.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from pensa.errors import InvalidArgument
from pensa.models import (
    IssueType,
    Priority,
    Size,
    clean_commands,
    clean_labels,
    encode_labels,
    encode_list,
)
from pensa.store import fetch_issue, get, log_event, resolve, set_fields

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Mapping, Sequence

    from pensa.models import Issue

# Functional form on purpose: the class form compiles every (string) annotation at
# import, start-up that every `pn` run would pay.
_ShapeFields = NamedTuple(  # noqa: UP014
    "_ShapeFields",
    [
        ("parent", str | None),
        ("discovered_from", str | None),
        ("size", str | None),
        ("objective", str | None),
        ("artifact", str | None),
        ("verify", tuple[str, ...] | None),
    ],
)


class Shape(_ShapeFields):
    """Where an issue sits and its Ready Contract: None keeps a field, empty text (an empty
    `verify`) clears it. `parent` and `discovered_from` are ids as typed; `size` S, M or L."""

    __slots__ = ()

    def __new__(
        cls,
        parent: str | None = None,
        discovered_from: str | None = None,
        size: str | None = None,
        objective: str | None = None,
        artifact: str | None = None,
        verify: Sequence[str] | None = None,
    ) -> Shape:
        commands = None if verify is None else tuple(verify)
        return super().__new__(cls, parent, discovered_from, size, objective, artifact, commands)

    def __bool__(self) -> bool:
        return any(v is not None for v in self)


NO_SHAPE = Shape()

_ChangesFields = NamedTuple(  # noqa: UP014
    "_ChangesFields",
    [
        ("title", str | None),
        ("priority", Priority | None),
        ("description", str | None),
        ("spec", str | None),
        ("fixes", str | None),
        ("labels", tuple[str, ...]),
        ("replace_labels", tuple[str, ...] | None),
        ("shape", Shape),
    ],
)


class Changes(_ChangesFields):
    """Fields to change: None keeps a field, empty text clears it; `labels` are added, and
    `replace_labels` (`pn edit`), when given, become the whole set before that; `shape`
    changes the links, size and contract."""

    __slots__ = ()

    def __new__(
        cls,
        title: str | None = None,
        priority: Priority | None = None,
        description: str | None = None,
        spec: str | None = None,
        fixes: str | None = None,
        labels: Sequence[str] = (),
        replace_labels: Sequence[str] | None = None,
        shape: Shape = NO_SHAPE,
    ) -> Changes:
        replaced = None if replace_labels is None else tuple(replace_labels)
        return super().__new__(
            cls, title, priority, description, spec, fixes, tuple(labels), replaced, shape
        )


NO_CHANGES = Changes()


def describe(issue: Issue, changed: Mapping[str, str | None], labels: Sequence[str]) -> str:
    """An event's detail: `field: old -> new` for each changed column, then the labels
    as `labels: +added -removed` when they changed to `labels`."""
    parts = [
        f"{name}: {_shown(getattr(issue, name))} -> {_shown(_stored(name, value))}"
        for name, value in changed.items()
        if name != "labels"
    ]
    if "labels" in changed:
        parts.append(f"labels: {moved(issue.labels, labels)}")
    return ", ".join(parts)


def _stored(name: str, value: str | None) -> object:
    """A column's value as the issue holds it: the verify commands are a JSON array there."""
    if name == "verify":
        from pensa.models import decode_labels

        return decode_labels(value)
    return value


def moved(old: Sequence[str], new: Sequence[str]) -> str:
    """The labels added and removed between two sets, as events say it: `+x +y -z`."""
    return " ".join(
        [*(f"+{x}" for x in new if x not in old), *(f"-{x}" for x in old if x not in new)]
    )


def _shown(value: object) -> str:
    """A field's value in an event's detail: `none` for unset, never Python's `None`; the
    verify commands one after another."""
    if value is None or value == ():
        return "none"
    if isinstance(value, tuple):
        return "; ".join(value)
    return str(value)


# --- writing changes to an issue, inside the caller's transaction ---------------------------


def check_fixes(conn: sqlite3.Connection, bug_id: str) -> str:
    bug_id = resolve(conn, bug_id, flag="--fixes")
    target = fetch_issue(conn, bug_id)
    assert target is not None  # resolved inside this transaction
    if target[3] != IssueType.BUG:
        raise InvalidArgument(f"--fixes must name a bug; {bug_id} is a {target[3]}")
    return bug_id


def clean_title(title: str) -> str:
    if not title.strip():
        raise InvalidArgument("the title is empty; give the issue a short description")
    return title.strip()


def columns_of(conn: sqlite3.Connection, changes: Changes, issue_id: str) -> dict[str, str | None]:
    """The columns `changes` sets, as stored; refuses an empty title, a `fixes` that names
    no bug, and a parent that would close a cycle (`pensa.links`)."""
    columns: dict[str, str | None] = {}
    if changes.title is not None:
        columns["title"] = clean_title(changes.title)
    if changes.priority is not None:
        columns["priority"] = changes.priority.value
    if changes.description is not None:
        columns["description"] = changes.description or None
    if changes.spec is not None:
        columns["spec"] = changes.spec or None
    if changes.fixes is not None:
        columns["fixes"] = check_fixes(conn, changes.fixes) if changes.fixes else None
    if changes.shape:
        columns.update(shape_columns(conn, issue_id, changes.shape))
    return columns


def write_changes(
    conn: sqlite3.Connection,
    issue: Issue,
    columns: dict[str, str | None],
    changes: Changes,
    *,
    event: str,
    actor: str,
    now: str,
) -> Issue:
    """Write the columns and labels that differ from `issue`, with one event saying what
    changed; the issue as it is now. When nothing differs, nothing is written or logged."""
    changed = {name: value for name, value in columns.items() if held(issue, name) != value}
    kept = issue.labels if changes.replace_labels is None else changes.replace_labels
    labels = clean_labels([*kept, *changes.labels])
    if labels != issue.labels:
        changed["labels"] = encode_labels(labels)
    if not changed:
        return issue
    set_fields(conn, issue.id, changed, now)
    detail = describe(issue, changed, labels)
    log_event(conn, issue.id, event, actor=actor, detail=detail, at=now)
    return get(conn, issue.id)


def held(issue: Issue, name: str) -> object:
    """The issue's value of column `name` as the column stores it."""
    value = getattr(issue, name)
    return encode_list(name, value) if name == "verify" else value


def shape_columns(
    conn: sqlite3.Connection, issue_id: str | None, shape: Shape
) -> dict[str, str | None]:
    """The columns `shape` sets, as stored, checked inside the caller's transaction
    (`issue_id` None: an issue being created)."""
    from pensa.links import FIELDS, check_link

    columns: dict[str, str | None] = {}
    for kind, field in FIELDS.items():
        text = getattr(shape, field)
        if text is not None:
            columns[field] = check_link(conn, kind, issue_id, text) if text else None
    if shape.size is not None:
        columns["size"] = Size.parse(shape.size).value if shape.size else None
    for field in ("objective", "artifact"):
        text = getattr(shape, field)
        if text is not None:
            columns[field] = text.strip() or None
    if shape.verify is not None:
        columns["verify"] = encode_list("verify", clean_commands(shape.verify))
    return columns
