"""Following the user's terminal size: each change is applied once, and retried until it lands."""

from __future__ import annotations

import pytest

from ralph import terminal


def test_a_size_change_is_applied_once_and_retried_until_it_lands(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sizes = iter([(30, 100), (30, 100), (50, 132), (50, 132), (50, 132), (50, 132)])
    monkeypatch.setattr(terminal, "size", lambda: next(sizes))
    applied: list[tuple[int, int]] = []
    answers = iter([False, True])

    def apply(rows: int, columns: int) -> bool:
        applied.append((rows, columns))
        return next(answers)

    follow = terminal.SizeFollower(apply)  # the size at the start is the container's own
    for _ in range(5):
        follow()
    assert applied == [(50, 132), (50, 132)]  # refused while not running, then applied once


def test_no_terminal_means_nothing_to_follow(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(terminal, "size", lambda: None)
    follow = terminal.SizeFollower(lambda rows, columns: pytest.fail("nothing to apply"))
    follow()
