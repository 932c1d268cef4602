"""One Docker container per agent run: the security boundary.

This is the only module that imports `docker`. Container lifecycle (create, labels, kill,
remove, clean-up by label) goes through the docker SDK; the byte streams go through
`docker start --attach --interactive`, which gives the same pipes as a host process in AFK mode
and a real TTY (raw mode, resizes, Ctrl+C) in interactive mode. No credential enters the
container: the run's guard (egress/guard.py) gives it placeholders, the key proxy's URLs and,
unless --network says otherwise, a network whose only way out is the allow-list sidecar.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ralph import agents, claude_home, credentials, git, gitdirs, hooks, mountprobe, proc, terminal
from ralph.egress import sidecar
from ralph.egress.guard import OPEN, Guard
from ralph.egress.refusals import Refusal
from ralph.errors import DockerUnavailable, SandboxFailed, TemplateMissing
from ralph.models import Config
from ralph.protect import Protected

if TYPE_CHECKING:
    from docker import DockerClient
    from docker.models.containers import Container
    from docker.types import Mount

    from ralph.sandbox import Running

log = logging.getLogger(__name__)

LABEL_LOOP = "springfield.loop-id"
LABEL_PROJECT = "springfield.project"
LABEL_PID = "springfield.ralph-pid"
# The ralph process's start time (/proc), so a PID reused by another process after a crash
# does not keep an orphan container alive.
LABEL_START = "springfield.ralph-start"


def container_env(
    host: Mapping[str, str], *, home: Path, uid: int, identity: Mapping[str, str], tty: bool
) -> dict[str, str]:
    """The container's environment: HOME, identities, no auto-updates; no secrets (the
    guard's placeholders and URLs are added by the sandbox).

    `identity` holds the git identity and the loop's own variables (Config.loop_env).
    """
    env = {"HOME": str(home), "DISABLE_AUTOUPDATER": "1", **identity}
    env.update(credentials.plain(host))
    if uid == 0:
        env["IS_SANDBOX"] = "1"  # claude refuses --dangerously-skip-permissions as root otherwise
    if tty:
        env["TERM"] = host.get("TERM") or "xterm-256color"
        if host.get("COLORTERM"):
            env["COLORTERM"] = host["COLORTERM"]
    return env


@dataclass
class _DockerRun:
    """A running container: a proc.Child for the `docker start -ai` client, plus clean-up."""

    child: proc.Child
    container: Container
    removed: Callable[[Container], None]

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
            return self.child.close(grace=grace)
        finally:
            self.removed(self.container)


@dataclass
class DockerSandbox:
    """One container per agent run, from `config.template`, labelled for clean-up."""

    config: Config
    env: Mapping[str, str]
    state: Path  # per-run directory outside the project: the container's HOME lives here
    uid: int = field(default_factory=os.getuid)
    gid: int = field(default_factory=os.getgid)
    agent_vars: Mapping[str, str] = field(default_factory=dict)  # the backend's (agents/)
    guard: Guard | None = None  # keys on the host, the way out (sandbox.make plans it)
    _client: DockerClient | None = None
    _mine: dict[str, Container] = field(default_factory=dict)

    @property
    def home(self) -> Path:
        return self.state / "home"

    def _docker(self) -> DockerClient:
        if self._client is None:
            import docker
            from docker.errors import DockerException

            try:
                self._client = docker.from_env(environment=dict(self.env))
                self._client.ping()
            except DockerException as e:
                raise DockerUnavailable(str(e).splitlines()[0][:200]) from e
        return self._client

    def labels(self) -> dict[str, str]:
        return {
            LABEL_LOOP: self.config.loop_id,
            LABEL_PROJECT: str(self.config.project),
            LABEL_PID: str(os.getpid()),
            LABEL_START: str(proc.start_time(os.getpid()) or ""),
        }

    def prepare(self) -> list[str]:
        from docker.errors import ImageNotFound

        client = self._docker()
        if proc.which("docker") is None:
            raise DockerUnavailable("the docker command-line client is not on PATH")
        try:
            image = client.images.get(self.config.template)
        except ImageNotFound as e:
            raise TemplateMissing(self.config.template) from e
        if missing := agents.missing(self.config.agent, image.labels or {}):
            raise SandboxFailed(missing)
        self._check_network(client)
        self._make_home()
        removed = [f"container {c}" for c in self.remove_leftovers()]
        if remote_engine(self.env):
            mountprobe.check(self, client)
        if self.guard is not None:
            # the sandbox image's own base (sgf's label), else the sandbox image itself
            base = (image.labels or {}).get("springfield.base")
            bases = (base, self.config.template) if base else (self.config.template,)
            removed += self.guard.start(
                client, bases=bases, project=self.config.project, note=log.warning
            )
        return removed

    def gateway(self, network: str) -> str:
        """The host's address on a Docker network (the key proxy listens there when open)."""
        return sidecar.gateway(self._docker(), network)

    def network_note(self) -> str:
        """What the agent can reach and where its keys are: the loop's first line says it."""
        return self.guard.describe() if self.guard else "network: " + (self.config.network or "")

    def refusals(self) -> list[Refusal]:
        """The requests the egress proxy refused so far."""
        return self.guard.refusals() if self.guard else []

    def _check_network(self, client: DockerClient) -> None:
        from docker.errors import NotFound

        name = self.config.network
        if name in (None, OPEN, "host", "bridge", "none") or name.startswith("container:"):
            return
        try:
            client.networks.get(name)
        except NotFound as e:
            raise SandboxFailed(
                f"docker network {name!r} not found: create it (`docker network create {name}`)"
                " or leave out --network"
            ) from e

    def _make_home(self) -> None:
        (self.home / ".claude").mkdir(parents=True, exist_ok=True)
        host_home = Path(self.env.get("HOME", "~")).expanduser()
        claude_home.write(self.home, host_home=host_home, project=self.config.project)

    def remove_leftovers(self) -> list[str]:
        """Remove this project's containers left by this loop id or by a ralph that died."""
        client = self._docker()
        project = f"{LABEL_PROJECT}={self.config.project}"
        removed = []
        for container in client.containers.list(all=True, filters={"label": project}):
            labels = container.labels
            pid, start = labels.get(LABEL_PID, ""), labels.get(LABEL_START, "")
            orphan = not (pid.isdigit() and proc.is_alive(int(pid)))
            if not orphan and start.isdigit():
                orphan = proc.start_time(int(pid)) != int(start)
            if labels.get(LABEL_LOOP) == self.config.loop_id or orphan:
                self._remove(container)
                removed.append(_short(container))
        return removed

    def _mounts(self) -> list[Mount]:
        from docker.types import Mount

        project = str(self.config.project)
        mounts = [
            Mount(project, project, type="bind"),
            Mount(str(self.state), str(self.state), type="bind"),
        ]
        # The control plane (protect.py: .sgf/'s prompts, config and backpressure, hooks'
        # config, attributes, submodules, .claude/) is read-only where it exists; commits
        # of it by plumbing are quarantined after the iteration (quarantine.py).
        layout = gitdirs.find(self.config.project)
        top = self.config.project if layout is None else layout.work_tree
        for path in Protected.with_extra(self.config.protect).on_disk(top):
            if path.is_relative_to(self.config.project):  # the container sees nothing else
                mounts.append(Mount(str(path), str(path), type="bind", read_only=True))
        for source, target in hooks.mounts(self.state):  # the run's hooks: not the agent's
            mounts.append(Mount(str(target), str(source), type="bind", read_only=True))
        # The agent commits (objects, refs, index) but cannot make the host run its code
        # through git: config, hooks and info/ are read-only (README "Security"); a
        # linked worktree gets its common directory, and its pointers read-only.
        for path, read_only in git.protected_paths(self.config.project):
            mounts.append(Mount(str(path), str(path), type="bind", read_only=read_only))
        if shared := self.env.get("PN_SHARED_DB"):
            # a worktree loop claims from the main checkout's database: SQLite
            # writes its journal beside the file, so the folder is mounted
            folder = Path(shared).resolve().parent
            if not folder.is_relative_to(self.config.project):
                mounts.append(Mount(str(folder), str(folder), type="bind"))
        return mounts

    def _create(self, argv: Sequence[str], *, tty: bool) -> Container:
        from docker.errors import DockerException

        identity = {
            **git.identity(self.config.project, env=self.env),
            **self.config.loop_env(self.env),
        }
        env = container_env(self.env, home=self.home, uid=self.uid, identity=identity, tty=tty)
        env.update(self.agent_vars)
        env.update(self.guard.agent_env if self.guard else {})
        try:
            container = self._create_with(argv, env, tty=tty)
        except DockerException as e:
            raise SandboxFailed(
                f"cannot create a container from {self.config.template}: {e}"
            ) from e
        self._mine[_cid(container)] = container
        return container

    def _create_with(self, argv: Sequence[str], env: Mapping[str, str], *, tty: bool) -> Container:
        return self._docker().containers.create(
            self.config.template,
            command=list(argv),
            entrypoint=[],
            labels=self.labels(),
            user=f"{self.uid}:{self.gid}",
            working_dir=str(self.config.project),
            environment=dict(env),
            mounts=self._mounts(),
            network_mode=self.guard.network if self.guard else self.config.network,
            cap_drop=self.guard.cap_drop if self.guard else None,
            dns_opt=self.guard.dns_options if self.guard else None,
            stdin_open=True,
            tty=tty,
            init=True,  # reaps the agent's orphans; forwards our signals to it
        )

    def _signaller(self, container: Container) -> proc.Signaller:
        from docker.errors import APIError

        def send(sig: signal.Signals) -> None:
            with contextlib.suppress(APIError):  # already stopped, or gone
                container.kill(signal=sig.name)

        return send

    def _resizer(self, container: Container) -> Callable[[int, int], bool]:
        from docker.errors import APIError

        def resize(rows: int, columns: int) -> bool:
            try:
                container.resize(height=rows, width=columns)
            except APIError:  # not started yet, or already gone
                return False
            return True

        return resize

    def _remove(self, container: Container) -> None:
        from docker.errors import APIError, NotFound

        try:
            container.remove(force=True)
        except NotFound:
            pass
        except APIError as e:  # e.g. removal already in progress
            log.warning("cannot remove container %s: %s", _short(container), e)
        self._mine.pop(_cid(container), None)

    def _attach(self, container: Container) -> list[str]:
        return ["docker", "start", "--attach", "--interactive", _cid(container)]

    def start(self, argv: Sequence[str], *, stdin: bytes) -> Running:
        container = self._create(argv, tty=False)
        try:
            child = proc.Child(
                self._attach(container),
                cwd=self.config.project,
                env=self.env,
                stdin=stdin,
                signaller=self._signaller(container),
            )
        except BaseException:
            self._remove(container)
            raise
        return _DockerRun(child, container, self._remove)

    def interactive(
        self,
        argv: Sequence[str],
        *,
        interrupts: proc.Interrupts,
        tick: Callable[[], bool],
        every: float,
    ) -> int | None:
        container = self._create(argv, tty=True)
        follow = terminal.SizeFollower(self._resizer(container))

        def tick_and_follow() -> bool:
            follow()
            return tick()

        try:
            return terminal.foreground(
                self._attach(container),
                cwd=self.config.project,
                env=self.env,
                interrupts=interrupts,
                tick=tick_and_follow,
                every=every,
                grace=self.config.timeouts.stop_grace,
                signaller=self._signaller(container),
            )
        finally:
            self._remove(container)

    def close(self) -> None:
        for container in list(self._mine.values()):
            self._remove(container)
        if self.guard is not None:  # after the agents: the network is free then
            self.guard.close()
        if self._client is not None:
            from docker.errors import DockerException

            try:
                self.remove_leftovers()
            except DockerException as e:
                log.warning("clean-up by label failed: %s", e)
            self._client.close()
            self._client = None


def _cid(container: Container) -> str:
    return container.id or ""


def _short(container: Container) -> str:
    return _cid(container)[:12]


def remote_engine(env: Mapping[str, str]) -> bool:
    """Whether the engine may see another filesystem: DOCKER_HOST names one that is not a
    local socket (tcp://, ssh://...), or RALPH_PROBE_MOUNTS=1 asks for the check anyway."""
    host = env.get("DOCKER_HOST", "")
    return env.get("RALPH_PROBE_MOUNTS") == "1" or bool(host and not host.startswith("unix://"))
