"""`sgf logs`: find a loop's log by (a unique prefix of) its id and print or follow it."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import BinaryIO

from sgf import runs
from sgf.errors import LoopNotFound

POLL = 0.2  # seconds between looks at a growing log, like `tail -f`


def known(root: Path) -> list[str]:
    """Every loop id with a log, newest first."""
    logs = (root / runs.LOGS).glob("*.log")
    return [p.stem for p in sorted(logs, key=lambda p: p.stat().st_mtime, reverse=True)]


def resolve(root: Path, prefix: str) -> str:
    """Return the loop id `prefix` names uniquely; LoopNotFound listing candidates otherwise."""
    ids = known(root)
    if prefix in ids:
        return prefix
    matches = [i for i in ids if i.startswith(prefix)]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise LoopNotFound(f"{prefix!r} matches several loops: {', '.join(matches)}")
    recent = ", ".join(ids[:10]) if ids else "none yet"
    raise LoopNotFound(f"no loop {prefix!r}; recent loops: {recent}")


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
    with runs.log_path(root, loop_id).open("rb") as log:
        while True:
            live = follow and running(root, loop_id)  # checked before reading: no lost tail
            while chunk := log.read(65536):
                out.write(chunk)
            out.flush()
            if not live or stop.wait(poll):
                return
