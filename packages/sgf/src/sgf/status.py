"""`sgf status`: running loops, recent outcomes and the pensa picture, as data."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sgf import pensa, runs
from sgf.errors import SgfError
from sgf.loops import LoopId


@dataclass(frozen=True, slots=True)
class Running:
    """A loop whose sgf process is alive."""

    loop_id: str
    stage: str
    spec: str | None
    pid: int
    started_at: str
    uptime_seconds: int
    log: str


@dataclass(frozen=True, slots=True)
class Status:
    """Everything `sgf status` shows."""

    running: list[Running]
    stale: list[str]  # PID files of crashed loops (the next launch recovers them)
    recent: list[runs.Outcome]
    pensa: pensa.Picture | None
    pensa_error: str | None = None
    notes: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)  # orphan containers of killed loops

    def to_json(self) -> dict[str, Any]:
        """The `--json` shape, keys in a fixed order."""
        return {
            "running": [asdict(r) for r in self.running],
            "stale": list(self.stale),
            "recent": [asdict(o) for o in self.recent],
            "pensa": asdict(self.pensa) if self.pensa else None,
            "pensa_error": self.pensa_error,
            "removed_orphans": list(self.removed),
        }


def gather(root: Path, *, env: Mapping[str, str], now: Callable[[], datetime]) -> Status:
    """Collect the status of the project at `root`."""
    running, stale = [], []
    current = now().astimezone(UTC)
    for p in runs.scan(root):
        if not p.alive() or p.pid is None:
            stale.append(p.loop_id)
            continue
        parsed = LoopId.parse(p.loop_id)
        running.append(
            Running(
                loop_id=p.loop_id,
                stage=parsed.stage.value if parsed else "?",
                spec=parsed.spec if parsed else None,
                pid=p.pid,
                started_at=p.started.strftime("%Y-%m-%dT%H:%M:%SZ"),
                uptime_seconds=max(0, int((current - p.started).total_seconds())),
                log=str(runs.log_path(root, p.loop_id).relative_to(root)),
            )
        )
    try:
        picture: pensa.Picture | None = pensa.picture(root, env)
        error = None
    except SgfError as e:
        picture, error = None, str(e)
    from sgf import sandbox

    removed = sandbox.remove_orphans(root, env)
    return Status(running, stale, runs.history(root), picture, error, removed=removed)
