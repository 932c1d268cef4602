"""What the non-claude readers share: lenient JSON lines and lenient fields."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from typing import Any

_STATUS = re.compile(r"\b(429|5\d\d)\b")
# A shell tool is shown as claude's `Bash(...)`, so the one-liners read the same for every agent.
SHELL = "Bash"


def load(line: bytes) -> dict[str, Any] | None:
    """One JSON object line, or None."""
    line = line.strip()
    if not line.startswith(b"{"):
        return None
    try:
        raw = json.loads(line)
    except ValueError:
        return None
    return raw if isinstance(raw, dict) else None


def obj(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def num(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def text(value: object) -> str:
    return value if isinstance(value, str) else ""


_LOGIN_SHELL = re.compile(r"^(?:/usr)?/bin/(?:ba)?sh -l?c ")


def command(line: str) -> str:
    """A shell command as the agent wrote it: codex shows `/bin/bash -lc '<command>'`."""
    if not _LOGIN_SHELL.match(line):
        return line
    try:
        words = shlex.split(line)
    except ValueError:
        return line
    return words[2] if len(words) == 3 else line


def status_in(message: str) -> int | None:
    """The HTTP status an error message names (`last status: 429 Too Many Requests`)."""
    found = _STATUS.search(message)
    return int(found.group(1)) if found else None


def args(value: object) -> Mapping[str, object]:
    """Tool arguments: an object, or a JSON string of one."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {"input": value}
    return value if isinstance(value, dict) else {}
