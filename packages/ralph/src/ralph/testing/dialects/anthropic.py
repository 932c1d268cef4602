"""The Anthropic Messages API (`POST /v1/messages`), spoken by Claude Code.

Claude Code 2.1.330 sends the main agent's turns with its tool list (`tools`), a session id in
the `X-Claude-Code-Session-Id` header, and the prompt as the last text block of the first user
message (after `<system-reminder>` blocks). Side calls (titles, quota probes) carry no tools.
Its shell tool is `Bash` {command}.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from email.message import Message
from typing import Any

from ralph.testing.conversation import Request, as_text, mappings
from ralph.testing.dialects import Response
from ralph.testing.wire import Block, ErrorReply, MessageReply, ToolUseBlock

_CWD = re.compile(r"Primary working directory: (\S+)")


class Anthropic:
    name = "anthropic"

    def handles(self, path: str) -> bool:
        return path == "/v1/messages"

    def request(self, path: str, body: Mapping[str, Any], headers: Message) -> Request:
        messages = mappings(body.get("messages"))
        conversation = "\n".join(content_text(m.get("content")) for m in messages)
        found = _CWD.search(conversation) or _CWD.search(content_text(body.get("system")))
        tools = body.get("tools")
        return Request(
            prompt=next(
                (content_text(m.get("content")) for m in messages if m.get("role") == "user"), ""
            ),
            conversation=conversation,
            last_result=_last_result(messages),
            session=headers.get("X-Claude-Code-Session-Id", ""),
            model=str(body.get("model", "")),
            is_main=isinstance(tools, list) and len(tools) > 0,
            is_fresh=not any(m.get("role") == "assistant" for m in messages),
            streaming=bool(body.get("stream")),
            cwd=found.group(1) if found else "",
            body=body,
        )

    def reply(self, reply: MessageReply, request: Request) -> Response:
        reply = replace(reply, blocks=tuple(_named(block) for block in reply.blocks))
        headers = {"request-id": f"req_{reply.id}", **reply.headers}
        if request.streaming:
            return Response(200, events=tuple(reply.sse_events()), headers=headers)
        return Response(200, body=reply.json_body(), headers=headers)

    def error(self, reply: ErrorReply, request: Request) -> Response:
        return Response(reply.status, body=reply.json_body(), headers=reply.headers)


def _named(block: Block) -> Block:
    """A neutral shell call as Claude Code's own `Bash` tool."""
    if isinstance(block, ToolUseBlock) and block.agent_shell:
        return replace(block, name="Bash", agent_shell=False)
    return block


def _last_result(messages: list[Mapping[str, Any]]) -> str:
    """Text of the tool results in the last user message ("" when there are none)."""
    for message in reversed(messages):
        if message.get("role") != "user":
            continue
        return "\n".join(
            content_text(block.get("content"))
            for block in mappings(message.get("content"))
            if block.get("type") == "tool_result"
        )
    return ""


def content_text(content: object) -> str:
    """Flatten a message or tool_result `content` (string or block list) to text."""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in mappings(content):
        kind = block.get("type")
        if kind == "text":
            parts.append(str(block.get("text", "")))
        elif kind == "tool_use":
            parts.append(as_text(block.get("input", {})))
        elif kind == "tool_result":
            parts.append(content_text(block.get("content")))
    return "\n".join(parts)
