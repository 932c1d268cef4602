"""The seam between the loop and where the agent runs, and what every sandbox is given.

`docker.py` runs each iteration in a Docker container (the security boundary); `host.py`
runs the agent on the host (`--sandbox none`). Either way the agent works in the loop's
workspace (workspace.py), whose git steps (inside/workspace.sh) run where the agent runs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ralph import proc
from ralph.workspace import Workspace

if TYPE_CHECKING:
    from ralph.egress.refusals import Refusal

STEPS = ("prepare", "export", "leftovers")
SCRIPT = "workspace.sh"
# Inside a container: the workspace steps, the project's objects, the tracker, the outbox.
BIN, OBJECTS, PENSA, OUT = "/ralph/bin", "/ralph/objects", "/ralph/pensa", "/ralph/out"


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

    def limit_hit(self) -> str | None:
        """Why the sandbox is past use (its process or memory limit reached), or None."""
        ...


@dataclass(frozen=True, slots=True)
class Share:
    """A host folder a check's container sees at its own path (a check agent's home, its
    inputs, its verdict's folder); nothing else of the host's is mounted with it."""

    path: Path
    writable: bool = False


@dataclass
class Place:
    """Where a loop's agent works: its workspace, and what it starts from.

    `base` and `taken` change with every iteration (the host's commit to start from, the
    last tip it received); the rest is fixed for the loop."""

    workspace: Workspace
    top: Path  # the project's work tree top: where the workspace appears in a container
    branch: str  # the branch the agent works on in its repository
    objects: Path | None  # the project's object directory, borrowed read-only
    pensa: Path | None  # the project's `.pensa/` folder: the one database every loop claims in
    base: str = ""
    taken: str = ""
    stamp: str = ""  # the message of a stop's leftovers stash


class Sandbox(Protocol):
    """The seam between the loop and where the agent runs."""

    def prepare(self) -> list[str]:
        """Check the sandbox can run; remove what a crashed ralph left; return removed ids."""
        ...

    def remove_leftovers(self) -> list[str]:
        """Stop what a crashed ralph of this project left running (its containers, its host
        agents); return what was stopped."""
        ...

    @property
    def workdir(self) -> Path:
        """Where the agent works, as the agent sees it."""
        ...

    def start(self, argv: Sequence[str], *, stdin: bytes) -> Running:
        """Start an AFK agent with `stdin` as its input, then closed: in the workspace,
        prepared first and its commits exported after, when the loop has one."""
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

    def step(self, name: str) -> proc.Completed:
        """Run one of the workspace's STEPS where the agent runs, to its end."""
        ...

    def start_check(
        self,
        argv: Sequence[str],
        *,
        stdin: bytes = b"",
        env: Mapping[str, str] | None = None,
        shares: Sequence[Share] = (),
        home: Path | None = None,
    ) -> Running:
        """Start a command that reads only the project's objects (a check on a clean
        checkout, gate.py): no workspace, no tracker, no network beyond the agent's.

        A check agent (check/agent.py) also gets `env`, the folders `shares` names at their
        own paths, and `home` as its HOME with the key proxy's placeholders (in Docker)."""
        ...

    def agent_setup_env(self) -> dict[str, str]:
        """The environment a backend writes its configuration from (agents.Backend.setup):
        in Docker the key proxy's URLs and placeholders instead of the user's keys."""
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
