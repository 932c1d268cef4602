"""Pensa's values: records as named tuples, and the closed vocabularies (`pensa.vocabulary`,
re-exported here) they are made of."""

from __future__ import annotations

import functools
import types
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, NamedTuple, get_args, get_origin

from pensa.errors import InvalidArgument
from pensa.vocabulary import IssueType as IssueType
from pensa.vocabulary import LinkKind as LinkKind
from pensa.vocabulary import Priority as Priority
from pensa.vocabulary import Size as Size
from pensa.vocabulary import Status as Status
from pensa.vocabulary import Vocabulary as Vocabulary

if TYPE_CHECKING:
    from collections.abc import Iterable


def timestamp(moment: datetime) -> str:
    """RFC 3339 UTC with microseconds and a `Z`: sortable as text, unique enough to order."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_timestamp(text: str) -> datetime:
    """Read a timestamp written by `timestamp` (or any RFC 3339 `Z` form)."""
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def utcnow() -> datetime:
    """The real clock; tests inject their own."""
    return datetime.now(UTC)


def clean_labels(labels: Iterable[str]) -> tuple[str, ...]:
    """Labels sorted and without duplicates; each trimmed, non-empty and free of commas
    (the `pn edit` form lists them comma separated) and of line breaks."""
    cleaned = set()
    for label in labels:
        text = label.strip()
        if not text or "," in text or any(c in text for c in "\r\n"):
            raise InvalidArgument(
                f"invalid label {label!r}: a label is a non-empty word without commas"
            )
        cleaned.add(text)
    return tuple(sorted(cleaned))


def encode_labels(labels: Iterable[str] | None) -> str | None:
    """The `labels` column: a sorted JSON array, or NULL for none."""
    if not labels:
        return None
    return _labels_encoder()(sorted(set(labels)))


@functools.cache
def _labels_encoder() -> Callable[[object], str]:
    """`json.dumps(..., ensure_ascii=False, separators=(",", ":"))`, its encoder built once:
    `dumps` builds one per call with these arguments, once per row when `pn import`
    writes every issue's labels."""
    import json

    return json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def decode_labels(column: str | None) -> tuple[str, ...]:
    """The labels stored in the `labels` column (or the commands in `verify`)."""
    if not column:
        return ()
    import json

    return tuple(json.loads(column))


def clean_commands(commands: Iterable[str]) -> tuple[str, ...]:
    """Verify commands in their order, each trimmed, non-empty and one line (each is run on
    its own by a check step)."""
    cleaned = []
    for command in commands:
        text = command.strip()
        if not text or any(c in text for c in "\r\n"):
            raise InvalidArgument(
                f"invalid verify command {command!r}: give one non-empty shell command per --verify"
            )
        cleaned.append(text)
    return tuple(cleaned)


def encode_list(field: str, values: Iterable[str] | None) -> str | None:
    """A list column: `labels` as `encode_labels`, `verify` as a JSON array in its order;
    NULL for none."""
    if field == "labels":
        return encode_labels(values)
    if not values:
        return None
    return _labels_encoder()(list(values))


# An issue's fields, declared once, in the JSON contract's key order (also the committed
# files' and the `issues` table's): its columns (`ISSUE_COLUMNS`), reading a row and the JSON
# all come from this. Functional form on purpose: the class form compiles every (string)
# annotation at import, start-up that every `pn` run would pay.
_IssueFields = NamedTuple(  # noqa: UP014
    "_IssueFields",
    [
        ("id", str),
        ("title", str),
        ("description", str | None),
        ("issue_type", IssueType),
        ("status", Status),
        ("priority", Priority),
        ("spec", str | None),
        ("fixes", str | None),
        ("assignee", str | None),
        ("created_at", str),
        ("updated_at", str),
        ("closed_at", str | None),
        ("close_reason", str | None),
        ("labels", tuple[str, ...]),
        ("parent", str | None),
        ("discovered_from", str | None),
        ("size", Size | None),
        ("objective", str | None),
        ("artifact", str | None),
        ("verify", tuple[str, ...]),
    ],
)


class Issue(_IssueFields):
    """One issue, exactly the columns of the JSON contract in its key order."""

    __slots__ = ()

    @classmethod
    def from_row(cls, row: tuple[Any, ...]) -> Issue:
        """Build from a row selected with `ISSUE_COLUMNS`."""
        return cls._make(
            value if read is None else read(value) for read, value in zip(_READ, row, strict=True)
        )

    def to_json(self) -> dict[str, Any]:
        """The JSON object: every key, in contract order, `None` for unset."""
        return {name: _json_value(value) for name, value in zip(ISSUE_FIELDS, self, strict=True)}

    def is_ready_type(self) -> bool:
        """Bugs are problem reports, never work items (design: "Bugs are never ready")."""
        return self.issue_type is not IssueType.BUG

    def has_contract(self) -> bool:
        """Whether the issue says how to check it is done (at least one verify command)."""
        return bool(self.verify)


ISSUE_FIELDS: tuple[str, ...] = _IssueFields._fields
ISSUE_COLUMNS = ", ".join(ISSUE_FIELDS)


def _reader(kind: object) -> Callable[[Any], Any] | None:
    """How a column becomes a field of type `kind`: as is (None), a vocabulary's member by its
    value (NULL stays None), or a list from its JSON array (NULL is the empty list)."""
    if isinstance(kind, types.UnionType):  # `X | None`
        (kind,) = [k for k in get_args(kind) if k is not type(None)]
    if isinstance(kind, type) and issubclass(kind, Vocabulary):
        members: dict[str | None, Vocabulary | None] = {m.value: m for m in kind}
        members[None] = None
        return members.__getitem__
    return decode_labels if get_origin(kind) is tuple else None


_READ = tuple(_reader(kind) for kind in _IssueFields.__annotations__.values())
# Fields whose value is a list (stored as a JSON array in one column, `[]` in the contract).
# Labels are a set (kept sorted); the verify commands keep their order.
LIST_FIELDS = frozenset(
    n for n, read in zip(ISSUE_FIELDS, _READ, strict=True) if read is decode_labels
)


def _json_value(value: object) -> object:
    """A field's JSON value: a vocabulary's word, a list for a tuple, else the value itself."""
    if isinstance(value, Vocabulary):
        return value.value
    return list(value) if isinstance(value, tuple) else value


# Functional form on purpose: the class form compiles every (string) annotation at
# import, start-up that every `pn` run would pay.
_CommentFields = NamedTuple(  # noqa: UP014
    "_CommentFields",
    [
        ("id", str),
        ("issue_id", str),
        ("actor", str),
        ("text", str),
        ("created_at", str),
    ],
)


class Comment(_CommentFields):
    """A note on an issue."""

    __slots__ = ()

    def to_json(self) -> dict[str, str]:
        """The JSON object of the output contract."""
        return {
            "id": self.id,
            "issue_id": self.issue_id,
            "actor": self.actor,
            "text": self.text,
            "created_at": self.created_at,
        }


# Functional form on purpose: the class form compiles every (string) annotation at
# import, start-up that every `pn` run would pay.
_EventFields = NamedTuple(  # noqa: UP014
    "_EventFields",
    [
        ("issue_id", str),
        ("event_type", str),
        ("actor", str | None),
        ("detail", str | None),
        ("created_at", str),
    ],
)


class Event(_EventFields):
    """One audit-log entry (`history`)."""

    __slots__ = ()

    def to_json(self) -> dict[str, str | None]:
        """The JSON object of the output contract."""
        return {
            "event_type": self.event_type,
            "actor": self.actor,
            "detail": self.detail,
            "created_at": self.created_at,
        }


# Functional form on purpose: the class form compiles every (string) annotation at
# import, start-up that every `pn` run would pay.
_IssueDetailFields = NamedTuple(  # noqa: UP014
    "_IssueDetailFields",
    [
        ("issue", Issue),
        ("deps", tuple[Issue, ...]),
        ("dependents", tuple[Issue, ...]),
        ("comments", tuple[Comment, ...]),
        ("fixed_by", tuple[Issue, ...]),
        ("parent", Issue | None),
        ("children", tuple[Issue, ...]),
    ],
)


class IssueDetail(_IssueDetailFields):
    """`show`: an issue with what it depends on, what depends on it, its children and its
    comments; for a bug also the issues whose `fixes` name it, and for a child its parent
    (shown to people; the JSON contract has the parent's id in `parent`, and `pn list --all`
    finds fixes by their `fixes` field)."""

    __slots__ = ()

    def to_json(self) -> dict[str, Any]:
        """The JSON object of the output contract."""
        return {
            **self.issue.to_json(),
            "deps": [d.to_json() for d in self.deps],
            "dependents": [d.to_json() for d in self.dependents],
            "children": [c.to_json() for c in self.children],
            "comments": [c.to_json() for c in self.comments],
        }
