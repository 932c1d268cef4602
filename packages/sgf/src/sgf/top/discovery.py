"""Which projects `sgf top` looks at, without any global state of Springfield's own.

Without `--all`: the current project. With `--all`, also every project named by
  1. the per-user index of running loops (`sgf.loop.loopindex`: every loop sgf launches, sandboxed
     or not, is listed there while it runs; a dead loop's entry only names its project, whose
     own PID files then tell that the loop is gone), and
  2. the labels of running Docker containers (`springfield.project`, `springfield.loop-id`),
     which also find loops started by a bare `ralph` with no sgf around it. Docker is optional:
     without an engine this source is simply empty.
A project must still hold a `.sgf` folder to be shown.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from sgf.image.containers import LabelledLoop
from sgf.loop import loopindex


def projects(
    current: Path | None,
    *,
    all_projects: bool,
    env: Mapping[str, str],
    containers: Sequence[LabelledLoop] = (),
) -> list[Path]:
    """The projects to show: the current one first, then the others by path."""
    found: list[Path] = [current] if current is not None else []
    if not all_projects:
        return found
    named: Iterable[str] = [
        *(e.project for e in loopindex.entries(env)),
        *(c.project for c in containers),
    ]
    others = {Path(p) for p in named if Path(p).is_absolute()} - set(found)
    return found + sorted(p for p in others if (p / ".sgf").is_dir())
