"""The agent on the host itself, in the project directory (`--sandbox none`)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ralph import leftovers, proc, terminal
from ralph.errors import SandboxFailed
from ralph.models import Config

if TYPE_CHECKING:
    from ralph.egress.refusals import Refusal
    from ralph.sandbox import Running


@dataclass
class HostSandbox:
    """Runs the agent directly on the host, in the project directory (`--sandbox none`)."""

    config: Config
    env: Mapping[str, str]

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
        return leftovers.reap()

    @property
    def agent_env(self) -> dict[str, str]:
        return {**self.env, **self.agent_vars, **self.config.loop_env(self.env)}

    def start(self, argv: Sequence[str], *, stdin: bytes) -> Running:
        child = proc.Child(argv, cwd=self.config.project, env=self.agent_env, stdin=stdin)
        self.records.append(leftovers.record(child.pid))  # found again if we are kill -9ed
        return child

    def interactive(
        self,
        argv: Sequence[str],
        *,
        interrupts: proc.Interrupts,
        tick: Callable[[], bool],
        every: float,
    ) -> int | None:
        return terminal.foreground(
            argv,
            cwd=self.config.project,
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
            leftovers.forget(path)
        self.records.clear()
