"""A stop asked for from outside the loop: once a file exists, no iteration starts.

`--stop-file PATH` is how sgf ends a group of loops at the group's budget. A signal would cut
the running iteration short, possibly in the middle of landing its commits (a `pn sync` killed
half-way, a task closed whose commit never reached the branch); the file is only looked at
between iterations (and while a usage-limit wait could be spent retrying), so the running
iteration ends as it would have, its commits come home and land, and then the loop stops with
exit 2. The file's first line is the stop reason the loop reports. sgf keeps it next to the run
record, where no sandbox can see it: an agent can neither forge a stop nor hide one.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from pensa.shared.inert import inert

from ralph import format

REQUESTED = "stop requested"  # the reason when the file gives none
_MAX = 4096  # a reason is one short line; more is not worth reading


def reason(path: Path | None) -> str | None:
    """The stop reason `path` holds (its first line, or "stop requested"), or None while there
    is no such file. Anything at `path` asks for the stop: a link or a folder too."""
    if path is None:
        return None
    try:
        # not through a link, and a FIFO there cannot block the open
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError:
        return REQUESTED
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return REQUESTED
    with os.fdopen(fd, "rb") as f:
        data = f.read(_MAX)
    first = next(iter(data.decode("utf-8", "replace").splitlines()), "")
    return format.cut(inert(first.strip(), multiline=True), 300) or REQUESTED
