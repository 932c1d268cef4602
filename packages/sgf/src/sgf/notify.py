"""Telling someone: the `notify` command of `.sgf/config.toml` (or `--notify`) runs
on the host with one JSON event on stdin when a loop ends, when a budget stopped it, and for
each task handed to a human while it runs (when the iteration that handed it over ends).

The command is started detached, through `python -m sgf.notify` with a timeout, its output
appended to `.sgf/logs/notify.log`: a notifier that fails, hangs or is slow never holds up or
breaks a loop, nor the sgf that ran it.
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from sgf import proc
from sgf.errors import SgfError
from sgf.loop import runs
from sgf.loop.loopstate import Progress

LOG = runs.LOGS / "notify.log"
TIMEOUT = 30.0  # seconds a notifier may take before its process group is killed


def loop_events(
    root: Path, loop_id: str, *, stage: str, code: int, stuck: Sequence[tuple[str, str]] = ()
) -> list[dict[str, Any]]:
    """The events for one loop that ended with `code`: a `stuck` event per task handed to a
    human (`stuck`: id and title), a `budget` event when a budget stopped it, and `end`."""
    p = Progress.from_events(runs.read_record(root, loop_id))
    base = {"project": str(root), "loop_id": loop_id, "stage": stage}
    events: list[dict[str, Any]] = [
        {"event": "stuck", **base, "task": task, "title": title} for task, title in stuck
    ]
    figures = {
        "stop_reason": p.stop_reason,
        "exit_code": code,
        "iterations": p.iteration or 0,
        "cost": p.cost,
        "tokens": p.tokens,
        "seconds": p.seconds,
    }
    if (p.stop_reason or "").startswith("budget reached"):
        events.append({"event": "budget", **base, **figures})
    events.append({"event": "end", **base, **figures})
    return events


def send(
    command: str,
    events: Sequence[Mapping[str, Any]],
    *,
    root: Path,
    env: Mapping[str, str],
    timeout: float = TIMEOUT,
) -> list[str]:
    """Start the notifier once per event, detached; never raises. The problems, if any, as
    lines to show (the notifier's own failures go to its log)."""
    problems = []
    for event in events:
        argv = [sys.executable, "-m", "sgf.notify", f"{timeout:g}", command, json.dumps(event)]
        try:
            proc.spawn_detached(argv, cwd=root, env=env, output=root / LOG, append=True)
        except (SgfError, OSError) as e:
            problems.append(f"notify: could not start {command!r}: {e}")
    return problems


def stuck_now(root: Path, env: Mapping[str, str]) -> dict[str, str]:
    """The tasks handed to a human now (`pn list -a human`): id to title; none without pn."""
    try:
        done = proc.run(["pn", "list", "-a", "human", "--json"], cwd=root, env=env, timeout=60)
        listed = json.loads(done.stdout)
    except (SgfError, ValueError):
        return {}
    if not isinstance(listed, list):
        return {}
    return {
        str(i["id"]): str(i.get("title", "")) for i in listed if isinstance(i, dict) and "id" in i
    }


class Notifier:
    """The notifier of one stage run: what was stuck before it, and the events after it."""

    def __init__(
        self,
        command: str | None,
        root: Path,
        stage: str,
        *,
        env: Mapping[str, str],
        timeout: float = TIMEOUT,
    ) -> None:
        self.command = command
        self.root = root
        self.stage = stage
        self.env = env
        self.timeout = timeout
        self.told = set(stuck_now(root, env)) if command else set()  # stuck before the run
        self.problems: list[str] = []

    def _newly_stuck(self) -> list[tuple[str, str]]:
        found = [(k, v) for k, v in stuck_now(self.root, self.env).items() if k not in self.told]
        self.told.update(k for k, _ in found)
        return found

    @contextlib.contextmanager
    def watching(self, loop_id: str, *, every: float = 1.0) -> Iterator[None]:
        """While the loop runs, tell each task handed to a human when the iteration that
        handed it over ends: the run records change then (a `stat` a second; pn only then)."""
        if not self.command:
            yield
            return
        stop = threading.Event()

        def watch() -> None:
            seen = _records(self.root)
            while not stop.wait(every):
                if (now := _records(self.root)) == seen:
                    continue
                seen = now
                events = [
                    {"event": "stuck", "project": str(self.root), "loop_id": loop_id,
                     "stage": self.stage, "task": task, "title": title}
                    for task, title in self._newly_stuck()
                ]  # fmt: skip
                self.problems += send(
                    self.command or "", events, root=self.root, env=self.env, timeout=self.timeout
                )

        thread = threading.Thread(target=watch, name="sgf-notify-stuck", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join(timeout=120)

    def ended(self, loops: Sequence[tuple[str, int]]) -> list[str]:
        """Tell about the loops (id, exit code) that ended; problems starting it, as lines."""
        if not self.command:
            return []
        stuck = self._newly_stuck()  # handed over since the watcher last looked
        events = []
        for number, (loop_id, code) in enumerate(loops):
            # a task handed to a human is told once, with the first loop of the run
            mine = stuck if number == 0 else []
            events += loop_events(self.root, loop_id, stage=self.stage, code=code, stuck=mine)
        sent = send(self.command, events, root=self.root, env=self.env, timeout=self.timeout)
        return [*self.problems, *sent]


def _records(root: Path) -> tuple[tuple[str, int, int], ...]:
    """Each run record's name, size and mtime: what changes when an iteration ends."""
    found = []
    for path in sorted((root / runs.RECORDS).glob("*.jsonl")):
        try:
            st = path.stat()
        except OSError:
            continue
        found.append((path.name, st.st_size, st.st_mtime_ns))
    return tuple(found)


def main(argv: Sequence[str]) -> int:
    """`python -m sgf.notify TIMEOUT COMMAND EVENT`: run COMMAND with EVENT on stdin, and
    say in the log (our stdout) how it went."""
    timeout, command, event = float(argv[0]), argv[1], argv[2]
    kind = json.loads(event).get("event")
    print(f"notify {kind}: {command}", flush=True)
    try:
        status = proc.feed(
            ["sh", "-c", command],
            cwd=Path.cwd(),
            env=None,
            data=event.encode() + b"\n",
            timeout=timeout,
        )
    except SgfError as e:
        print(f"notify {kind}: {e}", flush=True)
        return 1
    if status is None:
        print(f"notify {kind}: killed after {timeout:g} s", flush=True)
        return 1
    if status != 0:
        print(f"notify {kind}: exited with {status}", flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
