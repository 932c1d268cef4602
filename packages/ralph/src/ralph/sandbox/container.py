"""One container as ralph runs it: its labels, its user, its environment, its run.

The byte streams go through `docker start --attach --interactive` (a proc.Child), which gives
the same pipes as a host process in AFK mode and a real TTY in interactive mode; the
container's own cgroup counters say whether it ran into its limits (limits.py). docker.py
decides what each container sees; this module is how one runs and ends.
"""

from __future__ import annotations

import io
import tarfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from ralph import credentials, proc
from ralph.errors import SandboxFailed
from ralph.sandbox.limits import Limits, folders
from ralph.shared import pids

if TYPE_CHECKING:
    from docker.models.containers import Container

LABEL_LOOP = "springfield.loop-id"
LABEL_PROJECT = "springfield.project"
LABEL_PID = "springfield.ralph-pid"
# The ralph process's start time (/proc), so a PID reused by another process after a crash
# does not keep an orphan container alive.
LABEL_START = "springfield.ralph-start"
# A container's own scratch folder (not the host's /tmp): steps and checks start there.
SCRATCH = "/tmp"  # noqa: S108
# The agent's user when ralph runs as root: never root in the container.
SANDBOX_UID = 10001


def sandbox_user(uid: int, gid: int) -> tuple[int, int]:
    """The container's uid:gid: the user's own, or SANDBOX_UID's when the user is root."""
    return (SANDBOX_UID, SANDBOX_UID) if uid == 0 else (uid, gid)


def container_env(
    host: Mapping[str, str], *, home: Path, identity: Mapping[str, str], tty: bool
) -> dict[str, str]:
    """The container's environment: HOME, identities, no auto-updates; no secrets (the
    guard's placeholders and URLs are added by the sandbox).

    `identity` holds the git identity and the loop's own variables (Config.loop_env).
    """
    env = {"HOME": str(home), "DISABLE_AUTOUPDATER": "1", **identity}
    env.update(credentials.plain(host))
    if tty:
        env["TERM"] = host.get("TERM") or "xterm-256color"
        if host.get("COLORTERM"):
            env["COLORTERM"] = host["COLORTERM"]
    return env


@dataclass
class DockerRun:
    """A running container: a proc.Child for the `docker start -ai` client, plus clean-up."""

    child: proc.Child
    container: Container
    removed: Callable[[Container], None]
    limits: Limits
    seen: str | None = None  # what a limit did, once known

    def limit_hit(self) -> str | None:
        if self.seen is None:
            if not self.limits.cgroups:
                self.limits.cgroups = cgroups(self.container)
            self.seen = self.limits.hit()
        return self.seen

    def output(
        self,
        interrupts: proc.Interrupts,
        timeout: Callable[[], float],
        on_stderr: Callable[[bytes], None],
    ) -> proc.Output:
        return self.child.output(interrupts, timeout, on_stderr)

    def stop(self, *, grace: float) -> int:
        return self.child.stop(grace=grace)

    def close(self, *, grace: float) -> int:
        try:
            self.limit_hit()  # the counters go with the container
            status = self.child.close(grace=grace)
            if self.seen is None and oom_killed(self.container):
                self.seen = self.limits.memory_message()
            return status
        finally:
            self.removed(self.container)


def give_root_files(container: Container, files: list[tuple[str, bytes]]) -> None:
    """Put `files` (absolute path, content) into a created container as root's, readable by
    all and writable by none but root, in folders likewise: the agent CLI's managed settings
    (hooks.managed). gemini-cli reads its system settings only from such a file, which no
    bind mount from a ralph run by a user could be; here the agent's user cannot change it."""
    from docker.errors import DockerException

    if not files:
        return
    try:
        given = container.put_archive("/", root_archive(files))
        why = "the engine did not take the archive"
    except DockerException as e:
        given, why = False, (str(e).splitlines() or [type(e).__name__])[0][:200]
    if not given:
        raise SandboxFailed(f"cannot give the container the agent's hook settings: {why}")


def root_archive(files: list[tuple[str, bytes]]) -> bytes:
    """A tar of `files` and their folders below `/`, owned by root: folders 0755, files 0644."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        folders: set[str] = set()
        for path, content in files:
            relative = PurePosixPath(path).relative_to("/")
            for parent in reversed(relative.parents[:-1]):
                if str(parent) not in folders:
                    folders.add(str(parent))
                    tar.addfile(_root_entry(str(parent), tarfile.DIRTYPE, 0o755))
            entry = _root_entry(str(relative), tarfile.REGTYPE, 0o644)
            entry.size = len(content)
            tar.addfile(entry, io.BytesIO(content))
    return buffer.getvalue()


def _root_entry(name: str, kind: bytes, mode: int) -> tarfile.TarInfo:
    entry = tarfile.TarInfo(name)
    entry.type, entry.mode, entry.uid, entry.gid = kind, mode, 0, 0
    entry.uname = entry.gname = "root"
    return entry


def cgroups(container: Container) -> dict[str, Path]:
    from docker.errors import DockerException

    try:
        container.reload()
    except DockerException:
        return {}
    pid = (container.attrs.get("State") or {}).get("Pid")
    return folders(pid) if isinstance(pid, int) and pid > 0 else {}


def oom_killed(container: Container) -> bool:
    from docker.errors import DockerException

    try:
        container.reload()
    except DockerException:
        return False
    state = container.attrs.get("State") or {}
    return bool(state.get("OOMKilled"))


def owner_labels(pid: int) -> dict[str, str]:
    """The labels that name the ralph `pid` as a container's owner, for good (`orphaned`)."""
    return {LABEL_PID: str(pid), LABEL_START: str(pids.start_time(pid) or "")}


def orphaned(labels: Mapping[str, str]) -> bool:
    """Whether the ralph that labelled a container is gone (a reused PID included)."""
    pid, start = labels.get(LABEL_PID, ""), labels.get(LABEL_START, "")
    if not (pid.isdigit() and proc.is_alive(int(pid))):
        return True
    return start.isdigit() and pids.start_time(int(pid)) != int(start)


def cid(container: Container) -> str:
    return container.id or ""


def short(container: Container) -> str:
    return cid(container)[:12]


def remote_engine(env: Mapping[str, str]) -> bool:
    """Whether the engine may see another filesystem: DOCKER_HOST names one that is not a
    local socket (tcp://, ssh://...), or RALPH_PROBE_MOUNTS=1 asks for the check anyway."""
    host = env.get("DOCKER_HOST", "")
    return env.get("RALPH_PROBE_MOUNTS") == "1" or bool(host and not host.startswith("unix://"))
