"""Replies and their bytes: Messages API JSON, SSE event streams and error bodies.

The reply values are the engine's neutral output; their Messages API encoding lives here
because it is the dialect the server grew from (`dialects.anthropic` calls it).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class TextBlock:
    text: str

    def start(self) -> dict[str, Any]:
        return {"type": "text", "text": ""}

    def deltas(self) -> Iterator[dict[str, Any]]:
        # Two chunks, so clients exercise their delta accumulation.
        middle = len(self.text) // 2
        for part in (self.text[:middle], self.text[middle:]):
            if part:
                yield {"type": "text_delta", "text": part}

    def full(self) -> dict[str, Any]:
        return {"type": "text", "text": self.text}


@dataclass(frozen=True, slots=True)
class ToolUseBlock:
    id: str
    name: str
    input: dict[str, Any]
    # A backend-neutral shell call: `input` is {"command": ...}; each dialect renames it to
    # its agent's shell tool.
    agent_shell: bool = False

    def start(self) -> dict[str, Any]:
        return {"type": "tool_use", "id": self.id, "name": self.name, "input": {}}

    def deltas(self) -> Iterator[dict[str, Any]]:
        encoded = json.dumps(self.input)
        middle = len(encoded) // 2
        for part in (encoded[:middle], encoded[middle:]):
            yield {"type": "input_json_delta", "partial_json": part}

    def full(self) -> dict[str, Any]:
        return {"type": "tool_use", "id": self.id, "name": self.name, "input": self.input}


Block = TextBlock | ToolUseBlock


@dataclass(frozen=True, slots=True)
class MessageReply:
    """A successful assistant message."""

    id: str
    model: str
    blocks: tuple[Block, ...]
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    input_tokens: int = 10  # what `usage` reports: Claude Code's total_cost_usd follows it

    @property
    def stop_reason(self) -> str:
        return "tool_use" if any(isinstance(b, ToolUseBlock) for b in self.blocks) else "end_turn"

    @property
    def output_tokens(self) -> int:
        return max(1, sum(len(json.dumps(b.full())) for b in self.blocks) // 4)

    def message(self, *, content: list[dict[str, Any]], stop_reason: str | None) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {
                "input_tokens": self.input_tokens,
                "output_tokens": 1 if stop_reason is None else 0,
            },
        }

    def json_body(self) -> bytes:
        body = self.message(content=[b.full() for b in self.blocks], stop_reason=self.stop_reason)
        body["usage"]["output_tokens"] = self.output_tokens
        return json.dumps(body).encode()

    def sse_events(self) -> Iterator[bytes]:
        """The SSE event stream of this message, one encoded event per item."""
        yield sse("message_start", {"message": self.message(content=[], stop_reason=None)})
        for index, block in enumerate(self.blocks):
            yield sse("content_block_start", {"index": index, "content_block": block.start()})
            for delta in block.deltas():
                yield sse("content_block_delta", {"index": index, "delta": delta})
            yield sse("content_block_stop", {"index": index})
        yield sse(
            "message_delta",
            {
                "delta": {"stop_reason": self.stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": self.output_tokens},
            },
        )
        yield sse("message_stop", {})


@dataclass(frozen=True, slots=True)
class ErrorReply:
    """An HTTP error with an Anthropic-style error body."""

    status: int
    error_type: str
    message: str
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0

    def json_body(self) -> bytes:
        body = {"type": "error", "error": {"type": self.error_type, "message": self.message}}
        return json.dumps(body).encode()


Reply = MessageReply | ErrorReply


def sse(event: str, data: dict[str, Any]) -> bytes:
    """Encode one server-sent event whose data carries its own `type`."""
    return f"event: {event}\ndata: {json.dumps({'type': event, **data})}\n\n".encode()


ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
