"""`sgf build -a N --parallel P`: P isolated loops at once, waited for together (issue 14).

Each loop is an ordinary worktree loop (worktree.py) with its own loop id, PID file, log, run
record and containers; they share one sgf process, which is how `sgf status` groups them.
Their output reaches the terminal line by line, each line labelled with its loop's number;
Ctrl+C reaches sgf alone and is passed to every ralph (proc.run_many), so all of them stop
their agents, give back their claims and exit 130. When all have ended, each loop's
worktree is removed or kept exactly as for a single loop.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from sgf import ending, launch, proc, runs, safefile, worktree
from sgf.config import Isolation
from sgf.errors import SgfError
from sgf.loops import Launch
from sgf.plainlog import PlainLog


@dataclass(frozen=True, slots=True)
class Ended:
    """How one of the loops ended, and what to tell the user about it."""

    loop_id: str
    code: int
    notes: list[str]


def overall(codes: list[int]) -> int:
    """One exit code for all: interrupted, else error, else exhausted, else complete."""
    for code in (130, 1, 2):
        if code in codes:
            return code
    return max(codes, default=0)


def prepare(
    root: Path,
    request: Launch,
    count: int,
    *,
    stash: bool,
    env: Mapping[str, str],
    now: Callable[[], datetime],
) -> list[launch.Prepared]:
    """Prepare `count` isolated loops (a worktree each); undo them all if one fails."""
    if count > 1 and not request.is_afk():
        raise SgfError(
            "--parallel needs -a: several interactive sessions cannot share one terminal"
        )
    isolated = dataclasses.replace(request, isolation=Isolation.WORKTREE)
    prepared: list[launch.Prepared] = []
    try:
        for index in range(count):
            prepared.append(
                launch.prepare(root, isolated, stash=stash and index == 0, env=env, now=now)
            )
    except BaseException:
        for done in prepared:
            if done.worktree is not None:
                worktree.finish(root, done.worktree)  # no commits yet: simply removed
        raise
    return prepared


def run(
    root: Path,
    loops: list[launch.Prepared],
    *,
    env: Mapping[str, str],
    pid: int,
    now: Callable[[], datetime],
    out: proc.Sink,
) -> list[Ended]:
    """Run the prepared loops side by side; finish each one's worktree; say how each ended."""
    started = runs.now_iso(now)
    codes: list[int] | None = None
    with contextlib.ExitStack() as stack:
        jobs = []
        for number, loop in enumerate(loops, start=1):
            loop_id = str(loop.loop_id)
            stack.enter_context(runs.pid_file(root, loop_id, pid))
            log = stack.enter_context(safefile.append(loop.log, root=root))
            log.write(f"# sgf: {' '.join(loop.argv)}\n".encode())
            loop_env = {**env, "RALPH_RECORD": str(runs.record_path(root, loop_id)), **loop.env}
            label = f"[{number}] ".encode()
            jobs.append(proc.Job(loop.argv, loop.cwd(root), loop_env, PlainLog(log), label))
        try:
            codes = proc.run_many(jobs, out=out)
        finally:
            for index, loop in enumerate(loops):
                code = codes[index] if codes is not None else None
                outcome = launch.OUTCOMES.get(code, f"exit {code}") if code is not None else "error"
                ended = runs.Outcome(str(loop.loop_id), started, runs.now_iso(now), code, outcome)
                runs.record(root, ended)
    return [_ended(root, loop, code, env) for loop, code in zip(loops, codes, strict=True)]


def _ended(root: Path, loop: launch.Prepared, code: int, env: Mapping[str, str]) -> Ended:
    loop_id = str(loop.loop_id)
    notes = []
    try:
        if finished := launch.finish(root, loop):
            notes.append(finished)
    except SgfError as e:  # one loop's worktree must not keep the others' news from the user
        notes.append(f"warning: {e}")
    if released := ending.release_leftovers(root, loop_id, code, {**env, **loop.env}):
        notes.append(f"ralph died holding {', '.join(released)}: released")
    reason = ending.stop_reason(root, loop_id)
    notes.append(launch.meaning(code, loop.loop_id.stage, reason))
    return Ended(loop_id, code, notes)
