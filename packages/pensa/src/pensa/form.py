"""`pn edit`'s text form: an issue as a few `field: value` lines and a free description.

Only what a person edits is in it (title, priority, labels, description); the type is named
in the header because it is fixed at creation. Parsing is strict and says which line is
wrong, so a typo never silently changes a field.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from pensa.errors import InvalidArgument
from pensa.models import Priority, clean_labels

if TYPE_CHECKING:
    from pensa.models import Issue

FIELDS = ("title", "priority", "labels")
DESCRIPTION = "description:"


class Form(NamedTuple):
    """The values a form holds."""

    title: str
    priority: Priority
    labels: tuple[str, ...]
    description: str | None

    @classmethod
    def of(cls, issue: Issue) -> Form:
        """The form of an issue as it is."""
        return cls(issue.title, issue.priority, issue.labels, issue.description)

    def changes(self, before: Form) -> dict[str, object]:
        """The fields that differ from `before`, by name."""
        return {k: v for k, v in self._asdict().items() if getattr(before, k) != v}


def render(issue: Issue) -> str:
    """The form for `issue`, ready for an editor."""
    return "\n".join(
        [
            f"# pn edit {issue.id}: a {issue.issue_type.value} (the type is fixed at creation).",
            "# Change the fields, save and quit; quit without saving to change nothing.",
            "# Lines starting with # are ignored above `description:`; below it, every line",
            "# is the description (leave it empty to clear it).",
            f"title: {issue.title}",
            f"priority: {issue.priority.value}",
            f"labels: {', '.join(issue.labels)}",
            "",
            DESCRIPTION,
            issue.description or "",
        ]
    )


def parse(text: str) -> Form:
    """The values of an edited form; InvalidArgument naming the line that is wrong."""
    values: dict[str, str] = {}
    lines = text.splitlines()
    description: list[str] | None = None
    for number, line in enumerate(lines, start=1):
        if line.strip() == DESCRIPTION:
            description = lines[number:]
            break
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, sep, value = line.partition(":")
        key = key.strip().lower()
        if not sep or key not in FIELDS:
            raise InvalidArgument(
                f"line {number}: expected `title:`, `priority:`, `labels:` or "
                f"`description:`, got {line.strip()[:40]!r}"
            )
        if key in values:
            raise InvalidArgument(f"line {number}: `{key}:` appears twice")
        values[key] = value.strip()
    if description is None:
        raise InvalidArgument("the form lost its `description:` line; nothing was changed")
    missing = [k for k in FIELDS if k not in values]
    if missing:
        raise InvalidArgument(f"the form lost its `{missing[0]}:` line; nothing was changed")
    if not values["title"]:
        raise InvalidArgument("the title is empty; give the issue a short description")
    body = "\n".join(description).strip("\n")
    return Form(
        values["title"],
        Priority.parse(values["priority"]),
        clean_labels(x for x in values["labels"].split(",") if x.strip()),
        body or None,
    )
