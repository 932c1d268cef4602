"""The selected loop's one-liners: its log, followed as it grows, styled as ralph styles AFK
output (ralph's render.py: tool calls cyan, tool errors red, summaries green, warnings yellow,
notes dim). The log already holds ralph's formatted lines, as plain text (sgf's plainlog)."""

from __future__ import annotations

import os
from pathlib import Path

INITIAL = 64 * 1024  # how much of an existing log to show at first
CHUNK = 256 * 1024  # at most this much new text per refresh


def style_of(line: str) -> str | None:
    """The rich style ralph gives a one-liner of this shape, or None for plain text."""
    if line.startswith("-> "):
        return "cyan"
    if line.startswith("   ! "):
        return "red"
    if line.startswith("warning: ") or line.startswith("error: "):
        return "bold yellow"
    if line.startswith(("Iteration ", "ralph complete", "totals: ")):
        return "bold green"
    if line.startswith(("# sgf:", "   ~ ", "waiting ", "retrying ")):
        return "dim"
    return None


class LogFollower:
    """Reads a log's new lines on each call to `read()`; starts near the end of a long log."""

    def __init__(self, path: Path, *, initial: int = INITIAL) -> None:
        self.path = path
        self._offset: int | None = None
        self._initial = initial
        self._pending = b""

    def read(self) -> list[str]:
        """The complete lines added since the last call (a half-written line waits)."""
        try:
            size = self.path.stat().st_size
        except OSError:
            return []
        first = self._offset is None
        if self._offset is None or size < self._offset:  # new, or truncated: start again
            self._offset = max(0, size - self._initial)
            self._pending = b""
        if size == self._offset:
            return []
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except OSError:
            return []
        try:
            data = os.pread(fd, min(size - self._offset, CHUNK), self._offset)
        except OSError:  # a directory, an unreadable file: nothing to show
            return []
        finally:
            os.close(fd)
        self._offset += len(data)
        *lines, self._pending = (self._pending + data).split(b"\n")
        if first and self._offset - len(data) > 0 and lines:
            lines = lines[1:]  # the first line was cut by the start offset
        return [line.decode("utf-8", errors="replace") for line in lines]
