"""Human output: aligned plain text when piped, rich tables on a terminal."""

from __future__ import annotations

import pytest

from pensa.models import Issue, IssueType, Priority, Status
from pensa.render import Output, table


def make(title: str, assignee: str | None = None) -> Issue:
    return Issue(
        "pn-0000000a",
        title,
        None,
        IssueType.TASK,
        Status.OPEN,
        Priority.P0,
        None,
        None,
        assignee,
        "c",
        "u",
        None,
        None,
    )


def test_plain_table_aligns_columns_without_trailing_spaces() -> None:
    text = table([("a", "bb", ""), ("ccc", "d", "e")])
    assert text.splitlines() == ["a    bb", "ccc  d   e"]


def test_color_output_uses_rich(capsys: pytest.CaptureFixture[str]) -> None:
    Output(as_json=False, color=True).issues([make("[not markup]", "ann")])
    out = capsys.readouterr().out
    assert "[not markup]" in out
    assert "@ann" in out
    assert "pri" in out


def test_json_wins_over_color(capsys: pytest.CaptureFixture[str]) -> None:
    Output(as_json=True, color=True).issue(None)
    assert capsys.readouterr().out == "null\n"
