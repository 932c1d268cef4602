#!/usr/bin/env python3
"""A recording stand-in for ralph, for sgf's tests (conftest.py's `fake_ralph` fixture).

It writes what it was given to $FAKE_RALPH_RECORD, prints a few lines, and exits with
$FAKE_RALPH_EXIT. $FAKE_RALPH_LEAVE names files (comma-separated) it appends a line to first,
as an interrupted iteration leaves changes. With $FAKE_RALPH_READY it writes that file and
waits for SIGINT, SIGTERM or SIGHUP (exit 130), recording the signals it got. With
$FAKE_RALPH_SPEND (USD) it is a loop under a budget it does not know of: it runs
$FAKE_RALPH_ITERATIONS iterations that end by themselves, then one that is still running
when sgf asks for the stop; each iteration appends an `iteration` line of that cost (and 1000
tokens) to its run record ($RALPH_RECORD). As ralph does, it looks for $RALPH_STOP_FILE
between iterations only, then writes its record's `end` with the file's line as the stop
reason and exits 2; a signal ends it with 130. `--check-options` is answered at once: 0, or
1 with $FAKE_RALPH_REFUSE as the reason (as ralph says it).
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
    """Write the record atomically: the test may be reading it while we write it, and the
    loops of a `--parallel` group each write it, so each through a file of its own."""
    tmp = RECORD.with_name(f"{RECORD.name}.{os.getpid()}.tmp")
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


def spend(cost: float, ending: int) -> NoReturn:
    def stop(signum: int, frame: FrameType | None) -> None:
        sys.exit(130)

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, stop)
    record = Path(os.environ["RALPH_RECORD"])
    requested = Path(os.environ["RALPH_STOP_FILE"])
    index = 0
    while not requested.exists():  # between iterations: the only place ralph looks
        index += 1
        if index > ending:  # this iteration runs on until sgf asks the group to stop
            deadline = time.monotonic() + 60
            while not requested.exists():
                if time.monotonic() > deadline:
                    sys.exit(99)  # never asked: the test fails on this exit code
                time.sleep(0.05)
        with record.open("a", encoding="utf-8") as f:
            f.write(json.dumps({"event": "iteration", "cost": cost, "tokens": 1000}) + "\n")
        print(f"fake ralph: iteration {index} done", flush=True)
    reason = requested.read_text(encoding="utf-8").strip()
    with record.open("a", encoding="utf-8") as f:
        f.write(json.dumps({"event": "end", "exit": 2, "stop_reason": reason}) + "\n")
    print(f"fake ralph: stopped: {reason}", flush=True)
    sys.exit(2)


def main() -> None:
    if "--check-options" in sys.argv:
        if refused := os.environ.get("FAKE_RALPH_REFUSE"):
            print(f"error: {refused}", file=sys.stderr)
            sys.exit(1)
        sys.exit(0)
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
        spend(float(cost), int(os.environ.get("FAKE_RALPH_ITERATIONS", "1")))
    if ready := os.environ.get("FAKE_RALPH_READY"):
        wait_for_a_signal(ready, data)
    sys.exit(int(os.environ.get("FAKE_RALPH_EXIT", "0")))


if __name__ == "__main__":
    main()
