"""Running a stage, start to end: one loop, or `--parallel N` loops of it, the same way.

The sequence is prepare (launch.py; parallel.py for N worktrees), run (runner.py: the
bookkeeping every loop gets; one ralph on the terminal, or N side by side under a group
budget, groupbudget.py), then end (runner.notes). The command line only parses the request,
calls `prepare` and `run` here, and prints what they return.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from sgf import proc
from sgf.loop import launch, parallel, runner, terminal
from sgf.loop.groupbudget import GroupBudget
from sgf.loop.launch import Prepared
from sgf.loop.loops import Launch


@dataclass(frozen=True, slots=True)
class Ended:
    """How one loop ended, and what to tell the user about it."""

    loop_id: str
    code: int
    notes: list[str]


def prepare(
    root: Path,
    request: Launch,
    *,
    parallel_loops: int | None,
    stash: bool,
    env: Mapping[str, str],
    now: Callable[[], datetime],
) -> list[Prepared]:
    """Check and assemble the stage's loop, or its `parallel_loops` isolated loops."""
    if parallel_loops:
        return parallel.prepare(root, request, parallel_loops, stash=stash, env=env, now=now)
    return [launch.prepare(root, request, stash=stash, env=env, now=now)]


def run(
    root: Path,
    loops: Sequence[Prepared],
    *,
    env: Mapping[str, str],
    pid: int,
    now: Callable[[], datetime],
    out: proc.Sink,
    on_terminal: bool = False,
    stdin_is_terminal: bool = False,
    budget: GroupBudget | None = None,
) -> list[Ended]:
    """Run the prepared loops to their end; say how each ended. A single loop without a
    group budget runs on the terminal (or teed to `out`); several run side by side, and a
    group budget, once reached, stops each after its running iteration (exit 2, as ralph's
    own budgets)."""

    def one(jobs: Sequence[proc.Job]) -> list[int]:
        [job] = jobs
        if on_terminal:
            return [terminal.run_on_pty(job.argv, cwd=job.cwd, env=job.env, log=job.log)]
        sinks = [out, job.log]
        tty = stdin_is_terminal
        return [proc.run_teed(job.argv, cwd=job.cwd, env=job.env, sinks=sinks, foreground=tty)]

    def many(jobs: Sequence[proc.Job]) -> list[int]:
        return proc.run_many(jobs, out=out, tick=budget.enforce if budget else None)

    grouped = len(loops) > 1 or budget is not None
    ran = runner.run(root, loops, env=env, pid=pid, now=now, execute=many if grouped else one)
    ended = []
    for loop, result in zip(loops, ran, strict=True):
        said = runner.notes(root, loop, result, env)
        ended.append(Ended(str(loop.loop_id), result.code, said))
    return ended


def group_budget(root: Path, request: Launch, loops: Sequence[Prepared]) -> GroupBudget | None:
    """The group's cost and token budget, from `--max-cost`/`--max-tokens` of a
    `--parallel` request (parallel.prepare keeps them off each ralph's command line)."""
    if request.max_cost is None and request.max_tokens is None:
        return None
    ids = [str(loop.loop_id) for loop in loops]
    return GroupBudget(root, ids, max_cost=request.max_cost, max_tokens=request.max_tokens)


def overall(codes: Sequence[int]) -> int:
    """One exit code for all loops (parallel.overall)."""
    return parallel.overall(list(codes))
