"""`sgf status --watch`: a rich Live table on a terminal, plain text when piped."""

from __future__ import annotations

import io
import signal
import subprocess
import threading
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from sgf.loop import runs
from sgf.loop.loopstate import LoopRow, State, Task
from sgf.top import watch
from sgf.top.board import Board
from sgf.top.collect import Snapshot

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
HOSTILE = "[bold red]pwned[/] \x1b[2J"


def snap(cost: float) -> Snapshot:
    row = LoopRow(
        Path("/work/shop"), "build-20260301T110000", "build", None, State.RUNNING,
        iteration=2, iterations=5, task=Task("pn-1", HOSTILE), cost=cost, tokens=1200,
        elapsed=60.0, last_activity=NOW - timedelta(seconds=2),
    )  # fmt: skip
    return Snapshot(NOW, (Path("/work/shop"),), (row,), {Path("/work/shop"): Board(ready=2)})


class Scripted:
    """Hands out the given snapshots (the last one again), then sets `stop`."""

    def __init__(self, *snaps: Snapshot, stop: threading.Event) -> None:
        self.snaps = list(snaps)
        self.stop = stop
        self.calls = 0

    def snapshot(self) -> Snapshot:
        self.calls += 1
        if self.calls >= len(self.snaps) + 1:
            self.stop.set()
        return self.snaps[min(self.calls, len(self.snaps)) - 1]


def test_piped_prints_one_header_then_a_row_only_when_it_changes() -> None:
    out = io.StringIO()
    stop = threading.Event()
    source = Scripted(snap(0.1), snap(0.1), snap(0.2), stop=stop)
    console = Console(file=out, force_terminal=False)
    watch.run(source, console=console, interval=0.01, stop=stop, stamp=lambda s: "T")
    lines = out.getvalue().splitlines()
    assert lines[0].split() == ["at", "loop", "id", "project", "stage", "spec", "iterations",
                                "task", "cost", "tokens", "time", "active", "state",
                                "trend"]  # fmt: skip
    rows = [line for line in lines if line.startswith("T ")]
    assert len(rows) == 2  # the unchanged second snapshot printed nothing
    assert "build-20260301T110000" in rows[0]  # the whole id
    assert "$0.1000" in rows[0]
    assert "$0.2000" in rows[1]
    assert "pn-1 [bold red]pwned[/] \\x1b[2J" in rows[0]  # inert, never markup
    assert "\x1b" not in out.getvalue()
    assert [line for line in lines if line.startswith("# pensa (shop): 2 ready")] == [lines[2]]
    assert not any("─" in line or "│" in line for line in lines)


def test_piped_rows_are_not_repeated_for_ticking_time_alone() -> None:
    out = io.StringIO()
    stop = threading.Event()
    later = snap(0.1)
    later = Snapshot(
        NOW, later.projects, tuple(replace(r, elapsed=61.0) for r in later.rows), later.boards
    )
    source = Scripted(snap(0.1), later, stop=stop)
    watch.run(source, console=Console(file=out, force_terminal=False), interval=0.01, stop=stop)
    assert len(out.getvalue().splitlines()) == 3  # header, the row, the pensa line


def test_on_a_terminal_the_table_is_redrawn_in_place() -> None:
    out = io.StringIO()
    stop = threading.Event()
    source = Scripted(snap(0.1), snap(0.2), stop=stop)
    console = Console(file=out, force_terminal=True, width=200, color_system="truecolor")
    watch.run(source, console=console, interval=0.01, stop=stop)
    text = out.getvalue()
    assert "$0.1000" in text
    assert "$0.2000" in text
    assert "\x1b[2K" in text or "\x1b[1A" in text  # the cursor moved back over the old table
    assert "[bold red]pwned[/]" in text  # the brackets are shown, not read as markup
    assert "\x1b[2J" not in text  # the title's escape did not clear the screen


@pytest.mark.process
def test_status_watch_through_the_real_console_script(
    project: Path, tool_env: dict[str, str], tmp_path: Path
) -> None:
    outcome = runs.Outcome("verify-20260301T100000", "2026-03-01T10:00:00Z", "x", 130, "x")
    runs.record(project, outcome)
    sgf = Path(tool_env["PATH"].split(":")[0]) / "sgf"
    child = subprocess.Popen(
        [str(sgf), "status", "--watch"], cwd=project, env=tool_env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert child.stdout is not None
    deadline = time.monotonic() + 60
    lines: list[str] = []
    while not any("verify" in line for line in lines):
        assert time.monotonic() < deadline
        lines.append(child.stdout.readline())
    child.send_signal(signal.SIGINT)
    rest: Any = child.communicate(timeout=120)
    assert child.returncode == 130, rest
    assert lines[0].split()[:3] == ["at", "loop", "id"]
    assert "verify-20260301T100000" in lines[-1]
    assert "stopped: x" in lines[-1]


@pytest.mark.process
def test_status_watch_and_json_do_not_go_together(project: Path, tool_env: dict[str, str]) -> None:
    sgf = Path(tool_env["PATH"].split(":")[0]) / "sgf"
    done = subprocess.run(
        [str(sgf), "status", "--watch", "--json"], cwd=project, env=tool_env,
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 1
    assert "--watch and --json" in done.stderr
