"""Claims end with the loop: whatever way a loop ends, its tasks go back.

Agents claim with `pn` as the loop's `PN_ACTOR` (the loop id). A loop that stops with a task
still `in_progress` (Ctrl+C, SIGTERM/SIGHUP, an error, the watchdog, iterations exhausted)
would leave it claimed by a loop that no longer exists, and the next loop would skip it. So
ralph runs `pn release --held-by LOOP-ID` as it ends, through pn's command line (ralph never
imports pensa's tracker). A `kill -9` skips this; sgf's crash recovery releases those claims
instead.

Claims made since the attempt a stop cut short began (Ctrl+C, SIGTERM/SIGHUP, the --max-time
watchdog) are released with `--interrupted-since`: no agent gave up on those tasks, so pn's
stuck count leaves them out. A claim left by an attempt that ran to its end still counts.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

from ralph import pncli


def release(
    project: Path,
    *,
    loop_id: str,
    actor: str,
    why: str,
    env: Mapping[str, str],
    cut_short_since: datetime | None = None,
) -> list[str] | None:
    """Release the claims `actor` holds; the ids released, or None when pn could not run.

    Only a loop's own actor is released: a `PN_ACTOR` the user chose names claims ralph
    cannot tell apart from the user's own. `<loop-id>@<machine>` is the loop's own too: sgf
    names loops that publish claims through git so, as two machines may start
    loops with one id in the same second."""
    if actor.split("@", 1)[0] != loop_id:
        return None
    args = ["release", "--held-by", actor, "--actor", actor]
    if cut_short_since is not None:
        since = cut_short_since.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        args += ["--interrupted-since", since]
    released = pncli.listing(
        [*args, "--reason", f"loop {loop_id} ended: {why}"], cwd=project, env=env
    )
    if released is None:
        return None
    return [str(issue["id"]) for issue in released if isinstance(issue, dict)]
