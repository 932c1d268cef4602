"""Pensa's values: closed vocabularies as StrEnums and records as frozen dataclasses."""

from __future__ import annotations

import functools
from datetime import UTC, datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any, NamedTuple, Self

from pensa.errors import InvalidArgument

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

# Agents upstream guessed these words; a near miss names the right one (springfield notes §5).
_SYNONYMS: dict[str, str] = {
    "in-progress": "in_progress",
    "inprogress": "in_progress",
    "in progress": "in_progress",
    "progress": "in_progress",
    "claimed": "in_progress",
    "started": "in_progress",
    "doing": "in_progress",
    "wip": "in_progress",
    "active": "in_progress",
    "done": "closed",
    "close": "closed",
    "resolved": "closed",
    "complete": "closed",
    "completed": "closed",
    "fixed": "closed",
    "todo": "open",
    "new": "open",
    "opened": "open",
    "critical": "p0",
    "urgent": "p0",
    "high": "p1",
    "normal": "p2",
    "medium": "p2",
    "low": "p3",
    "story": "feature",
    "milestone": "epic",
    "research": "spike",
    "investigation": "spike",
    "subtask": "task",
    "defect": "bug",
    "issue": "bug",
    "tests": "test",
    "docs": "chore",
    "refactor": "chore",
    "maintenance": "chore",
}


class Vocabulary(StrEnum):
    """A closed set of words; `parse` rejects anything else, naming the allowed values."""

    @classmethod
    def kind(cls) -> str:
        """How the vocabulary is called in messages."""
        return cls.__name__.lower()

    @classmethod
    def allowed(cls) -> str:
        """The allowed values, comma separated."""
        return ", ".join(m.value for m in cls)

    @classmethod
    def suggest(cls, text: str) -> str | None:
        """The value the user most likely meant, if any."""
        folded = text.strip().lower()
        values = [m.value for m in cls]
        for candidate in (folded, folded.replace("-", "_").replace(" ", "_")):
            if candidate in values:
                return candidate
        if folded.isdigit() and f"p{folded}" in values:
            return f"p{folded}"
        synonym = _SYNONYMS.get(folded)
        if synonym in values:
            return synonym
        import difflib

        close = difflib.get_close_matches(folded, values, n=1, cutoff=0.6)
        return close[0] if close else None

    @classmethod
    def fold(cls, text: str) -> str:
        """`text` as a member would spell it when it differs only in case or outer spaces."""
        return text.strip().lower()

    @classmethod
    def parse(cls, text: str, *, exact: bool = False) -> Self:
        """The member `text` names, forgiving case (`Bug`, `IN_PROGRESS`) unless `exact`;
        else raise InvalidArgument with a hint. Output always uses the canonical spelling."""
        try:
            return cls(text)
        except ValueError:
            pass
        if not exact:
            member = cls._value2member_map_.get(cls.fold(text))
            if member is not None:
                return member  # type: ignore[return-value]  # the map holds members of cls
        hint = cls.suggest(text)
        did_you_mean = f" (did you mean '{hint}'?)" if hint else ""
        raise InvalidArgument(
            f"invalid {cls.kind()} '{text}'{did_you_mean}; allowed: {cls.allowed()}"
        )


class IssueType(Vocabulary):
    """What an issue is (fixed at creation): an epic (a big outcome) or a feature (a slice of
    it) holds children; a task, test, chore or spike (resolve an unknown) is work; a bug is
    a problem report that tasks fix."""

    EPIC = "epic"
    FEATURE = "feature"
    TASK = "task"
    BUG = "bug"
    SPIKE = "spike"
    TEST = "test"
    CHORE = "chore"

    @classmethod
    def kind(cls) -> str:
        """How the vocabulary is called in messages."""
        return "issue type"


class Size(Vocabulary):
    """How big a piece of work is: small, medium or large (a large one wants splitting)."""

    S = "S"
    M = "M"
    L = "L"

    @classmethod
    def fold(cls, text: str) -> str:
        """`s`, `S` and ` s ` all name S."""
        return text.strip().upper()


class LinkKind(Vocabulary):
    """How two issues are joined: `blocks` (a dependency: the issue waits for the other),
    `parent` (the other is its epic or feature, which waits for its children) or
    `discovered-from` (found while working on the other; waits for nothing)."""

    BLOCKS = "blocks"
    PARENT = "parent"
    DISCOVERED_FROM = "discovered-from"

    @classmethod
    def kind(cls) -> str:
        """How the vocabulary is called in messages."""
        return "link kind"

    @classmethod
    def fold(cls, text: str) -> str:
        """beads' names (`parent-child`) and underscores (`discovered_from`) name the kinds."""
        folded = text.strip().lower().replace("_", "-")
        return "parent" if folded == "parent-child" else folded


class Status(Vocabulary):
    """Where an issue is in its life."""

    OPEN = "open"
    IN_PROGRESS = "in_progress"
    CLOSED = "closed"


class Priority(Vocabulary):
    """How urgent: p0 most, p3 least."""

    P0 = "p0"
    P1 = "p1"
    P2 = "p2"
    P3 = "p3"

    @classmethod
    def fold(cls, text: str) -> str:
        """`1`, `P1` and `p1` all name p1 (beads and most trackers write `P1` or `1`)."""
        folded = text.strip().lower()
        return f"p{folded}" if folded.isdigit() else folded


# Plain dict lookups: calling the enum class per row costs a measurable share of `pn ready`.
_TYPES = {m.value: m for m in IssueType}
_STATUSES = {m.value: m for m in Status}
_PRIORITIES = {m.value: m for m in Priority}
_SIZES = {m.value: m for m in Size}


def timestamp(moment: datetime) -> str:
    """RFC 3339 UTC with microseconds and a `Z`: sortable as text, unique enough to order."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_timestamp(text: str) -> datetime:
    """Read a timestamp written by `timestamp` (or any RFC 3339 `Z` form)."""
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def utcnow() -> datetime:
    """The real clock; tests inject their own."""
    return datetime.now(UTC)


ISSUE_FIELDS = (
    "id",
    "title",
    "description",
    "issue_type",
    "status",
    "priority",
    "spec",
    "fixes",
    "assignee",
    "created_at",
    "updated_at",
    "closed_at",
    "close_reason",
    "labels",
    "parent",
    "discovered_from",
    "size",
    "objective",
    "artifact",
    "verify",
)
# Fields whose value is a list (stored as a JSON array in one column, `[]` in the contract).
# Labels are a set (kept sorted); the verify commands keep their order.
LIST_FIELDS = frozenset({"labels", "verify"})


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


# Functional form on purpose: the class form compiles every (string) annotation at
# import, start-up that every `pn` run would pay.
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
        """Build from a row selected with `store.ISSUE_COLUMNS`."""
        return cls(
            row[0],
            row[1],
            row[2],
            _TYPES[row[3]],
            _STATUSES[row[4]],
            _PRIORITIES[row[5]],
            row[6],
            row[7],
            row[8],
            row[9],
            row[10],
            row[11],
            row[12],
            decode_labels(row[13]),
            row[14],
            row[15],
            None if row[16] is None else _SIZES[row[16]],
            row[17],
            row[18],
            decode_labels(row[19]),
        )

    def to_json(self) -> dict[str, Any]:
        """The JSON object: every key, in contract order, `None` for unset."""
        return {
            "id": self.id,
            "title": self.title,
            "description": self.description,
            "issue_type": self.issue_type.value,
            "status": self.status.value,
            "priority": self.priority.value,
            "spec": self.spec,
            "fixes": self.fixes,
            "assignee": self.assignee,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "closed_at": self.closed_at,
            "close_reason": self.close_reason,
            "labels": list(self.labels),
            "parent": self.parent,
            "discovered_from": self.discovered_from,
            "size": None if self.size is None else self.size.value,
            "objective": self.objective,
            "artifact": self.artifact,
            "verify": list(self.verify),
        }

    def is_ready_type(self) -> bool:
        """Bugs are problem reports, never work items (design: "Bugs are never ready")."""
        return self.issue_type is not IssueType.BUG

    def has_contract(self) -> bool:
        """Whether the issue says how to check it is done (at least one verify command)."""
        return bool(self.verify)


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
