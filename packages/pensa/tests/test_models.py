"""Vocabularies reject near misses with the right word; records keep the contract order."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from pensa.errors import InvalidArgument
from pensa.models import (
    ISSUE_FIELDS,
    Issue,
    IssueType,
    Priority,
    Size,
    Status,
    parse_timestamp,
    timestamp,
)


@pytest.mark.parametrize(
    ("vocab", "text", "hint"),
    [
        (Status, "in-progress", "in_progress"),
        (Status, "In Progress", "in_progress"),
        (Status, "done", "closed"),
        (Status, "todo", "open"),
        (Priority, "high", "p1"),
        (Priority, "urgent", "p0"),
        (Priority, "critical", "p0"),
        (IssueType, "story", "feature"),
        (IssueType, "featur", "feature"),
        (IssueType, "tests", "test"),
        (IssueType, "chores", "chore"),
    ],
)
def test_near_misses_are_rejected_with_the_right_word(
    vocab: type[Status | Priority | IssueType], text: str, hint: str
) -> None:
    with pytest.raises(InvalidArgument) as raised:
        vocab.parse(text)
    message = str(raised.value)
    assert f"did you mean '{hint}'?" in message
    assert f"allowed: {vocab.allowed()}" in message


def test_unrelated_words_get_no_hint() -> None:
    with pytest.raises(InvalidArgument, match=r"^invalid status 'zzz'; allowed: open, "):
        Status.parse("zzz")


@pytest.mark.parametrize(
    ("vocab", "text", "member"),
    [
        (Priority, "1", Priority.P1),
        (Priority, "P1", Priority.P1),
        (Priority, " p3 ", Priority.P3),
        (IssueType, "Bug", IssueType.BUG),
        (IssueType, "CHORE", IssueType.CHORE),
        (Status, "IN_PROGRESS", Status.IN_PROGRESS),
        (Status, "Closed", Status.CLOSED),
    ],
)
def test_people_may_type_priorities_as_digits_and_any_word_in_any_case(
    vocab: type[Status | Priority | IssueType], text: str, member: Status | Priority | IssueType
) -> None:
    assert vocab.parse(text) is member


@pytest.mark.parametrize(("vocab", "text"), [(Priority, "P1"), (Priority, "1"), (IssueType, "Bug")])
def test_exact_parsing_for_files_refuses_other_spellings(
    vocab: type[Status | Priority | IssueType], text: str
) -> None:
    with pytest.raises(InvalidArgument, match="did you mean"):
        vocab.parse(text, exact=True)


def test_exact_values_parse() -> None:
    assert Status.parse("in_progress") is Status.IN_PROGRESS
    assert IssueType.parse("bug") is IssueType.BUG


def test_timestamps_are_utc_z_with_microseconds_and_round_trip() -> None:
    moment = datetime(2026, 3, 2, 22, 41, 5, 123456, tzinfo=UTC)
    text = timestamp(moment)
    assert text == "2026-03-02T22:41:05.123456Z"
    assert parse_timestamp(text) == moment
    assert parse_timestamp("2026-03-02T22:41:05Z") == moment.replace(microsecond=0)


def test_issue_json_keys_follow_the_contract() -> None:
    row = ("pn-1", "t", None, "task", "open", "p2", None, None, None, "c", "u", None, None, None)
    row += (None, None, "L", None, None, '["make"]')
    issue = Issue.from_row(row)
    assert tuple(issue.to_json()) == ISSUE_FIELDS
    assert issue.issue_type is IssueType.TASK
    assert (issue.size, issue.verify) == (Size.L, ("make",))
    assert issue.is_ready_type()
