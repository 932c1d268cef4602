"""Where the agent runs: the seam between the loop and a sandbox, and the choice of one.

`dockerbox.py` runs each iteration in a Docker container (the security boundary); `hostbox.py`
runs the agent on the host (`--sandbox none`). In Docker no credential enters the container
(egress/guard.py plans placeholders, the key proxy and the network before the backend writes
its configuration); each backend's configuration files go into the run's HOME (agents/).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ralph import proc
from ralph.models import Config, SandboxKind

if TYPE_CHECKING:
    from ralph.egress.refusals import Refusal


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

    def network_note(self) -> str:
        """One line: what the agent can reach, and where its keys are."""
        ...

    def refusals(self) -> list[Refusal]:
        """The agent's requests the egress proxy refused so far."""
        ...


def make(config: Config, *, env: Mapping[str, str], state: Path) -> Sandbox:
    """The sandbox `config.sandbox` asks for, with the backend's files in the run's HOME."""
    from ralph.dockerbox import DockerSandbox
    from ralph.egress.guard import Guard, remotes
    from ralph.hostbox import HostSandbox

    home = state / "home"
    home.mkdir(parents=True, exist_ok=True)
    if config.sandbox is SandboxKind.NONE:
        return HostSandbox(config, env, agent_vars=config.backend(env).setup(home, env))
    box = DockerSandbox(config, env, state)
    # the guard binds the key proxy now: the agent's files name its URLs and placeholders
    allow = [*config.allowed(), *remotes(config.project, env)]
    box.guard = Guard.plan(network=config.network, env=env, allow=allow, gateway=box.gateway)
    try:
        box.agent_vars = config.backend(env).setup(home, {**env, **box.guard.agent_env})
    except BaseException:
        box.guard.close()
        raise
    return box
