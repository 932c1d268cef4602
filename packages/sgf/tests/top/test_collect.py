"""A snapshot of every project's loops and pensa pictures, as `sgf top` refreshes it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest
from ralph.shared import pids

from sgf.image.containers import LabelledLoop
from sgf.loop import loopindex, runs
from sgf.loop.loopstate import State, Task
from sgf.top.board import Board, Boards, Claim
from sgf.top.collect import Collector

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def project(path: Path, *live: str) -> Path:
    (path / ".sgf" / "run").mkdir(parents=True)
    for loop_id in live:
        runs.pid_path(path, loop_id).write_text(f"{os.getpid()} {pids.start_time(os.getpid())}\n")
    return path


def boards_of(claims: Mapping[str, str]) -> Boards:
    def reader(root: Path, env: Any, *, today: date) -> Board:
        return Board(ready=2, working=tuple(Claim(t, f"title {t}", a) for a, t in claims.items()))

    return Boards({}, reader=reader)


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    """A process standing in for a bare ralph whose container is labelled."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    yield child
    child.kill()
    child.wait()


def test_the_current_project_alone_without_all(tmp_path: Path) -> None:
    env = {"XDG_RUNTIME_DIR": str(tmp_path / "rt")}
    here = project(tmp_path / "here", "build-20260301T110000")
    other = project(tmp_path / "other", "verify-20260301T110000")
    collector = Collector(here, all_projects=False, env=env, now=lambda: NOW, boards=boards_of({}))
    with loopindex.registered(
        other, "verify-20260301T110000", os.getpid(), started_at="t", env=env
    ):
        snap = collector.snapshot()
    assert snap.projects == (here,)
    assert [r.loop_id for r in snap.rows] == ["build-20260301T110000"]
    assert snap.boards[here].ready == 2


@pytest.mark.process
def test_all_shows_every_project_with_tasks_and_bare_ralph_containers(
    tmp_path: Path, sleeper: subprocess.Popen[bytes]
) -> None:
    env = {"XDG_RUNTIME_DIR": str(tmp_path / "rt")}
    here = project(tmp_path / "here", "build-20260301T110000")
    other = project(tmp_path / "other", "verify-20260301T110000")
    labels = [
        LabelledLoop(str(other), "verify-20260301T110000", os.getpid(), None),  # sgf's: known
        LabelledLoop(str(other), "test-20260301T113000", sleeper.pid, pids.start_time(sleeper.pid)),
        LabelledLoop(str(other), "test-20260301T090000", sleeper.pid, 1),  # a reused PID
    ]
    asked: list[Mapping[str, str]] = []

    def docker(e: Mapping[str, str]) -> list[LabelledLoop]:
        asked.append(e)
        return labels

    collector = Collector(
        here,
        all_projects=True,
        env=env,
        now=lambda: NOW,
        boards=boards_of({"build-20260301T110000": "pn-1", "test-20260301T113000": "pn-2"}),
        docker=docker,
    )
    with loopindex.registered(
        other, "verify-20260301T110000", os.getpid(), started_at="t", env=env
    ):
        snap = collector.snapshot()
        collector.snapshot()

    assert snap.projects == (here, other)
    assert [(r.project, r.loop_id, r.state, r.task) for r in snap.rows] == [
        (here, "build-20260301T110000", State.RUNNING, Task("pn-1", "title pn-1")),
        (other, "verify-20260301T110000", State.RUNNING, None),
        (other, "test-20260301T113000", State.RUNNING, Task("pn-2", "title pn-2")),
    ]
    assert snap.rows[2].pid == sleeper.pid
    assert len(asked) == 1  # Docker is asked every few seconds, not every refresh
