"""`sgf status`: running loops, recent outcomes and the pensa picture, as data."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sgf import git, pncli
from sgf.errors import SgfError
from sgf.loop import runs
from sgf.loop.loops import LoopId
from sgf.loop.loopstate import Progress


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
    iteration: int | None = None  # the iteration running now, of `iterations`
    iterations: int | None = None
    task: str | None = None  # the task the loop holds, and its title
    task_title: str | None = None
    cost: float = 0.0  # USD so far, from the run record
    tokens: int = 0  # so far, from the run record
    idle_seconds: int | None = None  # since the loop's log last grew
    # Loops started together by `sgf build --parallel N` share one sgf process: the group
    # is named after its first loop. None for a loop on its own.
    group: str | None = None


@dataclass(frozen=True, slots=True)
class Status:
    """Everything `sgf status` shows."""

    running: list[Running]
    stale: list[str]  # PID files of crashed loops (the next launch recovers them)
    recent: list[runs.Outcome]
    pensa: pncli.Picture | None
    pensa_error: str | None = None
    warnings: list[str] = field(default_factory=list)  # e.g. the image's pn is not the host's
    removed: list[str] = field(default_factory=list)  # orphan containers of killed loops

    totals: dict[str, dict[str, Any]] = field(default_factory=dict)  # by loop id, from records

    def to_json(self) -> dict[str, Any]:
        """The `--json` shape, keys in a fixed order."""
        return {
            "running": [asdict(r) for r in self.running],
            "stale": list(self.stale),
            "recent": [{**asdict(o), **self.totals.get(o.loop_id, {})} for o in self.recent],
            "pensa": asdict(self.pensa) if self.pensa else None,
            "pensa_error": self.pensa_error,
            "removed_orphans": list(self.removed),
            "warnings": list(self.warnings),
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
        progress = _progress(runs.read_record(root, p.loop_id))
        log = runs.log_path(root, p.loop_id)
        try:
            idle = max(0, int(current.timestamp() - log.stat().st_mtime))
        except OSError:
            idle = None
        running.append(
            Running(
                loop_id=p.loop_id,
                stage=parsed.stage.value if parsed else "?",
                spec=parsed.spec if parsed else None,
                pid=p.pid,
                started_at=p.started.strftime("%Y-%m-%dT%H:%M:%SZ"),
                uptime_seconds=max(0, int((current - p.started).total_seconds())),
                log=str(log.relative_to(root)),
                idle_seconds=idle,
                **progress,
            )
        )
    running = _grouped(root, running)
    try:
        picture: pncli.Picture | None = pncli.picture(root, env)
        error = None
        if running:
            running = _with_tasks(running, pncli.in_progress(root, env))
    except SgfError as e:
        picture, error = None, str(e)
    history = runs.history(root)
    totals = {o.loop_id: _totals(runs.read_record(root, o.loop_id)) for o in history}
    from sgf.image import sandboximage

    removed = sandboximage.remove_orphans(root, env)
    return Status(
        running,
        stale,
        history,
        picture,
        error,
        removed=removed,
        warnings=[*sandboximage.image_warnings(root, env), *_quarantined(root), *_waiting(root)],
        totals={k: v for k, v in totals.items() if v},
    )


def _quarantined(root: Path) -> list[str]:
    """A line per quarantined iteration (ralph: commits that changed protected paths)."""
    return [
        f"quarantined commits on {ref}: review them with `git log --stat {ref}` (never check "
        f"it out), then `git update-ref -d {ref}`"
        for ref in git.quarantined(root)
    ]


def _waiting(root: Path) -> list[str]:
    """A line per loop branch whose commits could not land (edits in the way, a conflict)."""
    return [
        f"{branch} holds {count} commit(s) of a loop that did not land: "
        f"`git merge --ff-only {branch}` (or rebase it first), then `git branch -d {branch}`"
        for branch, count in git.waiting(root)
    ]


def _progress(events: list[dict[str, Any]]) -> dict[str, Any]:
    """Iteration i of N, cost and tokens so far: the fold `sgf top` makes of the same record."""
    p = Progress.from_events(events)
    return {
        "iteration": p.iteration,
        "iterations": p.iterations,
        "cost": p.cost,
        "tokens": p.tokens,
    }


def _totals(events: list[dict[str, Any]]) -> dict[str, Any]:
    """A finished loop's totals and stop reason, from its record's `end` line, folded the
    way `sgf top` folds it."""
    ends = [e for e in events if e.get("event") == "end"]
    if not ends:
        return {}
    end, p = ends[-1], Progress.from_events(events)
    return {
        "stop_reason": p.stop_reason,
        "iterations": p.iteration or 0,
        "planned": p.iterations,
        "tasks_closed": end.get("tasks_closed"),
        "cost": p.cost,
        "tokens": p.tokens,
        "seconds": p.seconds,
        "guardrails": guardrails(events),
    }


def guardrails(events: list[dict[str, Any]]) -> str:
    """What ralph's guardrails did in a loop, from its record: `2 refused, 1 sent back`."""
    fired = [
        g
        for e in events
        if e.get("event") == "iteration" and isinstance(e.get("guardrails"), list)
        for g in e["guardrails"]
        if isinstance(g, dict)
    ]
    counts = {
        "refused": sum(g.get("hook") == "guard" for g in fired),
        "sent back": sum(g.get("hook") == "stop" and not g.get("released") for g in fired),
        "let go": sum(g.get("hook") == "stop" and g.get("released") is True for g in fired),
        # `check` lines say the verdict; `merge_check` ones are older ralphs' records
        "check failed": sum(
            (e.get("event") == "check" and e.get("landed") is False)
            or (e.get("event") == "merge_check" and e.get("passed") is False)
            for e in events
        ),
    }
    return ", ".join(f"{n} {what}" for what, n in counts.items() if n)


def _with_tasks(running: list[Running], working: list[pncli.Issue]) -> list[Running]:
    """Each loop's current task: the in-progress issue its loop id holds."""
    from dataclasses import replace

    held = {i.assignee.split("@", 1)[0]: i for i in working if i.assignee}  # <loop-id>@<machine>
    return [
        replace(r, task=held[r.loop_id].id, task_title=held[r.loop_id].title)
        if r.loop_id in held
        else r
        for r in running
    ]


def _grouped(root: Path, running: list[Running]) -> list[Running]:
    """Name the group of loops that share an sgf process; list each group together."""
    from dataclasses import replace

    by_pid: dict[int, list[str]] = {}
    for r in running:
        by_pid.setdefault(r.pid, []).append(r.loop_id)
    out = []
    for r in running:
        members = by_pid[r.pid]
        out.append(replace(r, group=min(members) if len(members) > 1 else None))
    return sorted(out, key=lambda r: (r.group or r.loop_id, r.loop_id))
