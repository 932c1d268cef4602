"""The two actions `sgf top` takes: stop a loop (SIGINT, as Ctrl+C) and restart a stopped one.

Stopping goes the way Ctrl+C goes: sgf passes SIGINT on to ralph, ralph stops the agent,
releases the loop's claims naming the stop reason, records `end` with stop reason
"interrupted", and sgf writes the outcome to history and removes the PID file. Restarting runs
`sgf` again, detached, with the loop's original arguments (`sgf.loop.relaunch`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ralph.shared import pids

from sgf import proc
from sgf.errors import SgfError
from sgf.loop import loopindex, relaunch
from sgf.loop.loops import Launch
from sgf.loop.loopstate import LoopRow

if TYPE_CHECKING:
    import subprocess


class NotStoppable(SgfError):
    """The loop has already ended (or its PID now names another process)."""

    code = "not_stoppable"


class NotRestartable(SgfError):
    """The loop still runs, or its arguments were not kept, or it needs a terminal."""

    code = "not_restartable"


def stop(row: LoopRow) -> list[int]:
    """Ask the loop to stop gracefully; the PIDs signalled."""
    pid = row.pid
    if not row.live or pid is None:
        raise NotStoppable(f"{row.loop_id} is not running")
    # checked right before the signal: a PID reused since the last refresh is not ours to hit
    same = proc.pid_alive(pid) and (
        row.process_start is None or pids.start_time(pid) == row.process_start
    )
    if not same:
        raise NotStoppable(f"{row.loop_id} has ended already")
    try:
        return proc.interrupt_like_ctrl_c(pid)
    except ProcessLookupError as e:
        raise NotStoppable(f"{row.loop_id} has ended already") from e
    except PermissionError as e:
        raise NotStoppable(f"{row.loop_id} runs as another user: {e.strerror}") from e


def restart_request(row: LoopRow) -> Launch:
    """The request that started the loop, if it can be replayed without a terminal."""
    if row.live:
        raise NotRestartable(f"{row.loop_id} is still running; stop it first")
    request = relaunch.load(row.project, row.loop_id)
    if request is None:
        raise NotRestartable(f"{row.loop_id}: its arguments were not kept (an older sgf ran it)")
    if not request.is_afk():
        command = " ".join(["sgf", *relaunch.sgf_args(request)])
        raise NotRestartable(f"{row.loop_id} is interactive; run `{command}` in a terminal")
    return request


def restart(
    row: LoopRow, *, sgf: Sequence[str], env: Mapping[str, str]
) -> tuple[subprocess.Popen[bytes], Path]:
    """Launch the loop again, detached: `sgf` is how to run sgf (e.g. [python, -m, sgf]).
    Returns the process and the file that holds its output."""
    request = restart_request(row)
    argv = [*sgf, *relaunch.sgf_args(request)]
    output = loopindex.directory(env).parent / "restarts" / f"{row.loop_id}.out"
    return proc.spawn_detached(argv, cwd=row.project, env=env, output=output), output
