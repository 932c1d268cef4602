"""ralph's hook program as one run's agent CLI calls it, and where each CLI is told to.

Every backend runs the same program (`ralph.inside.hookrun`, copied into the run's read-only
`guard/` folder by hooks.py) for the same events; only the CLI's way of calling it differs:
Claude Code's and gemini-cli's settings, codex's `requirements.toml`, opencode's plugin. Each
backend module says where and how in `wire()`: the file it reads as managed settings, which
no user, project or agent file outranks, and the flags it needs on the host.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

# The events ralph's hook program handles, by the names its command line takes.
SESSION_START, PRE_TOOL_USE, POST_TOOL_USE = "session-start", "pre-tool-use", "post-tool-use"
POST_TOOL_USE_FAILURE, STOP = "post-tool-use-failure", "stop"
# opencode has no event for the end of the agent's turn: the hook program runs it instead
# and asks again with the checklist's reason (inside/rerun.py).
RERUN = "rerun"
PROGRAM, OPTIONS = "hook.py", "options.json"
INSIDE = "lib/ralph/inside"  # the hook program's package, under the guard folder


@dataclass(frozen=True, slots=True)
class HookSet:
    """The hook program of one run, for one agent CLI."""

    folder: str  # the run's guard folder: the same path on the host and in the container
    python: str  # the image's python3 in the container, ralph's own on the host
    agent: str  # the backend (agents.names())
    guard: bool = True  # the command guard: a pre-tool-use hook
    stop: bool = True  # the stop checklist: a stop hook
    nonce: str = ""  # names the hooks where a CLI lets a project turn one off by name

    def program(self) -> list[str]:
        """The hook program's argv, but for the event."""
        program, options = f"{self.folder}/{PROGRAM}", f"{self.folder}/{OPTIONS}"
        return [self.python, "-I", program, "--agent", self.agent, "--options", options]

    def argv(self, event: str) -> list[str]:
        """The hook program's argv for `event`."""
        return [*self.program(), event]

    def line(self, event: str) -> str:
        """The same as one shell line, for the CLIs that run a hook through a shell."""
        return shlex.join(self.argv(event))

    def inside(self, name: str) -> str:
        """A file of the hook program's package, where the CLI finds it."""
        return f"{self.folder}/{INSIDE}/{name}"


@dataclass(frozen=True, slots=True)
class Wiring:
    """How one CLI runs ralph's hooks."""

    managed: str  # the path of its managed settings in the container
    content: bytes  # what ralph puts there, root's and read-only to the agent
    host_args: tuple[str, ...] = ()  # its flags under `--sandbox none` (the file beside)
