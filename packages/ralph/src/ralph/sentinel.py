"""The files agents use to talk to ralph: `.ralph-complete` (done) and `.ralph-ding` (sound).

Several loops may run in one project at once (`sgf build -a` next to `sgf issues plan -a`), so
a sentinel names its loop: agents write `echo "$RALPH_LOOP_ID" > .ralph-complete`. A loop owns
the sentinels that hold its id and the empty ones (a plain `touch`, as hand-written prompts
do); one naming another loop is left alone, neither deleted nor taken as completion.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable
from pathlib import Path

COMPLETE = ".ralph-complete"
DING = ".ralph-ding"
_MAX_ID = 4096  # a loop id is short; more than this is not one, and not worth reading


def find(root: Path) -> list[Path]:
    """Every `.ralph-complete` in `root`, its subfolders and their subfolders (depth 0-2)."""
    patterns = (COMPLETE, f"*/{COMPLETE}", f"*/*/{COMPLETE}")
    found = [p for pattern in patterns for p in root.glob(pattern)]
    return [p for p in found if ".git" not in p.relative_to(root).parts and _inside(root, p)]


def _inside(root: Path, path: Path) -> bool:
    """Whether no folder between `root` and `path` is a link: the glob follows links, and
    deleting `link/.ralph-complete` would delete a file wherever an agent's link points."""
    return not any(
        parent.is_symlink()
        for parent in path.parents
        if parent != root and parent.is_relative_to(root)
    )


def owner(path: Path) -> str | None:
    """The loop id a sentinel names ("" for an empty one); None when it cannot be read."""
    try:
        # not through a link, and a FIFO planted there cannot block the open
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:  # taken by its own loop meanwhile, or a link
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # a folder, a FIFO: not a sentinel
        os.close(fd)
        return None
    with os.fdopen(fd, "rb") as f:
        data = f.read(_MAX_ID + 1)
    return data.decode(errors="replace").strip()


def mine(root: Path, loop_id: str) -> list[Path]:
    """The sentinels that belong to `loop_id`: holding its id, or empty."""
    return [p for p in find(root) if owner(p) in ("", loop_id)]


def clear(root: Path, loop_id: str) -> int:
    """Delete this loop's sentinels (never another loop's); return how many there were."""
    found = mine(root, loop_id)
    for path in found:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    return len(found)


def take(root: Path, loop_id: str) -> bool:
    """Whether the agent of `loop_id` signalled completion; its sentinel is deleted."""
    return clear(root, loop_id) > 0


def take_ding(root: Path) -> bool:
    """Whether `.ralph-ding` appeared (it is deleted)."""
    try:
        (root / DING).unlink()
    except FileNotFoundError:
        return False
    return True


class SessionEnd:
    """Interactive mode: end the agent's session `grace` seconds after its sentinel appeared.

    An agent cannot quit its own Claude Code session, so without this the developer quits it
    by hand every time. `written` is polled at most every `poll` seconds: it globs
    two levels of folders.
    """

    def __init__(
        self,
        written: Callable[[], bool],
        *,
        grace: float,
        clock: Callable[[], float],
        poll: float = 0.5,
    ) -> None:
        self._written, self._grace, self._clock, self._poll = written, grace, clock, poll
        self._seen: float | None = None
        self._looked: float | None = None

    def due(self) -> bool:
        """Whether the session should end now."""
        now = self._clock()
        if self._seen is None:
            if self._looked is not None and now - self._looked < self._poll:
                return False
            self._looked = now
            if not self._written():
                return False
            self._seen = now
        return now - self._seen >= self._grace
