"""A process named for good: its pid and its start time (whether it lives: `proc.is_alive`).

A ralph, a host agent or a container's owner is recorded by pid and start time
(`/proc/<pid>/stat`), so a pid reused after a crash or a reboot is never taken for the process
it once named, and a process killed but not yet reaped (a zombie) is gone. sgf records its
loops the same way: a published contract module (see `ralph.shared`).
"""

from __future__ import annotations


def start_time(pid: int) -> int | None:
    """When process `pid` started (clock ticks since boot, /proc/PID/stat field 22), or None.

    With the PID it names one process for good: a PID reused after a reboot or a crash has
    another start time."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat[stat.rfind(b")") + 2 :].split()  # the command name may hold spaces
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None
