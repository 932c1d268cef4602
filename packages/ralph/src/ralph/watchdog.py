"""Deadlines for a running agent: no output for too long, alive too long after `result`, or
every call to its API failing for too long."""

from __future__ import annotations

import time
from collections.abc import Callable
from enum import StrEnum


class Expiry(StrEnum):
    """Which deadline stopped the agent."""

    IDLE = "idle"
    POST_RESULT = "post-result"
    MAX_TIME = "max-time"  # the loop's --max-time budget ran out mid-iteration
    API_FAILING = "api-failing"  # the agent's API unreachable or refusing it, for too long


class Watchdog:
    """Tracks the agent's last output and its `result`; says when to give up on it."""

    def __init__(
        self,
        *,
        idle: float,
        post_result: float,
        clock: Callable[[], float] = time.monotonic,
        until: float | None = None,
        api_wait: float = float("inf"),
    ) -> None:
        self._until = until  # an absolute deadline on `clock` (the --max-time budget)
        self._idle = idle
        self._post_result = post_result
        self._api_wait = api_wait
        self._clock = clock
        self._last = clock()
        self._result_at: float | None = None
        self._failing_since: float | None = None
        self.fired: Expiry | None = None

    def activity(self) -> None:
        """The agent printed something: the idle deadline starts again."""
        self._last = self._clock()

    def result_seen(self) -> None:
        """The `result` event arrived: the post-result grace starts (once)."""
        if self._result_at is None:
            self._result_at = self._clock()

    def failing(self) -> None:
        """The agent retries an API call that got no answer or a refusal (ApiRetry.futile):
        the deadline starts at the first of an unbroken run of these. An agent that retries
        forever (codex waits for the network), for minutes (claude retries a refused key ten
        times) or prints every retry (gemini) never trips the idle deadline."""
        if self._failing_since is None:
            self._failing_since = self._clock()

    def answered(self) -> None:
        """Anything else came from the agent (text, a tool call, a retry worth waiting for)."""
        self._failing_since = None

    def _deadline(self) -> tuple[float, Expiry]:
        candidates = [(self._last + self._idle, Expiry.IDLE)]
        if self._result_at is not None:
            candidates.append((self._result_at + self._post_result, Expiry.POST_RESULT))
        if self._failing_since is not None:
            candidates.append((self._failing_since + self._api_wait, Expiry.API_FAILING))
        if self._until is not None:
            candidates.append((self._until, Expiry.MAX_TIME))
        return min(candidates)

    def remaining(self) -> float:
        """Seconds until the nearest deadline (never negative)."""
        return max(self._deadline()[0] - self._clock(), 0.0)

    def expired(self) -> Expiry | None:
        """The deadline that has passed, if any; remembered in `fired`."""
        when, which = self._deadline()
        if self._clock() >= when:
            self.fired = which
        return self.fired
