"""Read what the engine needs out of a Messages API request body.

Claude Code 2.1.330 sends the main agent's turns with its tool list (`tools`), a session id in
the `X-Claude-Code-Session-Id` header, and the prompt as the last text block of the first user
message (after `<system-reminder>` blocks). Side calls (titles, quota probes) carry no tools.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_CWD = re.compile(r"Primary working directory: (\S+)")


@dataclass(frozen=True, slots=True)
class Request:
    """One decoded POST /v1/messages body plus the headers that identify its session."""

    body: Mapping[str, Any]
    session_header: str = ""

    @property
    def messages(self) -> list[Mapping[str, Any]]:
        raw = self.body.get("messages", [])
        return [m for m in raw if isinstance(m, Mapping)] if isinstance(raw, list) else []

    @property
    def is_main(self) -> bool:
        """The agent's own turn (it offers tools); anything else is a side call."""
        tools = self.body.get("tools")
        return isinstance(tools, list) and len(tools) > 0

    @property
    def is_fresh(self) -> bool:
        """No assistant turn yet: the first request of a conversation (or its retry)."""
        return not any(m.get("role") == "assistant" for m in self.messages)

    @property
    def streaming(self) -> bool:
        return bool(self.body.get("stream"))

    @property
    def model(self) -> str:
        return str(self.body.get("model", ""))

    @property
    def session_key(self) -> str:
        """The CLI's session id when sent, else a digest of the prompt."""
        if self.session_header:
            return self.session_header
        return hashlib.sha256(self.prompt.encode()).hexdigest()[:16]

    @property
    def prompt(self) -> str:
        """All text of the first user message (reminders included)."""
        for message in self.messages:
            if message.get("role") == "user":
                return content_text(message.get("content"))
        return ""

    @property
    def last_result(self) -> str:
        """Text of the tool results in the last user message ("" when there are none)."""
        for message in reversed(self.messages):
            if message.get("role") != "user":
                continue
            content = message.get("content")
            if not isinstance(content, list):
                return ""
            return "\n".join(
                content_text(block.get("content"))
                for block in content
                if isinstance(block, Mapping) and block.get("type") == "tool_result"
            )
        return ""

    @property
    def conversation(self) -> str:
        """Everything said so far, tool inputs and results included, as one string."""
        return "\n".join(content_text(m.get("content")) for m in self.messages)

    @property
    def cwd(self) -> str:
        """The working directory Claude Code announces in its environment block."""
        found = _CWD.search(self.conversation) or _CWD.search(system_text(self.body))
        return found.group(1) if found else ""


def content_text(content: object) -> str:
    """Flatten a message or tool_result `content` (string or block list) to text."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts: list[str] = []
    for block in content:
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "text":
            parts.append(str(block.get("text", "")))
        elif kind == "tool_use":
            parts.append(json.dumps(block.get("input", {}), sort_keys=True))
        elif kind == "tool_result":
            parts.append(content_text(block.get("content")))
    return "\n".join(parts)


def system_text(body: Mapping[str, Any]) -> str:
    """The system prompt as text (string or block list)."""
    return content_text(body.get("system"))
