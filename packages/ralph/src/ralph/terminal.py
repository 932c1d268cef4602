"""The user's terminal: run an interactive agent on it and restore it exactly afterwards."""

from __future__ import annotations

import contextlib
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
