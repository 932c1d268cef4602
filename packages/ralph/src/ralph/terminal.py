"""The user's terminal: run an interactive agent on it and restore it exactly afterwards."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TypeAlias

from ralph import proc
from ralph.errors import AgentNotFound
from ralph.proc import Interrupts, Signaller

TermAttrs: TypeAlias = "list[int | list[bytes | int]]"


def foreground(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str] | None,
    interrupts: Interrupts,
    tick: Callable[[], bool],
    every: float,
    grace: float,
    signaller: Signaller | None = None,
) -> int | None:
    """Run an interactive agent on the user's terminal; restore the terminal exactly after.

    The child stays in ralph's process group so it can read the terminal (keystrokes, Ctrl+C
    and resizes reach it). `tick` runs every `every` seconds (the ding and sentinel watcher);
    when it returns True the agent's work is done and its session is ended. Returns the exit
    status (0 for a session ended that way), or None when ralph was interrupted and stopped it.
    """
    saved = _save_terminal()
    try:
        try:
            popen = proc.start_sharing_terminal(argv, cwd=cwd, env=env)
        except (FileNotFoundError, PermissionError) as e:
            raise AgentNotFound(argv[0]) from e
        try:
            finished = False
            while popen.poll() is None and not interrupts.fired and not finished:
                interrupts.wait(every)
                finished = tick()
            if popen.poll() is None:
                proc.stop_by_ladder(popen, grace=grace, signaller=signaller)
                return 0 if finished and not interrupts.fired else None
            return popen.returncode
        finally:
            if popen.poll() is None:
                popen.kill()
            popen.wait()
    finally:
        _restore_terminal(saved)


def size() -> tuple[int, int] | None:
    """The user's terminal size as (rows, columns), or None when stdin is not a terminal."""
    try:
        columns, rows = os.get_terminal_size(sys.stdin.fileno())
    except (OSError, ValueError):
        return None
    return rows, columns


class SizeFollower:
    """Applies each change of the user's terminal size through `apply`, polled by the caller.

    The docker CLI forwards SIGWINCH only once it watches for it, after the container has
    started; a resize in that window would be lost and the agent would draw at the old size
    for the rest of the session. `apply` returns False when the size could not be applied yet
    (the container is not running), so the next poll tries again.
    """

    def __init__(self, apply: Callable[[int, int], bool]) -> None:
        self._apply = apply
        self._applied = size()

    def __call__(self) -> None:
        now = size()
        if now is not None and now != self._applied and self._apply(*now):
            self._applied = now


def _save_terminal() -> TermAttrs | None:
    import termios

    try:
        return termios.tcgetattr(sys.stdin.fileno())
    except (termios.error, OSError, ValueError):
        return None  # not a terminal


def _restore_terminal(saved: TermAttrs | None) -> None:
    import termios

    if saved is not None:
        with contextlib.suppress(termios.error, OSError):
            termios.tcsetattr(sys.stdin.fileno(), termios.TCSADRAIN, saved)
