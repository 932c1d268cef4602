"""One Docker container per agent run: the security boundary.

Container lifecycle (create, labels, kill, remove, clean-up by label) goes through the docker
SDK; how one container runs and ends is container.py's. What a container sees
(docs/security.md): the loop's workspace at the project's own path (the agent's repository,
which no host git enters), the project's objects read-only (borrowed as alternates), the
shared pensa database's own files, the per-run directory (HOME) and, read-only, the hooks and
the workspace steps; never the project's work tree or `.git/`. The agent runs as the user (an
unprivileged stand-in for root) with no capabilities, no new privileges and limits on
processes and memory. No credential enters: the run's guard (egress/guard.py) gives it
placeholders, the key proxy's URLs and, unless --network says otherwise, a network whose
only way out is the allow-list sidecar.
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

from ralph import agents, hooks, proc, terminal
from ralph.egress import sidecar
from ralph.egress.guard import OPEN, Guard
from ralph.egress.refusals import Refusal
from ralph.errors import DockerUnavailable, SandboxFailed, TemplateMissing
from ralph.models import Config
from ralph.sandbox import mountprobe
from ralph.sandbox.base import BIN, OBJECTS, SCRIPT, Place, Running, Share
from ralph.sandbox.container import (
    LABEL_LOOP,
    LABEL_PROJECT,
    SCRATCH,
    DockerRun,
    cid,
    give_root_files,
    orphaned,
    owner_labels,
    remote_engine,
    sandbox_user,
    short,
)
from ralph.sandbox.limits import Limits
from ralph.sandbox.view import View

if TYPE_CHECKING:
    from docker import DockerClient
    from docker.models.containers import Container
    from docker.types import Mount

log = logging.getLogger(__name__)


@dataclass
class DockerSandbox:
    """One container per agent run, from `config.template`, labelled for clean-up."""

    config: Config
    env: Mapping[str, str]
    state: Path  # per-run directory outside the project: the container's HOME lives here
    place: Place | None = None
    uid: int = field(default_factory=os.getuid)
    gid: int = field(default_factory=os.getgid)
    agent_vars: Mapping[str, str] = field(default_factory=dict)  # the backend's (agents/)
    guard: Guard | None = None  # keys on the host, the way out (sandbox.make plans it)
    _client: DockerClient | None = None
    _mine: dict[str, Container] = field(default_factory=dict)

    @property
    def home(self) -> Path:
        return self.state / "home"

    @property
    def user(self) -> tuple[int, int]:
        return sandbox_user(self.uid, self.gid)

    @property
    def view(self) -> View:
        host = (self.uid, self.gid)
        return View(self.config, self.env, self.state, self.place, host, self.user)

    def _agent_vars(self) -> dict[str, str]:
        return {**self.agent_vars, **(self.guard.agent_env if self.guard else {})}

    def probe_mounts(self) -> list[Mount]:
        """What the mount probe (mountprobe.py) reads: every folder an agent's container gets."""
        return self.view.agent_mounts()

    @property
    def workdir(self) -> Path:
        return self.config.project

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
            **owner_labels(os.getpid()),
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
        checker = self.config.check_agent
        for name in (self.config.agent, *([checker.agent] if checker else [])):
            if missing := agents.missing(name, image.labels or {}):
                raise SandboxFailed(missing)
        self._check_network(client)
        self.view.make_home()
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
        self._check_network(self._docker())  # a missing one is named as such, in one line
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

    def remove_leftovers(self) -> list[str]:
        """Remove this project's containers left by this loop id or by a ralph that died."""
        client = self._docker()
        project = f"{LABEL_PROJECT}={self.config.project}"
        removed = []
        for container in client.containers.list(all=True, filters={"label": project}):
            labels = container.labels
            if labels.get(LABEL_LOOP) == self.config.loop_id or orphaned(labels):
                self._remove(container)
                removed.append(short(container))
        return removed

    def _create(
        self,
        argv: Sequence[str],
        *,
        tty: bool = False,
        env: Mapping[str, str],
        mounts: list[Mount],
        network: str | None,
        workdir: str,
    ) -> Container:
        from docker.errors import DockerException

        uid, gid = self.user
        try:
            container = self._docker().containers.create(
                self.config.template,
                command=list(argv),
                entrypoint=[],
                labels=self.labels(),
                user=f"{uid}:{gid}",
                working_dir=workdir,
                environment=dict(env),
                mounts=mounts,
                network_mode=network,
                dns_opt=self.guard.dns_options if self.guard and network != "none" else None,
                stdin_open=True,
                tty=tty,
                init=True,  # reaps the agent's orphans; forwards our signals to it
                cap_drop=["ALL"],
                security_opt=["no-new-privileges"],
                pids_limit=self.config.limits.pids,
                mem_limit=self.config.limits.memory,
                memswap_limit=self.config.limits.memory,  # no swap beyond the limit
            )
        except DockerException as e:
            raise SandboxFailed(
                f"cannot create a container from {self.config.template}: {e}"
            ) from e
        self._mine[cid(container)] = container
        return container

    @property
    def network(self) -> str | None:
        """The agent's network: the run's allow-list network, or what --network names."""
        return self.guard.network if self.guard else self.config.network

    def _agent_container(self, argv: Sequence[str], *, tty: bool) -> Container:
        container = self._create(
            argv,
            tty=tty,
            env=self.view.agent_env(tty=tty, extra=self._agent_vars()),
            mounts=self.view.agent_mounts(),
            network=self.network,
            workdir=str(self.workdir),
        )
        try:
            give_root_files(container, hooks.managed(self.config))
        except SandboxFailed:
            self._remove(container)
            raise
        return container

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
            log.warning("cannot remove container %s: %s", short(container), e)
        self._mine.pop(cid(container), None)

    def _attach(self, container: Container) -> list[str]:
        return ["docker", "start", "--attach", "--interactive", cid(container)]

    def _run(self, container: Container, *, stdin: bytes) -> DockerRun:
        try:
            child = proc.Child(
                self._attach(container),
                cwd=self.state,
                env=self.env,
                stdin=stdin,
                signaller=self._signaller(container),
            )
        except BaseException:
            self._remove(container)
            raise
        limits = Limits(self.config.limits.pids, self.config.limits.memory, {})
        return DockerRun(child, container, self._remove, limits)

    def start(self, argv: Sequence[str], *, stdin: bytes) -> Running:
        if self.place is not None:
            argv = ["/bin/sh", f"{BIN}/{SCRIPT}", "run", *argv]
        return self._run(self._agent_container(argv, tty=False), stdin=stdin)

    def step(self, name: str) -> proc.Completed:
        from docker.errors import DockerException

        container = self._create(
            ["/bin/sh", f"{BIN}/{SCRIPT}", name],
            env={"HOME": SCRATCH, **self.view.step_env()},
            mounts=self.view.workspace_mounts(),
            network="none",
            workdir="/",
        )
        try:
            container.start()
            status = int(container.wait(timeout=1800).get("StatusCode", 1))
            out = container.logs(stdout=True, stderr=False).decode("utf-8", "replace")
            err = container.logs(stdout=False, stderr=True).decode("utf-8", "replace")
        except DockerException as e:
            return proc.Completed(("workspace.sh", name), 1, "", str(e))
        finally:
            self._remove(container)
        return proc.Completed(("workspace.sh", name), status, out, err)

    def start_check(
        self,
        argv: Sequence[str],
        *,
        stdin: bytes = b"",
        env: Mapping[str, str] | None = None,
        shares: Sequence[Share] = (),
        home: Path | None = None,
    ) -> Running:
        from docker.types import Mount

        place = self.place
        mounts = []
        full = {"HOME": SCRATCH}
        if home is not None:  # a check agent: its own HOME, the key proxy's placeholders
            full = self.view.checker_env(home, extra=self.guard.agent_env if self.guard else {})
        full.update(env or {})
        if place is not None and place.objects is not None:
            mounts.append(Mount(OBJECTS, str(place.objects), type="bind", read_only=True))
            full["RALPH_OBJECTS"] = OBJECTS
        for share in shares:
            if share.writable:
                self.view.hand_over(share.path)
            path = str(share.path)
            mounts.append(Mount(path, path, type="bind", read_only=not share.writable))
        container = self._create(
            argv, env=full, mounts=mounts, network=self.network, workdir=SCRATCH
        )
        return self._run(container, stdin=stdin)

    def agent_setup_env(self) -> dict[str, str]:
        return {**self.env, **(self.guard.agent_env if self.guard else {})}

    def interactive(
        self,
        argv: Sequence[str],
        *,
        interrupts: proc.Interrupts,
        tick: Callable[[], bool],
        every: float,
    ) -> int | None:
        if self.place is not None:
            argv = ["/bin/sh", f"{BIN}/{SCRIPT}", "exec", *argv]
        container = self._agent_container(argv, tty=True)
        follow = terminal.SizeFollower(self._resizer(container))

        def tick_and_follow() -> bool:
            follow()
            return tick()

        try:
            return terminal.foreground(
                self._attach(container),
                cwd=self.state,
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
