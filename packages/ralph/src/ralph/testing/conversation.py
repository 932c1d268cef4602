"""What the engine needs out of a request, whatever API dialect it arrived in.

Each dialect (`ralph.testing.dialects`) reads its own request body into this one `Request`:
the first user message (which script a conversation binds to), everything said so far, the
last tool results (`when.result`), the session key, and whether this is the agent's own turn.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Request:
    """One model request, decoded by its dialect."""

    prompt: str
    conversation: str = ""
    last_result: str = ""
    session: str = ""
    model: str = ""
    # The agent's own turn (it offers tools); anything else is a side call (titles, probes).
    is_main: bool = True
    # No assistant turn yet: the first request of a conversation (or its retry).
    is_fresh: bool = True
    streaming: bool = False
    cwd: str = ""
    body: Mapping[str, Any] = field(default_factory=dict)

    @property
    def session_key(self) -> str:
        """The CLI's session id when it sends one, else a digest of the prompt."""
        if self.session:
            return self.session
        return hashlib.sha256(self.prompt.encode()).hexdigest()[:16]


def as_text(value: object) -> str:
    """A JSON value as text for matching: strings as they are, the rest as sorted JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True)


def mappings(value: object) -> list[Mapping[str, Any]]:
    """The objects of a JSON list (nothing when it is not a list)."""
    return [item for item in value if isinstance(item, Mapping)] if isinstance(value, list) else []
