"""API dialects of the scripted model server: one module per wire format, one protocol.

A dialect claims the request paths of its API, reads a request body into the engine's neutral
`Request`, and renders the engine's `MessageReply` / `ErrorReply` as that API's response
(JSON, or SSE events when the client streams). Tool calls named `SHELL` (the scenario's
backend-neutral `{"shell": ...}` step) become the agent's own shell tool.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from email.message import Message
from typing import Any, Protocol

from ralph.testing.conversation import Request
from ralph.testing.wire import ErrorReply, MessageReply


@dataclass(frozen=True, slots=True)
class Response:
    """What goes back on the wire: a JSON body, or a stream of encoded SSE events."""

    status: int
    body: bytes = b""
    events: tuple[bytes, ...] | None = None
    headers: Mapping[str, str] = field(default_factory=dict)


class Dialect(Protocol):
    name: str

    def handles(self, path: str) -> bool:
        """Whether a POST to `path` is this API's model request."""
        ...

    def request(self, path: str, body: Mapping[str, Any], headers: Message) -> Request:
        """The engine's view of one request body."""
        ...

    def reply(self, reply: MessageReply, request: Request) -> Response:
        """An assistant turn in this API's shape."""
        ...

    def error(self, reply: ErrorReply, request: Request) -> Response:
        """An HTTP error with this API's error body."""
        ...


def json_response(status: int, payload: object, headers: Mapping[str, str]) -> Response:
    return Response(status=status, body=json.dumps(payload).encode(), headers=dict(headers))


def data_event(payload: object, event: str | None = None) -> bytes:
    """One SSE event: an optional `event:` line and the JSON `data:` line."""
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(payload)}\n\n".encode()


def halves(text: str) -> Iterator[str]:
    """A string in two chunks, so clients exercise their delta accumulation."""
    middle = len(text) // 2
    yield from (part for part in (text[:middle], text[middle:]) if part)
