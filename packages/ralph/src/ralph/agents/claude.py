"""Claude Code: stream-json on stdout (stream.py parses it), the prompt on stdin."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from ralph.stream import ClaudeReader, Reader

_BYPASS = "--dangerously-skip-permissions"  # the container is the boundary


class Claude:
    name = "claude"

    def afk(self, command: str, prompt: bytes, extra: Sequence[str]) -> tuple[list[str], bytes]:
        flags = ["-p", "--output-format", "stream-json", "--verbose"]
        return [command, *flags, _BYPASS, *extra], prompt

    def interactive(self, command: str, hint: str | None, extra: Sequence[str]) -> list[str]:
        return [command, _BYPASS, *extra, *([hint] if hint else [])]

    def setup(self, home: Path, host: Mapping[str, str]) -> dict[str, str]:
        return {}  # claude_home.py writes its files (the sandbox needs them for every run)

    def reader(self) -> Reader:
        return ClaudeReader()

    def warnings(self, host: Mapping[str, str]) -> list[str]:
        return []
