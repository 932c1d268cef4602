"""Loop bookkeeping on disk: `.sgf/run/<loop-id>.pid`, `.sgf/logs/<loop-id>.log` and history.

A PID file holds the PID of the sgf process that runs the loop and that process's start time
(from /proc), so a PID reused by another process after a reboot or a crash is recognised as
a dead loop and recovery runs. It exists exactly while that sgf runs; one left
behind by a dead process means the loop crashed.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from ralph.shared import pids

from sgf import proc, safefile

RUN = Path(".sgf") / "run"
RECORDS = Path(".sgf") / "runs"
LOGS = Path(".sgf") / "logs"
HISTORY = LOGS / "history.jsonl"


@dataclass(frozen=True, slots=True)
class PidFile:
    """One `.sgf/run/<loop-id>.pid` as found on disk."""

    loop_id: str
    path: Path
    pid: int | None  # None: unreadable, treated as stale
    started: datetime  # when the file was written
    process_start: int | None = None  # /proc start time; None in files of older sgf

    def alive(self) -> bool:
        """Tell whether the sgf that wrote this file still runs (the same process, not a
        newer one that got its PID)."""
        if self.pid is None or not proc.pid_alive(self.pid):
            return False
        return self.process_start is None or pids.start_time(self.pid) == self.process_start


def pid_path(root: Path, loop_id: str) -> Path:
    """Where the loop's PID file lives."""
    return root / RUN / f"{loop_id}.pid"


def record_path(root: Path, loop_id: str) -> Path:
    """Where ralph writes the loop's run record (JSON lines, ralph's record.py)."""
    return root / RECORDS / f"{loop_id}.jsonl"


def read_record(root: Path, loop_id: str) -> list[dict[str, object]]:
    """The loop's run record events; garbage lines and a missing file give nothing."""
    try:
        text = record_path(root, loop_id).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    events = []
    for line in text.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            events.append(event)
    return events


def stop_path(root: Path, loop_id: str) -> Path:
    """Where sgf asks the loop's ralph to stop after its running iteration (ralph's
    `--stop-file`): next to the run record, which no sandbox sees."""
    return root / RECORDS / f"{loop_id}.stop"


def request_stop(root: Path, loop_id: str, reason: str) -> None:
    """Ask the loop to start no iteration (it finishes and lands the running one first, then
    exits 2 with `reason` as its stop reason)."""
    safefile.replace(stop_path(root, loop_id), reason.encode() + b"\n", root=root)


def log_path(root: Path, loop_id: str) -> Path:
    """Where the loop's log lives."""
    return root / LOGS / f"{loop_id}.log"


def scan(root: Path) -> list[PidFile]:
    """Return every PID file in `.sgf/run/`, oldest first."""
    found = []
    for path in sorted((root / RUN).glob("*.pid")):
        try:
            # garbage is "unreadable" (stale), never a traceback in `sgf status`
            text = path.read_text(encoding="utf-8", errors="replace").strip()
            stat = path.stat()
        except FileNotFoundError:  # removed while we looked: its loop just ended
            continue
        pid, process_start = _parse(text)
        started = datetime.fromtimestamp(stat.st_mtime, UTC)
        found.append(PidFile(path.name.removesuffix(".pid"), path, pid, started, process_start))
    return sorted(found, key=lambda p: p.started)


def _parse(text: str) -> tuple[int | None, int | None]:
    """`PID START` (or a bare `PID` from an older sgf); garbage is (None, None)."""
    parts = text.split()
    if not parts or not all(p.isascii() and p.isdigit() for p in parts) or len(parts) > 2:
        return None, None
    return int(parts[0]), int(parts[1]) if len(parts) == 2 else None


@contextlib.contextmanager
def pid_file(root: Path, loop_id: str, pid: int) -> Iterator[Path]:
    """Hold `.sgf/run/<loop-id>.pid` for the duration of the block; removed on every exit."""
    path = pid_path(root, loop_id)
    start = pids.start_time(pid)
    text = f"{pid} {start}\n" if start is not None else f"{pid}\n"
    safefile.replace(path, text.encode(), root=root)  # a link or a folder there is refused
    try:
        yield path
    finally:
        path.unlink(missing_ok=True)


@dataclass(frozen=True, slots=True)
class Outcome:
    """One line of `.sgf/logs/history.jsonl`: how a loop ended."""

    loop_id: str
    started_at: str
    ended_at: str
    exit_code: int | None  # None: the loop crashed and sgf never saw an exit code
    outcome: str


def record(root: Path, outcome: Outcome) -> None:
    """Append an outcome to the history (a single small write: safe between loops)."""
    with safefile.append(root / HISTORY, root=root) as f:
        f.write(json.dumps(asdict(outcome)).encode() + b"\n")


def history(root: Path, *, limit: int = 10) -> list[Outcome]:
    """Return the latest outcomes, newest first; unreadable lines are skipped."""
    path = root / HISTORY
    if not path.exists():
        return []
    outcomes = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        with contextlib.suppress(ValueError, TypeError):
            outcome = Outcome(**json.loads(line))
            if _well_typed(outcome):
                outcomes.append(outcome)
    return outcomes[::-1][:limit]


def _well_typed(outcome: Outcome) -> bool:
    """A hand-edited line may parse yet hold a number where a loop id belongs."""
    texts = (outcome.loop_id, outcome.started_at, outcome.ended_at, outcome.outcome)
    code = outcome.exit_code
    return all(isinstance(t, str) for t in texts) and (
        code is None or (isinstance(code, int) and not isinstance(code, bool))
    )


def now_iso(now: Callable[[], datetime]) -> str:
    """The current time as RFC 3339 UTC with a `Z`, to the second."""
    return now().astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
