"""What each loop of a project is doing, as rows of plain data (`sgf top`, `sgf status --watch`).

Everything comes from files the loops already write: `.sgf/run/<id>.pid` (running or crashed),
`.sgf/logs/history.jsonl` (how loops ended), ralph's run record `.sgf/runs/<id>.jsonl`
(iteration i of N, cost, tokens, budgets, stop reason) and the tail of `.sgf/logs/<id>.log`
(last activity, and whether ralph is waiting for a usage limit to lift, which it only says in
its output). Nothing here writes, and nothing here knows about Textual or rich.

`Reader` keeps what it parsed and re-reads a file only when its size or mtime changed, so a
refresh every second over ten loops costs a handful of `stat` calls.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import NamedTuple

from sgf.loop import runs
from sgf.loop.loops import LoopId

TAIL_BYTES = 8192  # enough of a log's end to find its last few lines


class State(StrEnum):
    """What a loop is doing now."""

    RUNNING = "running"
    WAITING = "waiting"  # ralph waits for a usage limit to lift (or backs off a 429)
    STOPPED = "stopped"


class Task(NamedTuple):
    """The issue a loop holds: id and title."""

    id: str
    title: str


def _time(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@dataclass(frozen=True, slots=True)
class Progress:
    """What a loop's run record says (ralph's record.py): progress, spend, budgets, ending."""

    started_at: datetime | None = None
    iteration: int | None = None  # the latest iteration started
    iterations: int | None = None  # of this many
    cost: float = 0.0  # USD, finished iterations
    tokens: int = 0
    costs: tuple[float, ...] = ()  # per finished iteration, oldest first
    max_cost: float | None = None
    max_tokens: int | None = None
    max_time: str | None = None
    ended: bool = False
    stop_reason: str | None = None
    exit_code: int | None = None
    seconds: float | None = None  # the loop's wall time, once ended

    @classmethod
    def from_events(cls, events: Iterable[Mapping[str, object]]) -> Progress:
        """Fold record lines into progress; unknown events and ill-typed fields are skipped."""
        values: dict[str, object] = {}
        costs: list[float] = []
        tokens = 0
        end_cost: float | None = None
        end_tokens: int | None = None
        for e in events:
            kind = e.get("event")
            if kind == "start":
                values["started_at"] = _time(e.get("at"))
                values["iterations"] = _int(e.get("iterations"))
                values["max_cost"] = _number(e.get("max_cost"))
                values["max_tokens"] = _int(e.get("max_tokens"))
                max_time = e.get("max_time")
                values["max_time"] = str(max_time) if max_time is not None else None
            elif kind == "iteration_start":
                values["iteration"] = _int(e.get("index"))
                if (total := _int(e.get("total"))) is not None:
                    values["iterations"] = total
            elif kind == "iteration":
                costs.append(_number(e.get("cost")) or 0.0)
                tokens += _int(e.get("tokens")) or 0
            elif kind == "end":
                values["ended"] = True
                reason = e.get("stop_reason")
                values["stop_reason"] = str(reason) if reason else None
                values["exit_code"] = _int(e.get("exit"))
                values["seconds"] = _number(e.get("seconds"))
                # the end line's totals are the loop's own word on every iteration it ran
                # (each view shows them, not its own count)
                if (count := _int(e.get("iterations"))) is not None:
                    values["iteration"] = count
                if (spent := _number(e.get("cost"))) is not None:
                    end_cost = spent
                if (used := _int(e.get("tokens"))) is not None:
                    end_tokens = used
        return cls(
            cost=round(sum(costs) if end_cost is None else end_cost, 6),
            tokens=tokens if end_tokens is None else end_tokens,
            costs=tuple(costs),
            **values,  # type: ignore[arg-type]  # values are typed above
        )


_WAITING = re.compile(
    r"^(?:warning: usage limit reached"
    r"|warning: .*(?:rate limited|limit holds).*: retry \d+ in "
    r"|waiting \S+ \(Ctrl\+C to stop\)$)"
)
_RESETS = re.compile(r"^warning: usage limit reached; it resets at (.+)$")


def waiting(lines: Sequence[str]) -> str | None:
    """What ralph is waiting for, when the log's last line says it waits; else None.

    ralph says so only in its output (loop.py `_afk_with_limits`): a warning, then a
    countdown that ends in "retrying the same iteration"."""
    shown = [line.strip() for line in lines if line.strip()]
    if not shown or not _WAITING.match(shown[-1]):
        return None
    for line in reversed(shown):
        if match := _RESETS.match(line):
            return f"usage limit, resets at {match.group(1)}"
    return "usage limit"


def tail(path: Path, size: int = TAIL_BYTES) -> list[str]:
    """The last lines of a file (the first may be cut); none when it cannot be read."""
    try:
        with path.open("rb") as f:
            end = f.seek(0, 2)
            f.seek(max(0, end - size))
            data = f.read(size)
    except OSError:
        return []
    return data.decode("utf-8", errors="replace").splitlines()


@dataclass(frozen=True, slots=True)
class LoopRow:
    """One loop as `sgf top` and `sgf status --watch` show it."""

    project: Path
    loop_id: str
    stage: str
    spec: str | None
    state: State
    reason: str | None = None  # why it stopped, or what it waits for
    pid: int | None = None  # sgf's (or, for a bare ralph's container, ralph's)
    process_start: int | None = None  # that process's start time, against PID reuse
    iteration: int | None = None
    iterations: int | None = None
    task: Task | None = None
    cost: float = 0.0
    max_cost: float | None = None
    tokens: int = 0
    max_tokens: int | None = None
    elapsed: float | None = None  # seconds since it started (until it ended)
    last_activity: datetime | None = None  # when its log last grew
    costs: tuple[float, ...] = ()  # per iteration, for the sparkline
    log: Path | None = None  # where its one-liners are

    @property
    def key(self) -> tuple[str, str]:
        """Identifies the row across refreshes."""
        return (str(self.project), self.loop_id)

    @property
    def live(self) -> bool:
        """Tell whether the loop's process runs (running or waiting)."""
        return self.state is not State.STOPPED


class _Signature(NamedTuple):
    size: int
    mtime_ns: int


def _signature(path: Path) -> _Signature | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return _Signature(stat.st_size, stat.st_mtime_ns)


class Reader:
    """Builds a project's rows, re-reading a record or log only when it changed."""

    def __init__(self, *, recent: int = 5) -> None:
        self.recent = recent  # stopped loops shown per project
        self._records: dict[Path, tuple[_Signature | None, Progress]] = {}
        self._logs: dict[Path, tuple[_Signature | None, str | None]] = {}
        self._history: dict[tuple[Path, int], tuple[_Signature | None, list[runs.Outcome]]] = {}

    def history(self, root: Path, limit: int) -> list[runs.Outcome]:
        """The latest outcomes, newest first (the history only grows: read it when it did)."""
        sig = _signature(root / runs.HISTORY)
        cached = self._history.get((root, limit))
        if cached is None or cached[0] != sig:
            cached = (sig, runs.history(root, limit=limit) if sig else [])
            self._history[(root, limit)] = cached
        return cached[1]

    def progress(self, root: Path, loop_id: str) -> Progress:
        """The loop's run record, folded."""
        path = runs.record_path(root, loop_id)
        sig = _signature(path)
        cached = self._records.get(path)
        if cached is None or cached[0] != sig:
            events = runs.read_record(root, loop_id) if sig else []
            cached = (sig, Progress.from_events(events))
            self._records[path] = cached
        return cached[1]

    def activity(self, root: Path, loop_id: str) -> tuple[datetime | None, str | None]:
        """When the loop's log last grew, and what ralph is waiting for (None: not waiting)."""
        path = runs.log_path(root, loop_id)
        sig = _signature(path)
        cached = self._logs.get(path)
        if cached is None or cached[0] != sig:
            cached = (sig, waiting(tail(path)) if sig else None)
            self._logs[path] = cached
        when = datetime.fromtimestamp(sig.mtime_ns / 1e9, UTC) if sig else None
        return when, cached[1]

    def rows(
        self, root: Path, *, now: datetime, held: Mapping[str, Task] | None = None
    ) -> list[LoopRow]:
        """The project's loops: running ones first (oldest first), then the latest stopped."""
        held = held or {}
        now = now.astimezone(UTC)
        out: list[LoopRow] = []
        seen: set[str] = set()
        crashed: list[LoopRow] = []
        for p in runs.scan(root):
            seen.add(p.loop_id)
            row = self.row(root, p.loop_id, now=now, started=p.started)
            if p.alive():
                task = held.get(p.loop_id)
                out.append(replace(row, pid=p.pid, process_start=p.process_start, task=task))
            else:
                reason = "crashed: its sgf died (recovered at next launch)"
                crashed.append(replace(row, state=State.STOPPED, reason=reason))
        stopped = []
        for o in self.history(root, self.recent + len(seen)):
            if o.loop_id in seen:
                continue
            seen.add(o.loop_id)
            start, end = _time(o.started_at), _time(o.ended_at)
            row = self.row(root, o.loop_id, now=now, started=start)
            progress = self.progress(root, o.loop_id)
            if progress.seconds is None and start and end:
                row = replace(row, elapsed=max(0.0, (end - start).total_seconds()))
            reason = progress.stop_reason or o.outcome
            stopped.append(replace(row, state=State.STOPPED, reason=reason))
        return out + crashed + stopped[: self.recent]

    def row(
        self,
        root: Path,
        loop_id: str,
        *,
        now: datetime,
        started: datetime | None,
    ) -> LoopRow:
        """One loop from its record and log, as running (or waiting); callers set the rest."""
        parsed = LoopId.parse(loop_id)
        p = self.progress(root, loop_id)
        last, waits = self.activity(root, loop_id)
        start = p.started_at or started
        if p.seconds is not None:
            elapsed: float | None = p.seconds
        else:
            elapsed = max(0.0, (now - start).total_seconds()) if start else None
        return LoopRow(
            project=root,
            loop_id=loop_id,
            stage=parsed.stage.value if parsed else "?",
            spec=parsed.spec if parsed else None,
            state=State.WAITING if waits else State.RUNNING,
            reason=waits,
            iteration=p.iteration,
            iterations=p.iterations,
            cost=p.cost,
            max_cost=p.max_cost,
            tokens=p.tokens,
            max_tokens=p.max_tokens,
            elapsed=elapsed,
            last_activity=last,
            costs=p.costs,
            log=runs.log_path(root, loop_id),
        )
