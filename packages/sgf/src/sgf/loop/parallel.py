"""`sgf build -a N --parallel P`: P loops at once, waited for together.

Each loop is an ordinary loop with its own loop id, workspace (ralph's), prompt file, PID
file, log, run record, launch arguments, loop-index entry and containers, run by the same
runner as a single loop (runner.py); they share one sgf process, which is how `sgf status`
groups them. Their
output reaches the terminal line by line, each line labelled with its loop's number; Ctrl+C
reaches sgf alone and is passed to every ralph (proc.run_many), so all of them stop their
agents, give back their claims and exit 130. `--max-cost` and `--max-tokens` are the
group's (groupbudget.py): they are kept off each ralph's command line, where the config's
per-loop `max_cost`/`max_tokens` still apply. Each loop's commits land on the branch the
project has checked out as a single loop's do (ralph's integrate.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path

from sgf.config import Isolation
from sgf.errors import SgfError
from sgf.loop import launch
from sgf.loop.loops import Launch


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
    """Prepare `count` loops, each with a prompt file of its own.

    Each keeps the request as asked for `sgf top`'s restart: restarted alone, a loop is a
    group of one and its budget is its own."""
    if count > 1 and not request.is_afk():
        raise SgfError(
            "--parallel needs -a: several interactive sessions cannot share one terminal"
        )
    isolated = dataclasses.replace(request, isolation=Isolation.WORKTREE)
    per_loop = dataclasses.replace(isolated, max_cost=None, max_tokens=None)
    prepared: list[launch.Prepared] = []
    for index in range(count):
        loop = launch.prepare(root, per_loop, stash=stash and index == 0, env=env, now=now)
        prepared.append(dataclasses.replace(loop, request=isolated))
    return prepared
