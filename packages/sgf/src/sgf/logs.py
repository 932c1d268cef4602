"""`sgf logs`: find a loop's log by its id (or a unique part of it) and print or follow it."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import BinaryIO

from sgf.errors import LoopNotFound
from sgf.loop import runs
from sgf.loop.loops import LoopId

POLL = 0.2  # seconds between looks at a growing log, like `tail -f`


def known(root: Path) -> list[str]:
    """Every loop id with a log, newest first (sgf's other logs, such as the sandbox build's
    and the notifier's, are no loops)."""
    logs = [p for p in (root / runs.LOGS).glob("*.log") if LoopId.parse(p.stem) is not None]
    return [p.stem for p in sorted(logs, key=lambda p: p.stat().st_mtime, reverse=True)]


def resolve(root: Path, prefix: str) -> str:
    """Return the loop id `prefix` names uniquely: the whole id, a prefix of it, or any part of
    it (`auth`, `20260226T143000`); LoopNotFound listing candidates otherwise."""
    ids = known(root)
    if prefix in ids:
        return prefix
    for matches in ([i for i in ids if i.startswith(prefix)], [i for i in ids if prefix in i]):
        if len(matches) == 1:
            return matches[0]
        if matches:
            raise LoopNotFound(f"{prefix!r} matches several loops: {', '.join(matches)}")
    recent = ", ".join(ids[:10]) if ids else "none yet"
    raise LoopNotFound(f"no loop {prefix!r}; recent loops: {recent}")


def newest(root: Path) -> str | None:
    """The loop `sgf logs` shows without an id: the newest running one, else the newest log."""
    live = [p for p in runs.scan(root) if p.alive()]
    if live:
        return live[-1].loop_id  # scan() sorts oldest first
    ids = known(root)
    return ids[0] if ids else None


def find(
    root: Path,
    prefix: str | None,
    *,
    wait: float = 0.0,
    stop: threading.Event | None = None,
    poll: float = POLL,
) -> str:
    """The loop to show: `prefix` resolved, or the newest; waits up to `wait` seconds for a
    loop (or its log) that has not started yet."""
    import time

    stop = stop or threading.Event()
    deadline = time.monotonic() + wait
    while True:
        try:
            if prefix is None:
                found = newest(root)
                if found is None:
                    raise LoopNotFound("no loop has run here yet; `sgf logs --wait 60` waits")
                return found
            starting = [
                p.loop_id
                for p in runs.scan(root)
                if p.alive() and prefix in p.loop_id and not runs.log_path(root, p.loop_id).exists()
            ]
            return starting[-1] if len(starting) == 1 else resolve(root, prefix)
        except LoopNotFound:
            if time.monotonic() >= deadline or stop.wait(poll):
                raise


def running(root: Path, loop_id: str) -> bool:
    """Tell whether the loop's sgf process is still alive."""
    return any(p.loop_id == loop_id and p.alive() for p in runs.scan(root))


def copy(
    root: Path,
    loop_id: str,
    out: BinaryIO,
    *,
    follow: bool,
    stop: threading.Event | None = None,
    poll: float = POLL,
) -> None:
    """Write the log to `out`; with `follow`, keep writing while the loop runs."""
    stop = stop or threading.Event()
    path = runs.log_path(root, loop_id)
    while not path.exists() and follow and running(root, loop_id):  # started, no log yet
        if stop.wait(poll):
            return
    with path.open("rb") as log:
        while True:
            live = follow and running(root, loop_id)  # checked before reading: no lost tail
            while chunk := log.read(65536):
                out.write(chunk)
            out.flush()
            if not live or stop.wait(poll):
                return
