"""A loop that governs itself: a circuit breaker for failing iterations, and
budgets of cost, tokens and wall time, each with a stop reason people can read.

Pure bookkeeping: the loop reports each finished iteration and asks, before starting the
next, whether it may. The numbers come from each iteration's `result` event. A budget kept
outside the loop (a group's, stoprequest.py) answers through `requested`.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ralph.shared import figures
from ralph.stream import Result
from ralph.watchdog import Expiry

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")
_UNIT = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(text: str) -> float:
    """`30s`, `90m`, `8h`, `1.5h`, `45` (seconds) as seconds; ValueError otherwise."""
    match = _DURATION.match(text)
    if not match or float(match.group(1)) <= 0:
        raise ValueError(f"{text!r} is not a duration such as 30s, 90m or 8h")
    return float(match.group(1)) * _UNIT[match.group(2)]


@dataclass(frozen=True, slots=True)
class Budgets:
    """The limits a loop runs under; None: no limit."""

    max_cost: float | None = None
    max_tokens: int | None = None
    max_time: float | None = None  # seconds of wall time
    max_failed: int = 3  # consecutive failed iterations before the breaker opens


@dataclass
class Governor:
    """Totals so far, the breaker's count, and the verdicts."""

    budgets: Budgets
    clock: Callable[[], float] = time.monotonic
    started: float = field(default=0.0)
    cost: float = 0.0
    tokens: int = 0
    iterations: int = 0
    failed_in_a_row: int = 0
    last_failure: str = ""
    # a stop asked for from outside (stoprequest.reason): its reason, or None
    requested: Callable[[], str | None] = lambda: None

    def __post_init__(self) -> None:
        self.started = self.clock()

    def elapsed(self) -> float:
        """Wall time since the loop started."""
        return self.clock() - self.started

    def time_left(self) -> float | None:
        """Seconds before --max-time runs out (None: no limit)."""
        if self.budgets.max_time is None:
            return None
        return self.budgets.max_time - self.elapsed()

    def record(self, result: Result | None, *, failure: str | None) -> None:
        """Count one finished iteration; `failure` says why it failed, None if it did not."""
        self.iterations += 1
        if result is not None:
            self.spend(result)
        if failure is None:
            self.failed_in_a_row = 0
        else:
            self.failed_in_a_row += 1
            self.last_failure = failure

    def spend(self, result: Result) -> None:
        """Add a run's cost and tokens to the totals (a check agent's too: the budgets are
        the loop's, whichever agent spent them)."""
        self.cost += result.cost_usd or 0.0
        self.tokens += sum(
            n or 0 for n in (result.input_tokens, result.output_tokens, result.cache_tokens)
        )

    def breaker_open(self) -> str | None:
        """The reason to stop for failures (exit 1), or None."""
        if self.failed_in_a_row >= self.budgets.max_failed:
            return (
                f"{self.failed_in_a_row} iterations in a row failed; the last: {self.last_failure}"
            )
        return None

    def all_failed(self) -> str | None:
        """The reason a loop that ran out of iterations failed (exit 1), or None.

        Fewer iterations than --max-failed-iterations, every one failed: "work may remain; run
        again" would be advice that is not true."""
        if self.iterations and self.failed_in_a_row == self.iterations:
            return f"every iteration failed ({self.iterations}); the last: {self.last_failure}"
        return None

    def over_budget(self) -> str | None:
        """The reason not to start another iteration (exit 2), or None."""
        b = self.budgets
        if b.max_cost is not None and self.cost >= b.max_cost:
            return f"budget reached: cost {figures.cost(self.cost)} of --max-cost ${b.max_cost:g}"
        if b.max_tokens is not None and self.tokens >= b.max_tokens:
            return f"budget reached: {self.tokens} tokens of --max-tokens {b.max_tokens}"
        left = self.time_left()
        if left is not None and left <= 0:
            return f"budget reached: {self.elapsed():.0f} s of --max-time {b.max_time:g} s"
        return self.requested()


def failure_of(
    status: int | None, result: Result | None, *, expiry: Expiry | None = None
) -> str | None:
    """Why an iteration counts as failed (for the breaker), or None when it did not.

    The --max-time budget and the grace after `result` stop an agent without failing it: its
    result, if any, decides."""
    if expiry is Expiry.IDLE:
        return "the watchdog stopped the agent"
    if expiry is Expiry.API_FAILING:
        return "the agent's API calls kept failing"
    if result is None:
        return f"the agent exited (status {status}) without a result"
    if result.is_error or result.subtype != "success":
        detail = result.text or "; ".join(result.errors) or result.subtype
        said = "" if result.nothing_done else "the agent reported an error: "
        return f"{said}{' '.join(detail.split())[:200]}"
    if status not in (0, None):
        return f"the agent exited with status {status}"
    return None
