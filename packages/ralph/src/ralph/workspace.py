"""The loop's workspace: a repository of the agent's own, outside the project.

The agent never works in the human's checkout. Each loop gets a folder of its own,
`<state>/springfield/workspaces/<project-key>/<loop>/`, holding:

- `repo/`: the agent's repository (its own `.git/`, the project's objects borrowed read-only
  as git alternates). In Docker it is mounted at the project's own path, so the agent sees
  the paths it always saw. The host never runs git in it, never reads a file of its `.git/`
  and never writes into it: every git step there runs in the sandbox (inside/workspace.sh);
  only the sentinels ralph reads (sentinel.py) are read from it, each one as data.
- `out/`: where the sandbox leaves the bundle of the loop's new commits (inbox.py checks it).
- `owner.json`: which ralph runs the loop, the loop's branch and what the host last gave and
  took, written by the host only (the sandbox sees neither this file nor the folder).

A workspace whose ralph is gone (kill -9, a crash) is found again by the next ralph of the
same project (`dead`), which brings its commits and leftovers back and removes it.

A loop that ended with everything crossed parks its workspace (`parked/<n>/`) for the
project's next loop instead of deleting it: its checkout and its ignored files (a `.venv`,
`node_modules`, `target/`) are the next loop's start, so the next loop neither checks out
every file again nor builds its dependencies from nothing. A workspace is only ever used by
the sandbox it was made in (the same kind, the same user); one that saw a quarantine is
deleted, never parked; at most PARKED of them are kept.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import stat
import time
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from ralph import proc, safefile
from ralph.errors import RalphError
from ralph.shared import pids

_OWNER = "owner.json"
_MAX_OWNER = 64 * 1024
PARKED = 3


class WorkspaceBusy(RalphError):
    """Another ralph holds the workspace."""

    code = "workspace_busy"


def root(env: Mapping[str, str]) -> Path:
    """Where workspaces live: RALPH_WORKSPACES, else `$XDG_STATE_HOME/springfield/workspaces`
    (`~/.local/state/...`)."""
    if named := env.get("RALPH_WORKSPACES"):
        return Path(named)
    state = env.get("XDG_STATE_HOME") or str(
        Path(env.get("HOME") or "~").expanduser() / ".local" / "state"
    )
    return Path(state) / "springfield" / "workspaces"


def project_key(project: Path) -> str:
    """A folder name for `project`: readable, and unique to its absolute path."""
    digest = hashlib.sha256(str(project).encode("utf-8", "surrogateescape")).hexdigest()[:12]
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", project.name).strip("-.") or "project"
    return f"{name[:40]}-{digest}"


def stem(loop_id: str) -> str:
    """`loop_id` as a folder and ref name (--loop-id is free text; a ref name is not:
    git check-ref-format)."""
    return re.sub(r"[^A-Za-z0-9_-]+", "-", loop_id).strip("-")[:100] or "loop"


@dataclass(frozen=True, slots=True)
class Owner:
    """What the host knows about a workspace (owner.json)."""

    loop_id: str
    project: str
    branch: str  # the branch the agent works on in its repository
    pid: int
    start: int | None  # the ralph's process start time: a reused pid is not it
    sandbox: str  # docker or none
    template: str
    user: str = ""  # uid:gid of the sandbox's user, who owns the repository
    base: str = ""  # the commit the host last asked the iteration to start from
    taken: str = ""  # the last tip the host received from the workspace

    def alive(self) -> bool:
        """Whether the ralph that owns the workspace still runs."""
        return proc.is_alive(self.pid) and pids.start_time(self.pid) == self.start


@dataclass(frozen=True, slots=True)
class Workspace:
    """A loop's workspace folder (see the module's docstring)."""

    home: Path

    @property
    def repo(self) -> Path:
        return self.home / "repo"

    @property
    def out(self) -> Path:
        return self.home / "out"

    @property
    def bundle(self) -> Path:
        return self.out / "workspace.bundle"

    def owner(self) -> Owner | None:
        """The owner record, or None when it is missing or unreadable."""
        try:
            fd = os.open(self.home / _OWNER, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            return None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            data = json.loads(os.read(fd, _MAX_OWNER))
            return Owner(**data) if isinstance(data, dict) else None
        except (ValueError, TypeError):
            return None
        finally:
            os.close(fd)

    def write_owner(self, owner: Owner) -> None:
        safefile.replace(self.home / _OWNER, json.dumps(asdict(owner)).encode(), mode=0o600)

    def update(self, **fields: str) -> Owner:
        """Record what the host gave and took; return the new record."""
        now = self.owner()
        if now is None:
            raise RalphError(f"the workspace {self.home} lost its owner record")
        changed = replace(now, **fields)  # type: ignore[arg-type]  # str fields only
        self.write_owner(changed)
        return changed

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the workspace (one ralph at a time, a recovering one included)."""
        fd = safefile.open_plain(self.home / "lock", os.O_RDWR)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise WorkspaceBusy(f"another ralph holds the workspace {self.home}") from None
            yield
        finally:
            os.close(fd)


def folder(project: Path, env: Mapping[str, str]) -> Path:
    """This project's folder of workspaces."""
    return root(env) / project_key(project)


def create(project: Path, owner: Owner, *, env: Mapping[str, str], uid: int, gid: int) -> Workspace:
    """A workspace for `owner.loop_id`: its own of an earlier run, else a parked one of this
    project's that the same sandbox made, else a new, empty one.

    The folder is private to the user; `repo/` and `out/` belong to the sandbox's user
    (`uid`:`gid`), who must write them."""
    parent = folder(project, env)
    parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    ws = Workspace(parent / stem(owner.loop_id))
    if not ws.home.exists() and (taken := _unpark(parent, ws, owner)) is not None:
        ws.write_owner(replace(owner, taken=taken))
        return ws
    ws.home.mkdir(exist_ok=True, mode=0o700)
    for part in (ws.repo, ws.out):
        part.mkdir(exist_ok=True, mode=0o700)
        if (uid, gid) != (os.getuid(), os.getgid()):
            os.chown(part, uid, gid, follow_symlinks=False)
    ws.write_owner(owner)
    return ws


def park(ws: Workspace) -> bool:
    """Keep `ws` for the project's next loop (at most PARKED are kept); whether it was."""
    shelf = ws.home.parent / "parked"
    shelf.mkdir(exist_ok=True, mode=0o700)
    kept = sorted(p for p in shelf.iterdir() if p.is_dir() and not p.is_symlink())
    for old in kept[: max(0, len(kept) - PARKED + 1)]:
        remove(Workspace(old))
    target = shelf / f"{time.time_ns()}-{os.getpid()}"
    try:
        ws.home.rename(target)
    except OSError:
        return False
    return True


def _unpark(parent: Path, ws: Workspace, owner: Owner) -> str | None:
    """Move a parked workspace the same sandbox made to `ws`; the last tip the host took
    from it ("" for none: its HEAD is then one of the host's own commits)."""
    shelf = parent / "parked"
    if not shelf.is_dir():
        return None
    for candidate in sorted(shelf.iterdir(), reverse=True):
        found = Workspace(candidate).owner()
        if found is None or (found.sandbox, found.user) != (owner.sandbox, owner.user):
            continue
        try:
            candidate.rename(ws.home)  # two ralphs may reach for one: the rename decides
        except OSError:
            continue
        return found.taken
    return None


def found(project: Path, env: Mapping[str, str]) -> list[Workspace]:
    """The project's workspaces that have an owner record."""
    parent = folder(project, env)
    if not parent.is_dir():
        return []
    return sorted(
        (
            Workspace(p)
            for p in parent.iterdir()
            if p.is_dir() and not p.is_symlink() and p.name != "parked"
        ),
        key=lambda ws: ws.home.name,
    )


def dead(project: Path, env: Mapping[str, str]) -> list[tuple[Workspace, Owner]]:
    """The project's workspaces whose ralph is gone, with their owner records."""
    out = []
    for ws in found(project, env):
        owner = ws.owner()
        if owner is not None and not owner.alive():
            out.append((ws, owner))
    return out


def remove(ws: Workspace) -> None:
    """Delete the workspace; a folder the agent made unwritable is made writable first.

    rmtree never follows a link the agent planted: it removes the link itself."""

    def retry(
        function: object, path: str, info: tuple[type[BaseException], BaseException, object]
    ) -> None:
        error = info[1]
        if not isinstance(error, PermissionError):
            raise error
        os.chmod(os.path.dirname(path), 0o700)
        if os.path.isdir(path) and not os.path.islink(path):
            os.chmod(path, 0o700)
            shutil.rmtree(path, onerror=retry)
        else:
            os.unlink(path)

    if ws.home.exists():
        shutil.rmtree(ws.home, onerror=retry)
