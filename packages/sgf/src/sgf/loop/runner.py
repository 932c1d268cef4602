"""The one loop runner: whatever runs ralph, a loop is kept on disk the same way.

A single loop and each of `--parallel`'s loops get the same bookkeeping, in the same order:
their launch arguments for a restart (relaunch.py), a PID file (runs.py), an entry in the
per-user loop index (loopindex.py, how `sgf top --all` finds them), a log with sgf's header
and ralph's exit line, the outcome in history, and the same ending (ending.py).
Only how ralph's processes are driven differs, and that is the caller's `execute`: one ralph
on the terminal, or several side by side (proc.run_many).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from sgf import proc, safefile
from sgf.errors import SgfError
from sgf.image import sandboximage
from sgf.loop import ending, loopindex, relaunch, runs
from sgf.loop.launch import OUTCOMES, Prepared, meaning
from sgf.loop.loops import ExitCode
from sgf.loop.plainlog import PlainLog

Execute = Callable[[Sequence[proc.Job]], list[int]]


@dataclass(frozen=True, slots=True)
class Ran:
    """How ralph ended, and where a stopped loop's leftovers went."""

    code: int
    kept: str | None = None  # one line for the human: a dead ralph's workspace brought back


def run(
    root: Path,
    loops: Sequence[Prepared],
    *,
    env: Mapping[str, str],
    pid: int,
    now: Callable[[], datetime],
    execute: Execute,
) -> list[Ran]:
    """Run the prepared loops through `execute` (one job per loop, in order) under their PID
    files, index entries and logs; record each outcome on every exit path."""
    started = runs.now_iso(now)
    codes: list[int] | None = None
    kept: list[str | None] = [None] * len(loops)
    try:
        with contextlib.ExitStack() as stack:
            jobs, logs = [], []
            for number, loop in enumerate(loops, start=1):
                loop_id = str(loop.loop_id)
                # ralph appends the loop's run record here (`sgf status` reads it), and stops
                # after an iteration once the stop file is there (a group budget)
                loop_env = {
                    **env,
                    "RALPH_RECORD": str(runs.record_path(root, loop_id)),
                    "RALPH_STOP_FILE": str(runs.stop_path(root, loop_id)),
                    **loop.env,
                }
                if loop.request is not None:
                    relaunch.save(root, loop_id, loop.request)
                stack.enter_context(runs.pid_file(root, loop_id, pid))
                stack.enter_context(
                    loopindex.registered(root, loop_id, pid, started_at=started, env=loop_env)
                )
                log = stack.enter_context(safefile.append(loop.log, root=root))
                log.write(f"# sgf: {' '.join(loop.argv)}\n".encode())
                log.flush()
                logs.append(log)
                label = f"[{number}] ".encode()  # side by side; one ralph alone has no label
                # the terminal gets colours, the log plain text
                jobs.append(proc.Job(loop.argv, root, loop_env, PlainLog(log), label))
            codes = execute(jobs)
            died = False
            for code, log in zip(codes, logs, strict=True):
                log.write(f"# sgf: ralph exited with {code}\n".encode())
                log.flush()
                died = died or code not in ending.RALPH_CODES
            if died:  # its workspace waits: bring it back now, not at the next launch
                kept = [_recover(root, env)] + [None] * (len(loops) - 1)
    finally:
        for index, loop in enumerate(loops):
            runs.stop_path(root, str(loop.loop_id)).unlink(missing_ok=True)
            got = codes[index] if codes is not None else None
            outcome = OUTCOMES.get(got, f"exit {got}") if got is not None else "error"
            ended = runs.Outcome(str(loop.loop_id), started, runs.now_iso(now), got, outcome)
            runs.record(root, ended)
    return [Ran(code, note) for code, note in zip(codes, kept, strict=True)]


def _recover(root: Path, env: Mapping[str, str]) -> str | None:
    """After a ralph that died: stop its containers, then let ralph bring back the workspaces
    of the project's dead loops (`ralph --recover`); one line, or None."""
    try:
        sandboximage.remove_orphans(root, env)  # nothing may write the workspace meanwhile
        lines = ending.recover_workspaces(root, env)
    except SgfError as e:
        return f"warning: a dead loop's workspace waits for the next launch: {e}"
    return "; ".join(lines) or None


def notes(root: Path, loop: Prepared, ran: Ran, env: Mapping[str, str]) -> list[str]:
    """What to tell the user about one ended loop, in order: a dead ralph's workspace brought
    back, claims it still held, and what its exit code means (with the stop reason in
    ralph's record: a group's budget too, which ralph stopped for)."""
    loop_id = str(loop.loop_id)
    said = [ran.kept] if ran.kept else []
    if released := ending.release_leftovers(root, loop_id, ran.code, {**env, **loop.env}):
        said.append(f"ralph died holding {', '.join(released)}: released")
    reason = ending.stop_reason(root, loop_id)
    said.append(meaning(ran.code, loop.loop_id.stage, reason))
    interactive = loop.request is not None and not loop.request.is_afk()
    if interactive and ran.code != ExitCode.COMPLETE:
        # Claude Code's parting `claude --resume ...` names a session in the loop's own HOME,
        # gone with the loop (ralph says so below it); this is what works instead.
        said.append(f"the session is in its log: `sgf logs {loop_id}`")
    return said
