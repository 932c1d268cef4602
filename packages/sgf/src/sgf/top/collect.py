"""One refresh of `sgf top`: the projects, their loops and pensa pictures, as a Snapshot."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from ralph.shared import pids

from sgf import proc
from sgf.image.containers import LabelledLoop, labelled_loops
from sgf.loop.loopstate import LoopRow, Reader
from sgf.top import discovery
from sgf.top.board import Board, Boards


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Everything the dashboard shows at one moment."""

    taken: datetime
    projects: tuple[Path, ...] = ()
    rows: tuple[LoopRow, ...] = ()
    boards: Mapping[Path, Board] = field(default_factory=dict)


class Collector:
    """Takes snapshots: cheap to call once a second (see Reader and Boards for the caching)."""

    def __init__(
        self,
        current: Path | None,
        *,
        all_projects: bool,
        env: Mapping[str, str],
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
        boards: Boards | None = None,
        reader: Reader | None = None,
        docker: Callable[[Mapping[str, str]], Sequence[LabelledLoop]] | None = None,
        docker_every: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.current = current
        self.all_projects = all_projects
        self.env = env
        self.now = now
        self.boards = boards or Boards(env)
        self.reader = reader or Reader()
        self.docker = docker or labelled_loops
        self.docker_every = docker_every
        self.clock = clock
        self._containers: tuple[float, Sequence[LabelledLoop]] | None = None
        self._seen: dict[Path, None] = {}  # every project shown so far, in order

    def containers(self) -> Sequence[LabelledLoop]:
        """Labelled running containers (`--all` only), asked of Docker every few seconds."""
        if not self.all_projects:
            return ()
        now = self.clock()
        if self._containers is None or now - self._containers[0] >= self.docker_every:
            self._containers = (now, self.docker(self.env))
        return self._containers[1]

    def snapshot(self) -> Snapshot:
        """Read every project's loops and pensa picture now."""
        now = self.now()
        containers = self.containers()
        found = discovery.projects(
            self.current, all_projects=self.all_projects, env=self.env, containers=containers
        )
        # a project stays in view once seen, so the loop just stopped there can be restarted
        # although no running loop announces the project any more
        self._seen.update(dict.fromkeys(found))
        roots = [*found, *(p for p in self._seen if p not in found and p.is_dir())]
        rows: list[LoopRow] = []
        boards: dict[Path, Board] = {}
        for root in roots:
            boards[root] = self.boards.get(root)
            rows += self.reader.rows(root, now=now, held=boards[root].held())
        rows += self._bare(containers, {r.key for r in rows}, set(roots), now)
        return Snapshot(now, tuple(roots), tuple(rows), boards)

    def _bare(
        self,
        containers: Sequence[LabelledLoop],
        known: set[tuple[str, str]],
        roots: set[Path],
        now: datetime,
    ) -> list[LoopRow]:
        """Rows for containers of a ralph that no sgf runs (no PID file, no index entry)."""
        rows = []
        for c in containers:
            root = Path(c.project)
            if root not in roots or (str(root), c.loop_id) in known or c.ralph_pid is None:
                continue
            pid = c.ralph_pid
            alive = proc.pid_alive(pid) and (
                c.ralph_start is None or pids.start_time(pid) == c.ralph_start
            )
            if alive:
                row = self.reader.row(root, c.loop_id, now=now, started=None)
                held = self.boards.get(root).held().get(c.loop_id)
                rows.append(replace(row, pid=pid, process_start=c.ralph_start, task=held))
        return rows
