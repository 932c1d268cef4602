"""`sgf sandbox build`'s output: every byte to a log file, one short line per build step shown.

A raw `docker build` is ~100 lines per image (issue 11: 94 of the demo's 240 lines). The view
keeps the steps (`Step 4/14 : RUN ...` from the classic builder, `#7 [3/9] RUN ...` from
BuildKit), cut to one line each, and leaves the rest to the log; `--verbose` streams it all.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from typing import BinaryIO

STEP = re.compile(r"^(?:Step (\d+/\d+) : |#\d+ \[([^\]]+)\] )(.*)$")
WIDTH = 64  # with "[10/14] " in front: one line of an 80-column terminal


def steps(lines: Iterable[str]) -> Iterator[str]:
    """Each build step once, as `[4/14] RUN missing="" ...` cut to one line: a pure filter."""
    seen: set[str] = set()
    for line in lines:
        found = STEP.match(line)
        if not found:
            continue
        number = found.group(1) or found.group(2)
        if number in seen:
            continue
        seen.add(number)
        text = " ".join(found.group(3).split())
        if len(text) > WIDTH:
            text = text[: WIDTH - 1] + "…"
        yield f"[{number}] {text}"


class BuildView:
    """A proc.Sink: the whole output into `log`, each new step handed to `show`."""

    def __init__(self, log: BinaryIO, show: Callable[[str], None]) -> None:
        self.log = log
        self.show = show
        self._pending = b""
        self._seen: set[str] = set()

    def write(self, data: bytes, /) -> int:
        """Log `data`; show the steps among its complete lines."""
        self.log.write(data)
        *lines, self._pending = (self._pending + data).split(b"\n")
        for line in lines:
            text = line.decode("utf-8", "replace").rstrip("\r")
            for step in steps([text]):
                if step not in self._seen:
                    self._seen.add(step)
                    self.show(step)
        return len(data)

    def flush(self) -> None:
        """Flush the log."""
        self.log.flush()
