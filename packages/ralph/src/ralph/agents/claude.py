"""Claude Code: stream-json on stdout (stream.py parses it), the prompt on stdin.

Its hooks are managed settings (`/etc/claude-code/managed-settings.json`): they outrank every
other level, and a `disableAllHooks` the agent writes into the project's `.claude/` cannot
turn them off (it does turn off `--settings` hooks: checked with the real claude). On the
host there is no managed file to write, so the same settings go by `--settings`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from ralph.agents import hookset
from ralph.agents.hookset import HookSet, Wiring
from ralph.stream import ClaudeReader, Reader

_BYPASS = "--dangerously-skip-permissions"  # the container is the boundary
MANAGED = "/etc/claude-code/managed-settings.json"
_TOOLS = "Bash|Edit|Write|MultiEdit|NotebookEdit"


class Claude:
    name = "claude"

    def afk(
        self, command: str, prompt: bytes, extra: Sequence[str], hooks: HookSet | None = None
    ) -> tuple[list[str], bytes]:
        flags = ["-p", "--output-format", "stream-json", "--verbose"]
        return [command, *flags, _BYPASS, *extra], prompt

    def interactive(self, command: str, hint: str | None, extra: Sequence[str]) -> list[str]:
        return [command, _BYPASS, *extra, *([hint] if hint else [])]

    def setup(
        self, home: Path, host: Mapping[str, str], hooks: HookSet | None = None
    ) -> dict[str, str]:
        return {}  # claude_home.py writes its files (the sandbox needs them for every run)

    def wire(self, hooks: HookSet) -> Wiring:
        host = ("--settings", f"{hooks.folder}/{Path(MANAGED).name}")
        return Wiring(MANAGED, json.dumps(settings(hooks), indent=2).encode(), host)

    def reader(self) -> Reader:
        return ClaudeReader()

    def warnings(self, host: Mapping[str, str]) -> list[str]:
        return []


def settings(hooks: HookSet) -> dict[str, object]:
    """The settings: one command per hook event ralph uses."""

    def command(event: str) -> list[dict[str, object]]:
        return [{"type": "command", "command": hooks.line(event), "timeout": 120}]

    events: dict[str, list[dict[str, object]]] = {
        "SessionStart": [{"hooks": command(hookset.SESSION_START)}],
        "PostToolUse": [{"matcher": _TOOLS, "hooks": command(hookset.POST_TOOL_USE)}],
        "PostToolUseFailure": [
            {"matcher": "Bash", "hooks": command(hookset.POST_TOOL_USE_FAILURE)}
        ],
    }
    if hooks.guard:
        events["PreToolUse"] = [{"matcher": _TOOLS, "hooks": command(hookset.PRE_TOOL_USE)}]
    if hooks.stop:
        events["Stop"] = [{"hooks": command(hookset.STOP)}]
    return {"hooks": events}
