"""The agent on the host itself (`--sandbox none`): no boundary at all.

The agent works in the loop's workspace as in Docker, so its commits reach the human's
branch the one way every loop's do (integrate.py); the workspace's steps run here too, by
`sh`. Nothing about the sandbox's protection holds: the agent runs as the user.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ralph import proc, terminal
from ralph.errors import SandboxFailed
from ralph.models import Config
from ralph.sandbox import orphans
from ralph.sandbox.base import SCRIPT, Place, Running, Share

if TYPE_CHECKING:
    from ralph.egress.refusals import Refusal


@dataclass
class HostSandbox:
    """Runs the agent directly on the host, in the loop's workspace (or the project, which
    is not a git repository)."""

    config: Config
    env: Mapping[str, str]
    state: Path
    place: Place | None = None
    agent_vars: Mapping[str, str] = field(default_factory=dict)  # the backend's (agents/)
    records: list[Path] = field(default_factory=list)

    def prepare(self) -> list[str]:
        """Refuse what cannot work; stop host agents that a killed ralph left running."""
        if (
            os.geteuid() == 0
            and not self.env.get("IS_SANDBOX")
            and Path(self.config.command).name == "claude"
        ):
            # claude refuses --dangerously-skip-permissions as root: three failed iterations
            # would follow, so say it once, before any agent runs.
            raise SandboxFailed(
                "claude refuses to bypass permissions as root, so every iteration would fail: "
                "run ralph as a normal user, use --sandbox docker, or set IS_SANDBOX=1 if this "
                "machine is itself a throw-away sandbox"
            )
        return self.remove_leftovers()

    def remove_leftovers(self) -> list[str]:
        return orphans.reap()

    @property
    def workdir(self) -> Path:
        return self.place.workspace.repo if self.place else self.config.project

    def _step_env(self) -> dict[str, str]:
        place = self.place
        assert place is not None
        env = {
            **self.env,
            "RALPH_WS": str(place.workspace.repo),
            "RALPH_OBJECTS": str(place.objects or ""),
            "RALPH_BRANCH": place.branch,
            "RALPH_BASE": place.base,
            "RALPH_TAKEN": place.taken,
            "RALPH_OUT": str(place.workspace.out),
            "RALPH_STAMP": place.stamp,
            "RALPH_LOOP_ID": self.config.loop_id,
        }
        env.pop("PN_SHARED_DB", None)
        if place.pensa is not None:  # the export step finishes a commit made without hooks
            env["PN_SHARED_DB"] = str(place.pensa / "db.sqlite")
        return env

    @property
    def agent_env(self) -> dict[str, str]:
        # the host's git claims are the host's to publish (preclaim.py), never the agent's
        own = {k: v for k, v in self.env.items() if not k.startswith("PN_CLAIM")}
        env = {**own, **self.agent_vars, **self.config.loop_env(self.env)}
        if self.place is not None and self.place.pensa is not None:
            env["PN_SHARED_DB"] = str(self.place.pensa / "db.sqlite")
        return env

    def step(self, name: str) -> proc.Completed:
        argv = ["/bin/sh", str(self.state / "bin" / SCRIPT), name]
        return proc.run(argv, cwd=self.state, env=self._step_env(), check=False, timeout=1800)

    def _prepared(self) -> None:
        if self.place is not None:
            done = self.step("prepare")
            if not done.ok:
                raise SandboxFailed(f"cannot prepare the workspace: {done.stderr.strip()}")

    def start(self, argv: Sequence[str], *, stdin: bytes) -> Running:
        self._prepared()
        child = proc.Child(argv, cwd=self.workdir, env=self.agent_env, stdin=stdin)
        self.records.append(orphans.record(child.pid))  # found again if we are kill -9ed
        return HostRun(child)

    def start_check(
        self,
        argv: Sequence[str],
        *,
        stdin: bytes = b"",
        env: Mapping[str, str] | None = None,
        shares: Sequence[Share] = (),
        home: Path | None = None,
    ) -> Running:
        # on the host a check agent keeps the user's HOME (a logged-in claude's credentials
        # are there); its backend's own files are where `env` names them
        full = {**self.env, **(env or {})}
        if self.place is not None and self.place.objects is not None:
            full["RALPH_OBJECTS"] = str(self.place.objects)
        return HostRun(proc.Child(argv, cwd=self.state, env=full, stdin=stdin))

    def agent_setup_env(self) -> dict[str, str]:
        return dict(self.env)

    def interactive(
        self,
        argv: Sequence[str],
        *,
        interrupts: proc.Interrupts,
        tick: Callable[[], bool],
        every: float,
    ) -> int | None:
        self._prepared()
        return terminal.foreground(
            argv,
            cwd=self.workdir,
            env=self.agent_env,
            interrupts=interrupts,
            tick=tick,
            every=every,
            grace=self.config.timeouts.stop_grace,
        )

    def network_note(self) -> str:
        return (
            "--sandbox none: the agent runs on this machine with your network and your "
            "keys in its environment; no container, key proxy or allow-list applies"
        )

    def refusals(self) -> list[Refusal]:
        return []  # no egress proxy on the host

    def close(self) -> None:
        for path in self.records:
            orphans.forget(path)
        self.records.clear()


@dataclass
class HostRun:
    """A host process as the loop runs it: no sandbox, so no limits to run into."""

    child: proc.Child

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
        return self.child.close(grace=grace)

    def limit_hit(self) -> str | None:
        return None
