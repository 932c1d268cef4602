"""What each of a loop's containers sees: its folders, its user, its environment.

The agent's container sees its workspace at the project's own path, the project's objects
read-only, the project's `.pensa/` (the one database the loops claim in), the per-run folder
(its HOME) and, read-only, the hooks and the workspace steps; the steps' containers see the
workspace alone; no container sees the project's work tree or its `.git/`. When ralph runs as
root, the containers run as an unprivileged user of their own (container.SANDBOX_UID), who is
handed what it must write.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ralph import claude_home, git, hooks, safefile
from ralph.errors import AgentNotFound
from ralph.models import Config
from ralph.sandbox.base import BIN, OBJECTS, OUT, PENSA, Place
from ralph.sandbox.container import container_env

if TYPE_CHECKING:
    from docker.types import Mount

# The shared database's own files (pensa's project.DB_SUFFIXES, without WAL's, which pensa
# never uses): the database, its persistent journal, pensa's writers' lock.
TRACKER_FILES = ("", "-journal", ".lock")


@dataclass(frozen=True, slots=True)
class View:
    """The folders and environment of one run's containers."""

    config: Config
    env: Mapping[str, str]
    state: Path  # per-run folder outside the project: the container's HOME lives here
    place: Place | None
    host_user: tuple[int, int]  # who runs ralph
    user: tuple[int, int]  # who runs in the containers

    @property
    def home(self) -> Path:
        return self.state / "home"

    def make_home(self) -> None:
        (self.home / ".claude").mkdir(parents=True, exist_ok=True)
        host_home = Path(self.env.get("HOME", "~")).expanduser()
        claude_home.write(self.home, host_home=host_home, project=self.config.project)
        uid, gid = self.user
        if (uid, gid) != self.host_user:  # the run's folder: entered, not handed over
            os.chown(self.state, uid, gid)
        self.hand_over(self.home)
        self.hand_over(self.state / hooks.STATE)

    def checker_env(self, home: Path, *, extra: Mapping[str, str]) -> dict[str, str]:
        """A check agent's environment, with `home` (made here) as its HOME: no loop's
        variables, no tracker, no workspace; `extra`: the guard's placeholders and URLs."""
        (home / ".claude").mkdir(parents=True, exist_ok=True)
        host_home = Path(self.env.get("HOME", "~")).expanduser()
        claude_home.write(home, host_home=host_home, project=self.config.project)
        identity = git.identity(self.config.project, env=self.env)
        return {**container_env(self.env, home=home, identity=identity, tty=False), **extra}

    def hand_over(self, top: Path) -> None:
        """Give the sandbox's own user (root's stand-in) what it must write."""
        uid, gid = self.user
        if (uid, gid) == self.host_user or not top.exists():
            return
        os.chown(top, uid, gid, follow_symlinks=False)
        for folder, dirs, files in os.walk(top):
            for name in dirs + files:
                os.chown(os.path.join(folder, name), uid, gid, follow_symlinks=False)

    def tracker_files(self) -> list[Path]:
        """The shared database's files, made (empty) where missing, handed to the sandbox's
        user: mounted one by one, so the agent can write them and nothing else of the
        project's `.pensa/` (whose other files the host's git and pn read: a FIFO planted
        among them would hang `git status`). pensa keeps its journal (PERSIST), so no file
        needs making while the container runs."""
        place = self.place
        if place is None or place.pensa is None:
            return []
        files = [place.pensa / f"db.sqlite{suffix}" for suffix in TRACKER_FILES]
        for path in files:
            if not path.exists() and not path.is_symlink():
                safefile.create(path, b"", mode=0o644)
            if self.user != self.host_user:
                os.chown(path, *self.user, follow_symlinks=False)
        return files

    def workspace_mounts(self) -> list[Mount]:
        from docker.types import Mount

        place = self.place
        if place is None:  # not a git repository: the folder itself, there is no git to guard
            project = str(self.config.project)
            return [Mount(project, project, type="bind")]
        mounts = [
            Mount(str(place.top), str(place.workspace.repo), type="bind"),
            Mount(OUT, str(place.workspace.out), type="bind"),
            Mount(BIN, str(self.state / "bin"), type="bind", read_only=True),
        ]
        if place.objects is not None:
            mounts.append(Mount(OBJECTS, str(place.objects), type="bind", read_only=True))
        return mounts

    def step_env(self) -> dict[str, str]:
        place = self.place
        if place is None:
            return {}
        return {
            "RALPH_WS": str(place.top),
            "RALPH_OBJECTS": OBJECTS if place.objects is not None else "",
            "RALPH_BRANCH": place.branch,
            "RALPH_BASE": place.base,
            "RALPH_TAKEN": place.taken,
            "RALPH_OUT": OUT,
            "RALPH_STAMP": place.stamp,
            "RALPH_LOOP_ID": self.config.loop_id,
        }

    def agent_mounts(self) -> list[Mount]:
        from docker.types import Mount

        mounts = [*self.workspace_mounts(), Mount(str(self.state), str(self.state), type="bind")]
        for source, target in hooks.mounts(self.state):  # the run's hooks: not the agent's
            mounts.append(Mount(str(target), str(source), type="bind", read_only=True))
        for path in self.tracker_files():
            mounts.append(Mount(f"{PENSA}/{path.name}", str(path), type="bind"))
        return mounts

    def agent_env(self, *, tty: bool, extra: Mapping[str, str]) -> dict[str, str]:
        """The agent's environment; `extra`: the backend's and the guard's variables."""
        identity = {
            **git.identity(self.config.project, env=self.env),
            **self.config.loop_env(self.env),
        }
        env = container_env(self.env, home=self.home, identity=identity, tty=tty)
        env.update(extra)
        env.update(self.step_env())
        if self.place is not None and self.place.pensa is not None:
            env["PN_SHARED_DB"] = f"{PENSA}/db.sqlite"
        return env


def agent_not_found(command: str, *, project: Path, env: Mapping[str, str]) -> AgentNotFound:
    """The container has no `command`: say why when it is a file of the project on the host
    that no commit holds.

    The container sees the agent's workspace at the project's path, and the workspace holds
    only what the project committed: a program the user keeps there untracked or ignored (a
    downloaded agent, a `.venv/bin/...`) stays on the host."""
    where = "in the docker sandbox"
    if "/" not in command:  # looked up on the image's PATH
        return AgentNotFound(command, where=where)
    path = Path(os.path.normpath(project / command))  # an absolute command stays as it is
    path = Path(os.path.realpath(path.parent)) / path.name  # git names the top's real path
    top = git.toplevel(project, env=env)
    if (
        top is None
        or not path.is_relative_to(top)
        or not path.is_file()
        or git.committed(top, path, env=env)
    ):
        return AgentNotFound(command, where=where)
    return AgentNotFound(
        command,
        where=where,
        why=(
            "it is a file of the project that is not committed, and the agent's workspace "
            "holds only the project's commits (untracked and ignored files stay on the host)"
        ),
        fix="commit it, install it in the sandbox image",
    )
