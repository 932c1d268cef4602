#!/usr/bin/env python3
"""A recording stand-in for ralph, for sgf's tests (conftest.py's `fake_ralph` fixture).

It writes what it was given to $FAKE_RALPH_RECORD, prints a few lines, and exits with
$FAKE_RALPH_EXIT. $FAKE_RALPH_LEAVE names files (comma-separated) it appends a line to first,
as an interrupted iteration leaves changes. With $FAKE_RALPH_READY it writes that file and
waits for SIGINT, SIGTERM or SIGHUP (exit 130), recording the signals it got. With
$FAKE_RALPH_SPEND (USD) it appends an `iteration` line of that cost (and 1000 tokens) to its
run record ($RALPH_RECORD) every $FAKE_RALPH_EVERY seconds until a signal stops it (exit 130),
as a loop under a budget it does not know of.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from types import FrameType
from typing import Any, NoReturn

RECORD = Path(os.environ["FAKE_RALPH_RECORD"])
RUN_DIR = Path.cwd() / ".sgf" / "run"


def save(data: dict[str, Any]) -> None:
    """Write the record atomically: the test may be reading it while we write it."""
    tmp = RECORD.with_suffix(".tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, RECORD)


def wait_for_a_signal(ready: str, data: dict[str, Any]) -> NoReturn:
    def stop(signum: int, frame: FrameType | None) -> None:
        data["signals"].append(signal.Signals(signum).name)
        save(data)
        sys.exit(130)

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, stop)
    # atomically: the test reads the PID as soon as the file exists
    Path(ready + ".tmp").write_text(str(os.getpid()))
    os.replace(ready + ".tmp", ready)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        signal.pause()
    sys.exit(99)


def spend(cost: float, every: float) -> NoReturn:
    def stop(signum: int, frame: FrameType | None) -> None:
        sys.exit(130)

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, stop)
    record = Path(os.environ["RALPH_RECORD"])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with record.open("a", encoding="utf-8") as f:
            f.write(json.dumps({"event": "iteration", "cost": cost, "tokens": 1000}) + "\n")
        time.sleep(every)
    sys.exit(2)


def main() -> None:
    data: dict[str, Any] = {
        "argv": sys.argv[1:],
        "cwd": os.getcwd(),
        "pid": os.getpid(),
        "env": {k: v for k, v in os.environ.items() if k.startswith(("SGF_", "FAKE_"))},
        "pid_files": {p.name: p.read_text().strip() for p in sorted(RUN_DIR.glob("*.pid"))},
        "signals": [],
    }
    save(data)
    for name in filter(None, os.environ.get("FAKE_RALPH_LEAVE", "").split(",")):
        with Path(name).open("a", encoding="utf-8") as f:
            f.write("left by an interrupted iteration\n")
    print("fake ralph: iteration 1 of", sys.argv[-2], flush=True)
    print("fake ralph: done", flush=True)
    if cost := os.environ.get("FAKE_RALPH_SPEND"):
        spend(float(cost), float(os.environ.get("FAKE_RALPH_EVERY", "0.2")))
    if ready := os.environ.get("FAKE_RALPH_READY"):
        wait_for_a_signal(ready, data)
    sys.exit(int(os.environ.get("FAKE_RALPH_EXIT", "0")))


if __name__ == "__main__":
    main()
