"""Pensa's closed vocabularies: each a StrEnum whose `parse` forgives case and near misses,
naming the word meant (`pensa.models` holds the records and re-exports these)."""

from __future__ import annotations

from enum import StrEnum
from typing import Self

from pensa.errors import InvalidArgument

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
