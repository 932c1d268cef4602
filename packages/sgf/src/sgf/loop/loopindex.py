"""The per-user index of running loops: how `sgf top --all` finds other projects.

Springfield keeps no global state (design: "Decentralized projects"), so the index is
ephemeral: one small JSON file per running loop under `$XDG_RUNTIME_DIR/springfield/loops/`
(tmpfs, private to the user, emptied at logout), or `$TMPDIR/springfield-<uid>/loops/` where
there is no runtime directory. sgf writes a loop's entry when it launches the loop and removes
it when the loop ends, on every exit path.

A `kill -9` leaves an entry behind. It cannot poison the view: an entry names the PID of the
sgf that wrote it *and* that process's start time, so a dead loop, or a new process that got
its PID, is told apart from a running loop (the same check as `.sgf/run/*.pid`). The
next launch prunes such entries. Readers only use an entry to find a project; what runs there
is then read from the project's own PID files.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from ralph.shared import pids

from sgf import proc, safefile
from sgf.errors import PathRefused

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Entry:
    """One running loop as its sgf announced it."""

    project: str
    loop_id: str
    pid: int
    process_start: int | None
    started_at: str

    def alive(self) -> bool:
        """Tell whether the sgf that wrote the entry still runs (the same process)."""
        if not proc.pid_alive(self.pid):
            return False
        return self.process_start is None or pids.start_time(self.pid) == self.process_start

    @classmethod
    def parse(cls, text: str) -> Entry | None:
        """Read an entry back; garbage (a hand edit, a half-written file) is None."""
        try:
            data = json.loads(text)
            entry = cls(**data)
        except (ValueError, TypeError):
            return None
        start = entry.process_start
        typed = (
            isinstance(entry.project, str)
            and isinstance(entry.loop_id, str)
            and type(entry.pid) is int
            and (start is None or type(start) is int)
            and isinstance(entry.started_at, str)
        )
        return entry if typed else None


def directory(env: Mapping[str, str], *, uid: int | None = None) -> Path:
    """Where this user's index lives: under XDG_RUNTIME_DIR, else a private folder in TMPDIR."""
    runtime = env.get("XDG_RUNTIME_DIR", "")
    if runtime and os.path.isabs(runtime):
        return Path(runtime) / "springfield" / "loops"
    tmp = env.get("TMPDIR") or "/tmp"  # noqa: S108 - a private, owner-checked folder in it
    return Path(tmp) / f"springfield-{os.getuid() if uid is None else uid}" / "loops"


def _private(path: Path) -> bool:
    """Create `path` and its parent (mode 0700) if needed; tell whether both are ours alone.

    In a shared /tmp another user could create our folder first and plant entries; such a
    folder is ignored (for reading and writing) rather than trusted."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        path.mkdir(exist_ok=True, mode=0o700)
        stats = [path.parent.stat(), path.stat()]
    except OSError as e:
        log.info("loop index unavailable: %s", e)
        return False
    return all(st.st_uid == os.getuid() and st.st_mode & 0o022 == 0 for st in stats)


def entry_path(folder: Path, project: Path, loop_id: str) -> Path:
    """The entry's file: the loop id and a hash of the project (ids repeat across projects)."""
    digest = hashlib.sha256(str(project).encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return folder / f"{loop_id}@{digest}.json"


def _entry_files(env: Mapping[str, str]) -> list[Path]:
    """The index's entry files by name; none when there is no index, or it is not private."""
    folder = directory(env)
    if not folder.is_dir() or not _private(folder):
        return []
    return sorted(folder.glob("*.json"))


def entries(env: Mapping[str, str]) -> list[Entry]:
    """Every entry in the index, live or not, oldest first; none when there is no index."""
    found = []
    for path in _entry_files(env):
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:  # removed while we looked: its loop just ended
            continue
        if (entry := Entry.parse(text)) is not None:
            found.append(entry)
    return sorted(found, key=lambda e: e.started_at)


def prune(env: Mapping[str, str]) -> list[str]:
    """Remove the entries of loops that are gone; their loop ids."""
    removed = []
    for path in _entry_files(env):
        with contextlib.suppress(OSError):
            entry = Entry.parse(path.read_text(encoding="utf-8", errors="replace"))
            if entry is None or not entry.alive():
                path.unlink()
                removed.append(entry.loop_id if entry else path.stem)
    return removed


@contextlib.contextmanager
def registered(
    project: Path, loop_id: str, pid: int, *, started_at: str, env: Mapping[str, str]
) -> Iterator[Path | None]:
    """Hold the loop's index entry for the duration of the block; removed on every exit.

    The index is a convenience for `sgf top --all`: when it cannot be written (no writable
    runtime or temp folder) the loop runs all the same, unlisted."""
    folder = directory(env)
    path: Path | None = None
    if _private(folder):
        prune(env)
        entry = Entry(str(project), loop_id, pid, pids.start_time(pid), started_at)
        target = entry_path(folder, project, loop_id)
        try:
            path = safefile.replace(target, json.dumps(asdict(entry)).encode() + b"\n", root=folder)
        except (OSError, PathRefused) as e:
            log.info("cannot write the loop index entry %s: %s", target, e)
    try:
        yield path
    finally:
        if path is not None:
            path.unlink(missing_ok=True)
