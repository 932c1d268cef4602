"""Agent backends: what differs between claude, codex, gemini and opencode, behind one protocol.

Each module says how to run its CLI headless (AFK) and on the user's terminal, which files and
variables it needs in the run's HOME (written by ralph, outside the project, so the agent cannot
change the configuration of its next run there), and how to read its event stream into
stream.py's events. Everything else (formatter, budgets, run record, watchdog, usage-limit waits,
sentinel) only sees those events, so it works the same for every backend. Each also says how
its CLI runs ralph's hooks (hookset.py): the guardrails hold for every backend.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

from ralph.agents.hookset import HookSet, Wiring
from ralph.shared.backends import label, names
from ralph.stream import Reader

__all__ = ["Backend", "get", "label", "names"]


class Backend(Protocol):
    """One agent CLI."""

    name: str

    def afk(
        self, command: str, prompt: bytes, extra: Sequence[str], hooks: HookSet | None = None
    ) -> tuple[list[str], bytes]:
        """The headless argv and what goes to its stdin (the prompt, or nothing); run through
        the hook program where the CLI needs it to (`hooks`: the run's, if any)."""
        ...

    def interactive(self, command: str, hint: str | None, extra: Sequence[str]) -> list[str]:
        """The argv for a session on the user's terminal, opened with `hint`."""
        ...

    def setup(
        self, home: Path, host: Mapping[str, str], hooks: HookSet | None = None
    ) -> dict[str, str]:
        """Write the CLI's configuration under `home` (the run's HOME), with `hooks` in it on
        the host where no flag names them; return its variables."""
        ...

    def wire(self, hooks: HookSet) -> Wiring:
        """How the CLI runs `hooks`: its managed settings in the container, its host flags."""
        ...

    def reader(self) -> Reader:
        """A fresh reader of one run's event stream."""
        ...

    def warnings(self, host: Mapping[str, str]) -> list[str]:
        """What is said once, before the first iteration, about a doubtful configuration."""
        ...


def get(name: str, env: Mapping[str, str] | None = None) -> Backend:
    """The backend called `name` (one of `names()`), with the model `env` names for it
    (OPENAI_MODEL for codex and opencode, GEMINI_MODEL for gemini); KeyError otherwise."""
    from ralph.agents import claude, codex, gemini, opencode

    env = env or {}
    openai, google = env.get("OPENAI_MODEL") or None, env.get("GEMINI_MODEL") or None
    found: dict[str, Backend] = {
        "claude": claude.Claude(),
        "codex": codex.Codex(openai),
        "gemini": gemini.Gemini(google),
        "opencode": opencode.Opencode(openai),
    }
    return found[name]


def missing(name: str, labels: Mapping[str, str]) -> str | None:
    """Why an image with `labels` cannot run agent `name`, or None.

    claude's images predate the per-agent labels, so only the other agents are checked.
    """
    if name == "claude" or label(name) in labels:
        return None
    return (
        f"the sandbox image has no {name} (no {label(name)} label): add {name} to the agents "
        "the project's .sgf/config.toml names and run `sgf sandbox build`"
    )
