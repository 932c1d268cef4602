"""Whether a process is alive: the one answer all three tools give (pensa's leftover files,
ralph's agents and sidecars, sgf's PID files)."""

from __future__ import annotations

import os


def alive(pid: int) -> bool:
    """Whether process `pid` exists (signal 0) and is no zombie (killed, not yet reaped).
    Not ours to signal still counts as alive; no PID is 0, negative or past the largest."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return True  # no /proc: signal 0 is all there is to go by
    return stat[stat.rfind(b")") + 2 :][:1] != b"Z"
