"""Host agents a killed ralph left running, found again and stopped.

A ralph stopped by `kill -9` cannot stop its agent: under `--sandbox none` the agent, in its
own process group, would keep editing the tree. So each host agent is recorded in a per-user
directory with its process group and the start times of both processes; the next ralph
start stops every recorded group whose ralph is gone. Start times make a reused PID harmless:
a record only matches the very process it was written for. (Containers are found by their
labels instead: `DockerSandbox.prepare`.)
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path

from ralph import proc, safefile
from ralph.shared import pids


def registry() -> Path:
    """The per-user directory of records (private: 0700)."""
    path = Path(tempfile.gettempdir()) / f"ralph-agents-{os.getuid()}"
    path.mkdir(mode=0o700, exist_ok=True)
    return path


def record(pgid: int, *, where: Path | None = None) -> Path:
    """Remember the agent group `pgid`, owned by this ralph."""
    owner = os.getpid()
    data = {
        "pgid": pgid,
        "agent_start": pids.start_time(pgid),
        "owner": owner,
        "owner_start": pids.start_time(owner),
    }
    path = (where or registry()) / f"{owner}-{pgid}.json"
    return safefile.replace(path, json.dumps(data).encode())


def forget(path: Path) -> None:
    """Drop a record (the agent ended, or ralph is cleaning up)."""
    path.unlink(missing_ok=True)


def _same(pid: object, started: object) -> bool:
    return isinstance(pid, int) and pids.start_time(pid) == started and started is not None


def reap(*, where: Path | None = None) -> list[str]:
    """Stop the agent groups of ralphs that are gone; return what was stopped."""
    stopped = []
    for path in sorted((where or registry()).glob("*.json")):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            forget(path)
            continue
        if not isinstance(data, dict) or _same(data.get("owner"), data.get("owner_start")):
            continue  # its ralph still runs
        pgid = data.get("pgid")
        if _same(pgid, data.get("agent_start")):
            assert isinstance(pgid, int)
            proc.kill_group(pgid)
            stopped.append(f"host agent (process group {pgid})")
        with contextlib.suppress(OSError):
            forget(path)
    return stopped
