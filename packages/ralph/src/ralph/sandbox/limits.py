"""Whether a container ran into its process or memory limit, from the kernel's own counters.

A fork bomb in the sandbox fills the container's process limit and sits there; a memory hog
is killed by the kernel inside the container's memory limit. Neither reaches the host, but
the agent may go on in a container that can no longer start a process, or may itself be the
process killed. So the loop asks, while the agent runs and when it ends, whether the
container's cgroup counted a refused fork (`pids.events`: `max N`) or an OOM kill
(`memory.events` in cgroup v2, `memory.oom_control` in v1: `oom_kill N`), and ends the
iteration saying which. These files are the kernel's, found through `/proc/<pid>/cgroup` of
the container's first process; nothing the agent wrote is read.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

CGROUP = Path("/sys/fs/cgroup")
_MAX_READ = 4096


def _read(path: Path) -> str:
    try:
        with path.open("rb") as f:
            return f.read(_MAX_READ).decode("ascii", "replace")
    except OSError:
        return ""


def _counter(text: str, name: str) -> int:
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if key == name and value.strip().isdigit():
            return int(value)
    return 0


def folders(pid: int, *, proc: Path = Path("/proc"), root: Path = CGROUP) -> dict[str, Path]:
    """The cgroup folders of process `pid`: {"pids": ..., "memory": ...} (v1), or both the
    one unified folder (v2)."""
    found: dict[str, Path] = {}
    for line in _read(proc / str(pid) / "cgroup").splitlines():
        _, controllers, path = [*line.split(":", 2), "", ""][:3]
        relative = path.lstrip("/")
        if controllers == "":  # v2: one hierarchy for every controller
            found.setdefault("pids", root / relative)
            found.setdefault("memory", root / relative)
        for name in ("pids", "memory"):
            if name in controllers.split(","):
                found[name] = root / name / relative
    return found


@dataclass
class Limits:
    """The process and memory limits of one container, and what it ran into."""

    pids: int
    memory: str
    cgroups: dict[str, Path]

    def hit(self) -> str | None:
        """Why the container is past use, or None: a refused fork, or an OOM kill."""
        if "pids" in self.cgroups and _counter(_read(self.cgroups["pids"] / "pids.events"), "max"):
            return (
                f"the sandbox's process limit ({self.pids}) was reached: a fork bomb, or a "
                "build that needs more (raise it with --pids, `pids` in .sgf/config.toml)"
            )
        if "memory" in self.cgroups and self.oom_killed():
            return self.memory_message()
        return None

    def oom_killed(self) -> bool:
        folder = self.cgroups["memory"]
        return bool(
            _counter(_read(folder / "memory.events"), "oom_kill")
            or _counter(_read(folder / "memory.oom_control"), "oom_kill")
        )

    def memory_message(self) -> str:
        return (
            f"the sandbox's memory limit ({self.memory}) was reached and the kernel killed a "
            "process (raise it with --memory, `memory` in .sgf/config.toml)"
        )
