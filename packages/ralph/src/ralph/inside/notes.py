"""What the hooks write: the checklist's notes on a session, and what fired.

The state folder is the agent's to write, since the hooks run as the agent: it holds only the
checklist's notes on each session, which an agent can at most use to fool its own checklist,
and `events.jsonl`, what the guard refused and the checklist decided, which ralph reads back,
bounded and without following links, after each iteration (hooks.fired). What the guard
decides on is not here: it is ralph's record of the start, in the read-only guard folder
(baseline.py). Standard library only (sandbox).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

EVENTS = "events.jsonl"
_SESSION = re.compile(r"[^A-Za-z0-9_-]")


def record(state: Path, **event: object) -> None:
    """Append what fired to the state folder's events."""
    with (state / EVENTS).open("a", encoding="utf-8") as f:
        f.write(json.dumps(event) + "\n")


class Session:
    """One agent session's checklist notes, kept in `<state>/session-<id>.json`."""

    def __init__(self, state: Path, session_id: str) -> None:
        self.path = state / f"session-{_SESSION.sub('', session_id) or 'unknown'}.json"
        try:
            loaded = json.loads(self.path.read_text())
        except (OSError, ValueError):
            loaded = None
        self.data: dict[str, Any] = loaded if isinstance(loaded, dict) else {}
        if "seq" not in self.data:  # no session start seen: start counting now
            self.begin()

    def begin(self) -> None:
        self.data = {"seq": 0, "edit": 0, "passed": 0, "failed": 0, "blocks": 0}
        self.data.update(edited="", passed_by="", failed_by="", bug_filed=False)

    def tick(self) -> int:
        self.data["seq"] = int(self.data.get("seq", 0)) + 1
        return int(self.data["seq"])

    def number(self, key: str) -> int:
        value = self.data.get(key, 0)
        return value if isinstance(value, int) else 0

    def text(self, key: str) -> str:
        return str(self.data.get(key) or "")

    def save(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data))
        os.replace(tmp, self.path)
