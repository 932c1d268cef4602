"""What the non-claude readers share: lenient JSON lines and fields, retries, verdicts."""

from __future__ import annotations

import dataclasses
import json
import re
import shlex
from collections.abc import Mapping
from typing import Any

from ralph.stream import NOTHING_DONE, ApiRetry, Result

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


def nothing_done(result: Result, *, tools: int, variable: str) -> Result:
    """`result` as ralph judges it: a success after not one tool call is a failure (the model
    is not given the agent's tools or ignores them); `variable` names the model."""
    if tools or result.is_error:
        return result
    why = (
        "the model made no tool call, so nothing was done: "
        f"set {variable} to a model the endpoint serves that can use the agent's tools"
    )
    return dataclasses.replace(result, subtype=NOTHING_DONE, is_error=True, text=why, errors=(why,))


_RETRY_STATUS = re.compile(r"\bstatus\D{0,3}([1-5]\d\d)\b", re.IGNORECASE)


def retry(attempt: int | None, error: str, *, offline: bool) -> ApiRetry:
    """A retry the CLI announced (`unexpected status 401 ...`, `failed with status 500`):
    answered when its message names a status, else `offline` as the reader judged it."""
    found = _RETRY_STATUS.search(error)
    status = int(found.group(1)) if found else None
    return ApiRetry(attempt, status, error, offline=offline and status is None)


def unnamed_model(agent: str, asked: str, model: str | None, host: Mapping[str, str]) -> list[str]:
    """The launch warning for a custom OPENAI_BASE_URL without OPENAI_MODEL: `agent` then asks
    that endpoint for `asked`, which it may not serve, or not with tools."""
    if model or not host.get("OPENAI_BASE_URL"):
        return []
    return [
        f"OPENAI_BASE_URL is set but OPENAI_MODEL is not: {agent} asks that endpoint for "
        f"{asked}, which it may not serve or give the agent's tools, and every iteration would "
        "fail or do nothing; set OPENAI_MODEL to a model the endpoint serves"
    ]
