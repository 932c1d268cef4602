"""A bundle of field changes to one issue, and how an event words what changed.

`Tracker.update`, `claim` and `release` each decide status and assignee by their own rule;
the other fields travel in a `Changes`, so `pn update ID --claim -p p1` is one claim, one
transaction and one event rather than a claim followed by an update.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from pensa.models import Priority

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from pensa.models import Issue

# Functional form on purpose: the class form compiles every (string) annotation at
# import, start-up that every `pn` run would pay.
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
    ],
)


class Changes(_ChangesFields):
    """Fields to change: None keeps a field, empty text clears it; `labels` are added, and
    `replace_labels` (`pn edit`), when given, become the whole set before that."""

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
    ) -> Changes:
        replaced = None if replace_labels is None else tuple(replace_labels)
        return super().__new__(
            cls, title, priority, description, spec, fixes, tuple(labels), replaced
        )


NO_CHANGES = Changes()


def describe(issue: Issue, changed: Mapping[str, str | None], labels: Sequence[str]) -> str:
    """An event's detail: `field: old -> new` for each changed column, then the labels
    as `labels: +added -removed` when they changed to `labels`."""
    parts = [
        f"{name}: {_shown(getattr(issue, name))} -> {_shown(value)}"
        for name, value in changed.items()
        if name != "labels"
    ]
    if "labels" in changed:
        parts.append(f"labels: {moved(issue.labels, labels)}")
    return ", ".join(parts)


def moved(old: Sequence[str], new: Sequence[str]) -> str:
    """The labels added and removed between two sets, as events say it: `+x +y -z`."""
    return " ".join(
        [*(f"+{x}" for x in new if x not in old), *(f"-{x}" for x in old if x not in new)]
    )


def _shown(value: object) -> str:
    """A field's value in an event's detail: `none` for unset, never Python's `None`."""
    return "none" if value is None else str(value)
