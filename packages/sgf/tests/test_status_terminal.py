"""`sgf status` and `sgf status --watch` on a real pseudo-terminal of a given width: the
columns fit as `sgf top` fits its own, and every loop id is whole."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import select
import signal
import struct
import subprocess
import termios
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from ralph.shared import pids

from .conftest import SGF

# Every test here starts a program: `make test-fast` leaves them out.
pytestmark = pytest.mark.process

PARALLEL = ("build-auth-20260301T110000", "build-auth-20260301T110001")
ESCAPES = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]")


@pytest.fixture
def two_parallel_loops(project: Path) -> Iterator[Path]:
    """Two running loops of one `sgf build --parallel 2` (one live sgf process holds both
    PID files), each with a log and a run record; the process is stopped afterwards."""
    holder = subprocess.Popen(["sleep", "600"])
    try:
        started = pids.start_time(holder.pid)
        for name in ("run", "logs", "runs"):
            (project / ".sgf" / name).mkdir(parents=True, exist_ok=True)
        events = [
            {"event": "start", "iterations": 10},
            {"event": "iteration_start", "index": 2, "total": 10},
            {"event": "iteration", "index": 1, "cost": 0.12},
        ]
        for loop_id in PARALLEL:
            (project / ".sgf/run" / f"{loop_id}.pid").write_text(f"{holder.pid} {started}\n")
            (project / ".sgf/logs" / f"{loop_id}.log").write_text("working\n")
            record = "".join(json.dumps(e) + "\n" for e in events)
            (project / ".sgf/runs" / f"{loop_id}.jsonl").write_text(record)
        yield project
    finally:
        holder.kill()
        holder.wait()


@contextlib.contextmanager
def on_terminal(
    args: list[str], *, cwd: Path, env: dict[str, str], columns: int
) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """`sgf ARGS` on a new pseudo-terminal `columns` wide (COLUMNS unset: the terminal's
    own size counts); killed afterwards if it still runs."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    env = {k: v for k, v in env.items() if k not in ("COLUMNS", "LINES")}
    child = subprocess.Popen(
        [str(SGF), *args], cwd=cwd, env=env, stdin=slave, stdout=slave, stderr=slave,
        start_new_session=True,
    )  # fmt: skip
    try:
        yield child, master
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        os.close(master)
        os.close(slave)


def read(master: int, *, until: bytes | None = None, timeout: float = 60) -> str:
    """What the terminal shows, escapes removed: until `until` appears, or until the
    program closes it."""
    seen = b""
    deadline = time.monotonic() + timeout
    while until is None or until not in ESCAPES.sub(b"", seen):
        left = deadline - time.monotonic()
        assert left > 0, f"{until!r} never came; the terminal ended with {seen[-1500:]!r}"
        ready, _, _ = select.select([master], [], [], min(left, 1.0))
        if not ready:
            continue
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the program ended and closed its side
            break
        if not chunk:
            break
        seen += chunk
    return ESCAPES.sub(b"", seen).decode(errors="replace")


def test_status_at_100_columns_shows_two_parallel_loops_whole_ids(
    two_parallel_loops: Path, tool_env: dict[str, str]
) -> None:
    with on_terminal(["status"], cwd=two_parallel_loops, env=tool_env, columns=100) as (
        child,
        master,
    ):
        child.wait(timeout=60)
        shown = read(master, until=b"pensa")
    lines = shown.splitlines()
    for loop_id in PARALLEL:
        [row] = [line for line in lines if loop_id in line]
        assert row.split()[:4] == ["2", "at", "11:00:00", loop_id]  # its group, its whole id
        assert "2/10" in row
        assert "$0.1200" in row
    assert "…" not in "".join(line for line in lines if "build-auth" in line)
    assert all(len(line.rstrip()) <= 100 for line in lines)
    assert "│" not in shown  # the look of `sgf top`: no rules


def test_status_watch_at_100_columns_has_a_loop_column_with_whole_ids(
    two_parallel_loops: Path, tool_env: dict[str, str]
) -> None:
    argv = ["status", "--watch"]
    with on_terminal(argv, cwd=two_parallel_loops, env=tool_env, columns=100) as (child, master):
        shown = read(master, until=PARALLEL[1].encode())
        child.send_signal(signal.SIGINT)
        assert child.wait(timeout=120) == 130
    header = next(line for line in shown.splitlines() if line.startswith("loop "))
    assert header.split()[:2] == ["loop", "stage"]  # a narrow terminal does without project
    rows = [line for line in shown.splitlines() if line.startswith("build-auth-")]
    assert {row.split()[0] for row in rows} == set(PARALLEL)
    assert all(len(line.rstrip()) <= 100 for line in shown.splitlines())
