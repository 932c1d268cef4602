"""The agent backends ralph runs, by name: the one list every tool derives its names from.

ralph's `--agent` choices and its backend classes (`ralph.agents`), sgf's `agent` config
values, the key sgf's preflight and doctor ask for, and the image label that records which
version of each CLI an image carries all come from `BACKENDS`.
"""

from __future__ import annotations

# name -> the variable holding its API key (None: Claude Code's own credentials, which the
# key proxy reads from the environment or the host's login).
BACKENDS: dict[str, str | None] = {
    "claude": None,
    "codex": "OPENAI_API_KEY",
    "gemini": "GEMINI_API_KEY",
    "opencode": "OPENAI_API_KEY",
}


def names() -> tuple[str, ...]:
    """Every backend's name, in a fixed order."""
    return tuple(BACKENDS)


def label(name: str) -> str:
    """The image label that records which version of agent `name` an image carries."""
    return f"springfield.agent.{name}"
