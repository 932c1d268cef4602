"""Helpers of the `sgf top` tests: a fixed moment, and waiting on the app through its pilot."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


async def until(pilot: Any, condition: Callable[[], bool], what: str, timeout: float = 30) -> None:
    """Let the app run until `condition` holds, failing after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await pilot.pause(0.05)
