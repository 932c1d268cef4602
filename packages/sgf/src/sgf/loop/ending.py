"""After ralph ends: claims a dead ralph could not give back, and the stop reason.

ralph releases its loop's claims on every ending it lives through. One it does not live
through (`kill -9`, the OOM killer) leaves them held by a loop id nobody runs any more; sgf,
still alive, gives them back at once, so the next loop never waits for `pn doctor`'s 30
minutes. The stop reason comes from the run record ralph wrote, so the advice printed for
exit 2 names what really stopped the loop (a budget is not "iterations exhausted").
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from sgf import proc
from sgf.errors import SgfError
from sgf.loop import runs
from sgf.loop.loops import ExitCode

RALPH_CODES = frozenset(ExitCode)  # the exits ralph makes itself, having released its claims


def release_leftovers(root: Path, loop_id: str, code: int, env: Mapping[str, str]) -> list[str]:
    """Give back what `loop_id` still holds after a ralph that died; the ids released.

    Nothing is done after an exit ralph made itself, or when pn cannot be run. The loop's
    actor is `PN_ACTOR` when that is `<loop-id>@<machine>` (claims through git), else its id."""
    if code in RALPH_CODES or proc.which("pn", env) is None:
        return []
    named = env.get("PN_ACTOR", "")
    actor = named if named.startswith(loop_id + "@") else loop_id
    why = f"loop {loop_id} ended: ralph died (exit {code})"
    argv = ["pn", "release", "--held-by", actor, "--actor", actor, "--reason", why, "--json"]
    try:
        done = proc.run(argv, cwd=root, env=env, check=False, timeout=60)
    except SgfError:
        return []
    try:
        released = json.loads(done.stdout) if done.returncode == 0 else []
    except ValueError:
        return []
    return [str(i["id"]) for i in released if isinstance(i, dict) and "id" in i]


def recover_workspaces(root: Path, env: Mapping[str, str]) -> list[str]:
    """Have ralph bring back the workspaces of the project's dead loops (`ralph --recover`:
    their commits to `sgf/<loop-id>`, their leftovers to the stash); ralph's lines."""
    if proc.which("ralph", env) is None:
        return []
    done = proc.run(["ralph", "--recover"], cwd=root, env=env, check=False, timeout=600)
    lines = (done.stdout + done.stderr).splitlines()
    return [line.strip() for line in lines if line.strip()]


def stop_reason(root: Path, loop_id: str) -> str | None:
    """The stop reason in the loop's run record (`end` line), or None."""
    ends = [e for e in runs.read_record(root, loop_id) if e.get("event") == "end"]
    reason = ends[-1].get("stop_reason") if ends else None
    return reason if isinstance(reason, str) and reason else None
