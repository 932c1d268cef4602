"""One AFK iteration: the agent's run, its event stream, watchdogs and usage-limit waits.

Every backend (agents/) comes through here the same way: its reader turns its stream into
stream.py's events, so the formatter, watchdog and limits never see which agent ran.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol

from ralph import format, limits, proc
from ralph import sandbox as sandboxes
from ralph.errors import AgentNotFound, UsageLimitFatal
from ralph.governor import Governor
from ralph.models import Config, SandboxKind
from ralph.render import Output
from ralph.sandbox.view import agent_not_found
from ralph.shared import figures
from ralph.stream import ApiRetry, Event, Parser, RateLimit, Result
from ralph.watchdog import Expiry, Watchdog

_CANNOT_RUN = (126, 127)  # the shell's and docker's "cannot execute" / "not found"
LIMITS_EVERY = 2.0  # seconds between looks at the sandbox's process and memory counters
LOOK_EVERY = 1.0  # seconds between looks at the budgets while a usage limit is waited out


@dataclass(frozen=True, slots=True)
class Attempt:
    """What one agent run produced."""

    status: int | None  # exit status; None when the agent could not be waited for
    result: Result | None = None
    rate_limit: RateLimit | None = None
    expiry: Expiry | None = None
    interrupted: bool = False
    seconds: float = 0.0
    limit: str | None = None  # the sandbox's process or memory limit ended the run
    api_error: str = ""  # the agent's last futile API call (ApiRetry.futile), as it said


def summary_line(index: int, attempt: Attempt) -> str:
    """`Iteration 3 done: 3m12s · 12 turns · 1234 in / 567 out tokens · $0.4300 · exit 0`;
    an iteration ralph stopped ends `· stopped (idle) · exit -9`, an interrupted one
    `· interrupted` (an agent stopped by a signal may well exit 0)."""
    parts = [figures.duration(attempt.seconds)]
    result = attempt.result
    if result is not None:
        if result.num_turns is not None:
            parts.append(f"{result.num_turns} turns")
        if result.input_tokens is not None or result.output_tokens is not None:
            tokens_in, tokens_out = result.input_tokens or 0, result.output_tokens or 0
            parts.append(
                f"{figures.tokens(tokens_in)} in / {figures.tokens(tokens_out)} out tokens"
            )
        if result.cost_usd is not None:
            parts.append(figures.cost(result.cost_usd))
    if attempt.interrupted:
        parts.append("interrupted")
        return f"Iteration {index} done: " + " · ".join(parts)
    if attempt.expiry is not None:
        parts.append(f"stopped ({attempt.expiry})")
    parts.append("exit ?" if attempt.status is None else f"exit {attempt.status}")
    return f"Iteration {index} done: " + " · ".join(parts)


class Starts(Protocol):
    """Where an AFK agent is started: a sandbox, or the check agent's own way into one."""

    def start(self, argv: Sequence[str], *, stdin: bytes) -> sandboxes.Running: ...


@dataclass
class Afk:
    """Runs the agent headless for one iteration, again after a usage limit lifts."""

    config: Config
    sandbox: Starts
    out: Output
    interrupts: proc.Interrupts
    governor: Governor
    env: Mapping[str, str] | None = None
    clock: Callable[[], float] = time.monotonic
    wall: Callable[[], float] = time.time
    _failing: str = field(default="", init=False, repr=False)  # this run's last futile retry

    def run(self) -> Attempt:
        """Run the agent; after a usage limit, wait and run the same iteration again."""
        t = self.config.timeouts
        tries = 0
        while True:
            attempt = self._once()
            if attempt.interrupted:
                return attempt
            now = datetime.fromtimestamp(self.wall(), UTC)
            limit = limits.detect(attempt.rate_limit, attempt.result, now=now)
            if limit is None:
                return attempt
            if limit.fatal:
                raise UsageLimitFatal(f"usage limit that waiting cannot lift: {limit.reason}")
            if limit.resets_at is not None:
                when = datetime.fromtimestamp(limit.resets_at).astimezone()
                self.out.warning(f"usage limit reached; it resets at {when:%Y-%m-%d %H:%M %Z}")
                wait = limit.resets_at - self.wall() + t.limit_margin
                if wait > 0:
                    if self._countdown(wait):
                        return self._cut_short(attempt)
                    self.out.note("retrying the same iteration")
                    continue
                why = "the reset time has passed but the limit holds"  # never spin on it
            else:
                why = "rate limited (429) with no reset time"
            tries += 1
            if tries > t.backoff_tries:
                self.out.warning(f"still rate limited after {t.backoff_tries} retries")
                return attempt
            wait = t.backoff_base * 2 ** (tries - 1)
            self.out.warning(f"{why}: retry {tries} in {figures.duration(wait)}")
            if self._countdown(wait):
                return self._cut_short(attempt)
            self.out.note("retrying the same iteration")

    def _countdown(self, seconds: float) -> bool:
        """Wait `seconds`, showing what is left; True when cut short: interrupted, or no
        iteration may start any more (a budget ran out, a stop was asked for), so a retry
        would be one iteration too many."""
        deadline = self.clock() + seconds
        step = 1.0 if self.out.live else 60.0  # a line a minute in a log, live on a terminal
        shown = self.clock()
        self.out.note(f"waiting {figures.duration(max(seconds, 0))} (Ctrl+C to stop)")
        try:
            while (left := deadline - self.clock()) > 0:
                if self.interrupts.sleep(min(left, LOOK_EVERY)):
                    return True
                if over := self.governor.over_budget():
                    self.out.warning(f"stopped waiting: {over}")
                    return True
                if self.clock() - shown >= step and (left := deadline - self.clock()) > 0:
                    shown = self.clock()
                    self.out.countdown(f"waiting {figures.duration(left)} (Ctrl+C to stop)")
        finally:
            self.out.countdown_done()
        return self.interrupts.fired

    def _cut_short(self, attempt: Attempt) -> Attempt:
        """The attempt a wait was cut short after: interrupted, or as it ended (the loop then
        stops before another iteration, for the reason the wait ended)."""
        if self.interrupts.fired:
            return Attempt(attempt.status, attempt.result, interrupted=True)
        return attempt

    def _once(self) -> Attempt:
        t = self.config.timeouts
        left = self.governor.time_left()
        until = None if left is None else self.clock() + left
        watch = Watchdog(
            idle=t.idle,
            post_result=t.post_result,
            clock=self.clock,
            until=until,
            api_wait=t.api_wait,
        )
        result: Result | None = None
        limit: RateLimit | None = None
        started = self.clock()
        argv, stdin = self.config.agent_run(self.env)
        running = self.sandbox.start(argv, stdin=stdin)
        status: int | None = None
        parser = Parser(self.config.backend(self.env).reader())
        self._failing = ""
        try:
            for event in parser.events(self._chunks(running, watch, parser)):
                self._seen(event, watch)
                if isinstance(event, Result):
                    result = event
                    watch.result_seen()
                elif isinstance(event, RateLimit) and (limit is None or not limit.rejected):
                    limit = event
        finally:
            status = running.close(grace=t.stop_grace)
            self._stderr_items(parser.stderr_end(), watch)
        hit = running.limit_hit()
        if hit is not None:
            self.out.warning(f"stopped the iteration: {hit}")
        if status in _CANNOT_RUN and parser.lines == 0 and not self.interrupts.fired:
            # exit 126/127 and not a line of output: the sandbox has no such program (a typo in
            # --command, or an image without claude); every iteration would fail the same way
            if self.config.sandbox is SandboxKind.DOCKER:
                raise agent_not_found(
                    self.config.command, project=self.config.project, env=self.env or {}
                )
            raise AgentNotFound(self.config.command, where=f"in the {self.config.sandbox} sandbox")
        return Attempt(
            status,
            result,
            limit,
            watch.fired,
            interrupted=self.interrupts.fired,
            seconds=self.clock() - started,
            limit=hit,
            api_error=self._failing,
        )

    def _seen(self, event: Event, watch: Watchdog) -> None:
        """Show an event; a retry that waiting will not mend keeps the failing-API deadline
        running, anything else from the agent stops it."""
        self.out.event(event, root=self.config.project)
        if isinstance(event, ApiRetry) and event.futile:
            why = ", ".join(str(x) for x in (event.error, event.status) if x)
            self._failing = format.cut(why, format.ERROR_WIDTH)
            watch.failing()
        else:
            watch.answered()

    def _stderr(self, watch: Watchdog, parser: Parser, data: bytes) -> None:
        watch.activity()  # stderr is output too: a chatty agent is not idle
        self._stderr_items(parser.stderr(data), watch)

    def _stderr_items(self, items: list[Event | bytes], watch: Watchdog) -> None:
        for item in items:
            if isinstance(item, bytes):
                self.out.agent_stderr(item)
            else:
                self._seen(item, watch)

    def _chunks(
        self, running: sandboxes.Running, watch: Watchdog, parser: Parser
    ) -> Iterator[bytes]:
        def on_stderr(data: bytes) -> None:
            self._stderr(watch, parser, data)

        def timeout() -> float:  # look at the sandbox's limits at least this often
            return min(watch.remaining(), LIMITS_EVERY)

        with contextlib.closing(running.output(self.interrupts, timeout, on_stderr)) as chunks:
            for chunk in chunks:
                if chunk is not None:
                    watch.activity()
                    yield chunk
                elif self.interrupts.fired or watch.expired() or running.limit_hit():
                    running.stop(grace=self.config.timeouts.stop_grace)
                    return

    # -- pushing -------------------------------------------------------------------------
