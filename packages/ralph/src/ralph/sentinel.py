"""The files agents use to talk to ralph: `.ralph-complete` (done) and `.ralph-ding` (sound)."""

from __future__ import annotations

import contextlib
from pathlib import Path

COMPLETE = ".ralph-complete"
DING = ".ralph-ding"


def find(root: Path) -> list[Path]:
    """Every `.ralph-complete` in `root`, its subfolders and their subfolders (depth 0-2)."""
    patterns = (COMPLETE, f"*/{COMPLETE}", f"*/*/{COMPLETE}")
    found = [p for pattern in patterns for p in root.glob(pattern)]
    return [p for p in found if ".git" not in p.relative_to(root).parts]


def clear(root: Path) -> int:
    """Delete every sentinel; return how many there were."""
    found = find(root)
    for path in found:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    return len(found)


def take(root: Path) -> bool:
    """Whether the agent signalled completion; the sentinel is deleted when found."""
    return clear(root) > 0


def take_ding(root: Path) -> bool:
    """Whether `.ralph-ding` appeared (it is deleted)."""
    try:
        (root / DING).unlink()
    except FileNotFoundError:
        return False
    return True
