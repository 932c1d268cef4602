"""`sgf sandbox build`'s output: every byte to a log file, one short line per build step shown.

A raw `docker build` is ~100 lines per image (94 of the demo's 240 lines). The view
keeps the steps (`Step 4/14 : RUN ...` from the classic builder, `#7 [3/9] RUN ...` from
BuildKit), cut to one line each, and leaves the rest to the log; `--verbose` streams it all.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
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


_ERROR = re.compile(
    r"(?i)\b(error|failed|denied|no such host|not found|timeout|timed out|refused|unable|"
    r"unreachable|no space left)\b"
)
_REGISTRY = re.compile(
    r"(?i)(dial tcp|no such host|i/o timeout|tls handshake|connection refused|network is "
    r"unreachable|temporary failure in name resolution|failed to resolve source metadata|"
    r"failed to do request|pull access denied|manifest unknown)"
)


def cause(lines: Iterable[str]) -> str | None:
    """The line of a failed build's output that names its cause: the last one that reads as
    an error (docker's own wording, cut to one line), or None."""
    found = None
    for line in lines:
        text = " ".join(line.split())
        if _ERROR.search(text) and not STEP.match(text):
            found = text
    if found and len(found) > 300:
        found = found[:299] + "…"
    return found


def registry_unreachable(lines: Iterable[str]) -> bool:
    """Tell whether a failed build could not pull its base image from a registry."""
    return any(_REGISTRY.search(line) for line in lines)


def failure(error: str, log: Path, *, base: str) -> str:
    """`sgf sandbox build`'s error: docker's own words for the cause, `--base` when the
    registry could not be reached, and where the whole output is."""
    try:
        lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        lines = []
    message = error
    if why := cause(lines):
        message += f": {why}"
    if registry_unreachable(lines):
        message += (
            f"; the registry holding {base} cannot be reached: build from an image you have "
            "with `--base IMAGE` (see `docker images`) or set SPRINGFIELD_BASE_IMAGE"
        )
    return f"{message}; the full output is in {log}"
