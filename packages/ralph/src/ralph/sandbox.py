"""Where the agent runs: the seam between the loop and a sandbox, and the choice of one.

`dockerbox.py` runs each iteration in a Docker container (the security boundary); `hostbox.py`
runs the agent on the host (`--sandbox none`). Secrets never become container env (see
credentials.py); each backend's configuration files go into the run's HOME (agents/).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ralph import proc
from ralph.models import Config, SandboxKind

if TYPE_CHECKING:
    pass


class Running(Protocol):
    """One agent run in progress (see proc.Child)."""

    def output(
        self,
        interrupts: proc.Interrupts,
        timeout: Callable[[], float],
        on_stderr: Callable[[bytes], None],
    ) -> proc.Output:
        """Stdout chunks; None when `timeout()` passed or a signal came (see Child.output)."""
        ...

    def stop(self, *, grace: float) -> int:
        """The SIGINT -> SIGTERM -> SIGKILL ladder; returns the exit status."""
        ...

    def close(self, *, grace: float) -> int:
        """Let it exit, else stop it; release pipes and the container (idempotent)."""
        ...


class Sandbox(Protocol):
    """The seam between the loop and where the agent runs."""

    def prepare(self) -> list[str]:
        """Check the sandbox can run; remove what a crashed ralph left; return removed ids."""
        ...

    def start(self, argv: Sequence[str], *, stdin: bytes) -> Running:
        """Start an AFK agent with `stdin` as its input, then closed."""
        ...

    def interactive(
        self,
        argv: Sequence[str],
        *,
        interrupts: proc.Interrupts,
        tick: Callable[[], bool],
        every: float,
    ) -> int | None:
        """Run an agent on the user's terminal; None when interrupted."""
        ...

    def close(self) -> None:
        """Remove everything this sandbox started (idempotent)."""
        ...


def make(config: Config, *, env: Mapping[str, str], state: Path) -> Sandbox:
    """The sandbox `config.sandbox` asks for, with the backend's files in the run's HOME."""
    from ralph.dockerbox import DockerSandbox
    from ralph.hostbox import HostSandbox

    home = state / "home"
    home.mkdir(parents=True, exist_ok=True)
    agent_vars = config.backend(env).setup(home, env)
    if config.sandbox is SandboxKind.NONE:
        return HostSandbox(config, env, agent_vars=agent_vars)
    return DockerSandbox(config, env, state, agent_vars=agent_vars)
