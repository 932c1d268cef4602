"""The pensa picture `sgf top` shows beside the loops: ready, in progress by whom, blocked,
needing a human, closed today; read through `pn … --json` (sgf never imports pensa's tracker).

Three `pn` runs cost a few hundred milliseconds of CPU, so `Boards` asks again at most once a
second per project, and only when pensa's database changed since (its files' size and mtime)
or the day did ("closed today"), or after `max_age` seconds as a safety net. A board holding
pn's error is asked again after `retry_after` seconds: pn may have failed for a moment (a
write holding the database, a slow start), and the claims it hid would otherwise stay hidden
until pensa next changes.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any

from sgf import proc
from sgf.errors import SgfError
from sgf.loop.loopstate import Task


@dataclass(frozen=True, slots=True)
class Claim:
    """An issue in progress and who holds it."""

    id: str
    title: str
    assignee: str


@dataclass(frozen=True, slots=True)
class Board:
    """A project's pensa picture."""

    ready: int = 0
    blocked: int = 0
    needs_human: int = 0
    open: int = 0
    working: tuple[Claim, ...] = ()
    closed_today: tuple[Task, ...] = ()
    error: str | None = None  # pn failed: why

    def held(self) -> dict[str, Task]:
        """Each actor's (loop id's) task in progress."""
        return {c.assignee: Task(c.id, c.title) for c in self.working}

    @classmethod
    def from_json(
        cls, status: Mapping[str, Any], working: Sequence[Any], closed: Sequence[Any], today: date
    ) -> Board:
        """Build the picture from `pn status`, `pn list --status in_progress` and
        `pn list --status closed` output; entries that are not issues are skipped."""

        def count(name: str) -> int:
            value = status.get(name)
            return value if isinstance(value, int) and not isinstance(value, bool) else 0

        claims = tuple(
            Claim(str(i["id"]), str(i.get("title", "")), str(i.get("assignee") or "?"))
            for i in working
            if isinstance(i, dict) and "id" in i
        )
        done = []
        for i in closed:
            if not isinstance(i, dict) or "id" not in i:
                continue
            try:
                when = datetime.fromisoformat(str(i.get("closed_at")).replace("Z", "+00:00"))
            except ValueError:
                continue
            if when.astimezone().date() == today:
                done.append(Task(str(i["id"]), str(i.get("title", ""))))
        return cls(
            ready=count("ready"),
            blocked=count("blocked"),
            needs_human=count("needs_human"),
            open=count("open"),
            working=claims,
            closed_today=tuple(done),
        )


def read(root: Path, env: Mapping[str, str], *, today: date) -> Board:
    """Ask pn for the project's picture; a pn that fails gives a Board with its error."""

    def pn(*args: str) -> Any:
        done = proc.run(["pn", *args, "--json"], cwd=root, env=env, timeout=30)
        return json.loads(done.stdout)

    try:
        status = pn("status")
        working = pn("list", "--status", "in_progress")
        closed = pn("list", "--status", "closed", "--sort", "updated", "-n", "200")
    except (SgfError, ValueError) as e:
        return Board(error=str(e).splitlines()[0] if str(e) else type(e).__name__)
    if not isinstance(status, dict) or not isinstance(working, list):
        return Board(error="pn printed something unexpected")
    return Board.from_json(status, working, closed if isinstance(closed, list) else [], today)


def _signature(root: Path) -> tuple[tuple[str, int, int], ...]:
    """What changes when the tracker may have: the database's files, and every committed
    file (pensa shards them by id, so a pull may change any one of them)."""
    folder = root / ".pensa"
    sig = []
    names = {"db.sqlite", "db.sqlite-wal", "db.sqlite-journal"}
    with contextlib.suppress(OSError):
        names.update(e.name for e in os.scandir(folder) if e.name.endswith(".jsonl"))
    for name in sorted(names):
        try:
            st = (folder / name).stat(follow_symlinks=False)
            sig.append((name, st.st_size, st.st_mtime_ns))
        except OSError:
            sig.append((name, -1, -1))
    return tuple(sig)


class Boards:
    """Each project's Board, asked of pn only when it may have changed."""

    def __init__(
        self,
        env: Mapping[str, str],
        *,
        min_interval: float = 1.0,
        max_age: float = 300.0,
        retry_after: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
        today: Callable[[], date] = date.today,
        reader: Callable[..., Board] = read,
    ) -> None:
        self.env = env
        self.min_interval = min_interval
        self.max_age = max_age
        self.retry_after = retry_after
        self.clock = clock
        self.today = today
        self.reader = reader
        self._cache: dict[Path, tuple[float, tuple[object, ...], Board]] = {}

    def get(self, root: Path) -> Board:
        """The project's board, from the cache unless pensa changed (at most once a second)."""
        now = self.clock()
        today = self.today()
        sig = (*_signature(root), today)
        cached = self._cache.get(root)
        if cached is not None:
            at, old_sig, board = cached
            age = now - at
            fresh = old_sig == sig and age < (
                self.max_age if board.error is None else self.retry_after
            )
            if fresh or age < self.min_interval:
                return board
        board = self.reader(root, self.env, today=today)
        self._cache[root] = (now, sig, board)
        return board
