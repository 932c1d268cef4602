"""Reading `sgf sandbox build`'s output: its steps, and the cause of a failed build.

A raw `docker build` is ~100 lines per image (94 of the demo's 240 lines). The display
(buildprogress.py) keeps the steps (`Step 4/14 : RUN ...` from the classic builder, `#7 [3/9]
RUN ...` from BuildKit), cut to one line each, and leaves the rest to the log; `--verbose`
streams it all.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path

STEP = re.compile(r"^(?:Step (\d+/\d+) : |#\d+ \[([^\]]+)\] )(.*)$")
WIDTH = 64  # with "[10/14] " in front: one line of an 80-column terminal


def step(line: str) -> tuple[str, str] | None:
    """A build step's number (`4/14`, or BuildKit's `internal`) and its instruction cut to
    one line, or None when `line` starts no step."""
    found = STEP.match(line)
    if not found:
        return None
    text = " ".join(found.group(3).split())
    if len(text) > WIDTH:
        text = text[: WIDTH - 1] + "…"
    return found.group(1) or found.group(2), text


def steps(lines: Iterable[str]) -> Iterator[str]:
    """Each build step once, as `[4/14] RUN missing="" ...` cut to one line: a pure filter."""
    seen: set[str] = set()
    for line in lines:
        found = step(line)
        if found and found[0] not in seen:
            seen.add(found[0])
            yield f"[{found[0]}] {found[1]}"


_ERROR = re.compile(
    r"(?i)\b(error|failed|denied|no such host|not found|timeout|timed out|refused|unable|"
    r"unreachable|no space left)\b"
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


def failure(error: str, log: Path) -> str:
    """`sgf sandbox build`'s error: the engine's words, the log's line that names the cause,
    and where the whole output is."""
    try:
        lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        lines = []
    message = error
    if (why := cause(lines)) and why not in error:
        message += f": {why}"
    return f"{message}; the full output is in {log}"
