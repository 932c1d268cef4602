"""The pensa picture of `sgf top`: parsed from pn's JSON, asked again only when pensa changed."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

import pytest

from sgf.loop.loopstate import Task
from sgf.top import board
from sgf.top.board import Board, Boards, Claim

from ..conftest import pn

TODAY = date(2026, 3, 1)
STATUS = {"open": 4, "in_progress": 2, "ready": 3, "blocked": 1, "needs_human": 1}


def test_board_counts_claims_by_whom_and_what_closed_today() -> None:
    working = [
        {"id": "pn-1", "title": "login", "assignee": "build-auth-20260301T100000"},
        {"id": "pn-2", "title": "logout", "assignee": None},
        "garbage",
    ]
    closed = [
        {"id": "pn-3", "title": "today", "closed_at": "2026-03-01T12:00:00+00:00"},
        {"id": "pn-4", "title": "yesterday", "closed_at": "2026-02-20T12:00:00Z"},
        {"id": "pn-5", "title": "never", "closed_at": None},
    ]
    b = Board.from_json(STATUS, working, closed, TODAY)
    assert (b.ready, b.blocked, b.needs_human, b.open) == (3, 1, 1, 4)
    assert b.working == (
        Claim("pn-1", "login", "build-auth-20260301T100000"),
        Claim("pn-2", "logout", "?"),
    )
    assert b.closed_today == (Task("pn-3", "today"),)
    assert b.held() == {
        "build-auth-20260301T100000": Task("pn-1", "login"),
        "?": Task("pn-2", "logout"),
    }


def test_ill_typed_counts_are_zero() -> None:
    b = Board.from_json({"ready": "3", "blocked": True}, [], [], TODAY)
    assert (b.ready, b.blocked) == (0, 0)


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_boards_ask_pn_again_only_when_pensa_changed_and_at_most_once_a_second(
    tmp_path: Path,
) -> None:
    (tmp_path / ".pensa").mkdir()
    db = tmp_path / ".pensa" / "db.sqlite"
    db.write_text("1")
    asked: list[Path] = []

    def reader(root: Path, env: Any, *, today: date) -> Board:
        asked.append(root)
        return Board(ready=len(asked))

    clock = Clock()
    day = [TODAY]
    boards = Boards({}, clock=clock, reader=reader, max_age=30, today=lambda: day[0])
    assert boards.get(tmp_path).ready == 1
    db.write_text("22")
    clock.t += 0.5
    assert boards.get(tmp_path).ready == 1  # changed, but asked under a second ago
    clock.t += 0.6
    assert boards.get(tmp_path).ready == 2
    clock.t += 5
    assert boards.get(tmp_path).ready == 2  # unchanged: no pn
    clock.t += 30
    assert boards.get(tmp_path).ready == 3  # too old: asked again
    clock.t += 2
    day[0] = date(2026, 3, 2)
    assert boards.get(tmp_path).ready == 4  # a new day: "closed today" starts again


def test_boards_ask_pn_again_when_a_pull_changed_one_shard_of_the_tracker(
    tmp_path: Path,
) -> None:
    (tmp_path / ".pensa").mkdir()
    (tmp_path / ".pensa" / "db.sqlite").write_text("1")
    shard = tmp_path / ".pensa" / "issues-7.jsonl"
    shard.write_text("")
    asked: list[Path] = []

    def reader(root: Path, env: Any, *, today: date) -> Board:
        asked.append(root)
        return Board(ready=len(asked))

    clock = Clock()
    boards = Boards({}, clock=clock, reader=reader, max_age=300, today=lambda: TODAY)
    assert boards.get(tmp_path).ready == 1
    clock.t += 2
    assert boards.get(tmp_path).ready == 1
    shard.write_text('{"id":"pn-7a000000"}\n')  # what a pull's checkout writes
    clock.t += 2
    assert boards.get(tmp_path).ready == 2
    (tmp_path / ".pensa" / "issues-8.jsonl").write_text("")  # a shard that was not there
    clock.t += 2
    assert boards.get(tmp_path).ready == 3


def test_boards_ask_pn_again_soon_after_it_failed_although_pensa_did_not_change(
    tmp_path: Path,
) -> None:
    (tmp_path / ".pensa").mkdir()
    (tmp_path / ".pensa" / "db.sqlite").write_text("1")
    answers = [Board(error="pn: database is locked"), Board(ready=1)]

    def reader(root: Path, env: Any, *, today: date) -> Board:
        return answers.pop(0)

    clock = Clock()
    boards = Boards({}, clock=clock, reader=reader, max_age=300, today=lambda: TODAY)
    assert boards.get(tmp_path).error == "pn: database is locked"
    clock.t += 2
    assert boards.get(tmp_path).error is not None  # shown a while, not asked every second
    clock.t += 4
    assert boards.get(tmp_path) == Board(ready=1)  # the claims it hid are back
    clock.t += 60
    assert boards.get(tmp_path) == Board(ready=1)  # a good board waits for pensa to change


@pytest.mark.process
def test_read_asks_the_real_pn(project: Path, tool_env: dict[str, str]) -> None:
    first = pn(project, tool_env, "create", "ready one", "-t", "task")["id"]
    held = pn(project, tool_env, "create", "held one", "-t", "task")["id"]
    pn(project, tool_env, "update", held, "--claim", "--actor", "build-20260301T100000")
    pn(project, tool_env, "create", "blocked one", "-t", "task", "--dep", first)
    done = pn(project, tool_env, "create", "done one", "-t", "task")["id"]
    pn(project, tool_env, "close", done, "--reason", "done")

    b = board.read(project, tool_env, today=date.today())

    assert b.error is None
    assert (b.ready, b.blocked) == (1, 1)
    assert b.held() == {"build-20260301T100000": Task(held, "held one")}
    assert b.closed_today == (Task(done, "done one"),)


@pytest.mark.process
def test_a_failing_pn_is_a_board_with_its_error(tmp_path: Path) -> None:
    b = board.read(tmp_path, {"PATH": str(tmp_path)}, today=TODAY)
    assert b.error is not None
    assert "pn" in b.error
