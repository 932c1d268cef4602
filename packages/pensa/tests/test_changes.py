"""A bundle of field changes, and how an event words what changed."""

from __future__ import annotations

from pensa.changes import NO_CHANGES, NO_SHAPE, Changes, describe, moved
from pensa.models import IssueType, Priority
from pensa.tracker import Tracker


def test_no_changes_keeps_every_field() -> None:
    assert Changes() == NO_CHANGES
    assert NO_CHANGES == (None, None, None, None, None, (), None, NO_SHAPE)
    assert not NO_SHAPE
    assert NO_SHAPE == (None,) * 6


def test_changes_keep_their_own_copy_of_the_labels() -> None:
    given = ["ui"]
    changes = Changes(priority=Priority.P1, labels=given, replace_labels=given)
    given.append("web")
    assert (changes.labels, changes.replace_labels) == (("ui",), ("ui",))


def test_moved_names_labels_added_then_removed() -> None:
    assert moved(("a", "b"), ("b", "c", "d")) == "+c +d -a"
    assert moved(("a",), ("a",)) == ""


def test_describe_says_old_and_new_with_none_for_unset_and_labels_last(
    tracker: Tracker,
) -> None:
    issue = tracker.create("x", issue_type=IssueType.TASK, actor="a", labels=["old"])
    changed = {"title": "y", "description": "d", "labels": '["new"]'}
    detail = describe(issue, changed, ("new",))
    assert detail == "title: x -> y, description: none -> d, labels: +new -old"
    assert describe(issue, {"labels": '["new"]'}, ("new",)) == "labels: +new -old"
    assert describe(issue, {"assignee": None}, issue.labels) == "assignee: none -> none"
