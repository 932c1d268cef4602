"""Process trees read from /proc, for the crash test's `kill -9`."""

from __future__ import annotations

import os
from pathlib import Path


def _parent(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name is in parentheses and may contain spaces: split after the last ")".
    return int(stat.rsplit(")", 1)[1].split()[1])


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def descendants(root: int) -> list[int]:
    """Every live process below `root`, parents before children."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (parent := _parent(int(entry))) is not None:
            children.setdefault(parent, []).append(int(entry))
    found: list[int] = []
    queue = [root]
    while queue:
        for child in children.get(queue.pop(0), []):
            found.append(child)
            queue.append(child)
    return found


def find_below(root: int, needle: str) -> list[int]:
    """Descendants of `root` whose command line contains `needle`."""
    return [pid for pid in descendants(root) if needle in _cmdline(pid)]


def alive(pid: int) -> bool:
    """True while `pid` exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def working_in(root: Path) -> list[int]:
    """Live processes whose working directory is `root` or below it.

    Container processes show up too: the project is bind-mounted at the same absolute path.
    """
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cwd = Path(os.readlink(f"/proc/{entry}/cwd"))
        except OSError:
            continue
        if (cwd == root or root in cwd.parents) and alive(int(entry)):
            found.append(int(entry))
    return found
