"""The loop: run the agent up to N times until it writes its `.ralph-complete`.

Each iteration prints a banner, runs the agent (AFK: formatted stream, watchdogs, usage-limit
waits; interactive: the user's terminal), prints a summary and pushes new commits.
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ralph import (
    format,
    gate,
    git,
    gitdirs,
    hooks,
    integrate,
    limits,
    proc,
    quarantine,
    safefile,
    sentinel,
)
from ralph import sandbox as sandboxes
from ralph.ding import Ding
from ralph.errors import AgentNotFound, RalphError, UsageLimitFatal
from ralph.governor import Governor, failure_of
from ralph.models import Config, Exit
from ralph.record import Record, changes, held, now_iso
from ralph.render import Output
from ralph.stream import Parser, RateLimit, Result
from ralph.watchdog import Expiry, Watchdog

_CANNOT_RUN = (126, 127)  # the shell's and docker's "cannot execute" / "not found"


@dataclass(frozen=True, slots=True)
class Attempt:
    """What one agent run produced."""

    status: int | None  # exit status; None when the agent could not be waited for
    result: Result | None = None
    rate_limit: RateLimit | None = None
    expiry: Expiry | None = None
    interrupted: bool = False
    seconds: float = 0.0


def summary_line(index: int, attempt: Attempt) -> str:
    """`Iteration 3 done: 3m12s · 12 turns · 1234 in / 567 out tokens · $0.4300 · exit 0`."""
    parts = [format.duration(attempt.seconds)]
    result = attempt.result
    if result is not None:
        if result.num_turns is not None:
            parts.append(f"{result.num_turns} turns")
        if result.input_tokens is not None or result.output_tokens is not None:
            tokens_in, tokens_out = result.input_tokens or 0, result.output_tokens or 0
            parts.append(f"{format.tokens(tokens_in)} in / {format.tokens(tokens_out)} out tokens")
        if result.cost_usd is not None:
            parts.append(format.cost(result.cost_usd))
    parts.append("exit ?" if attempt.status is None else f"exit {attempt.status}")
    return f"Iteration {index} done: " + " · ".join(parts)


class Loop:
    """Runs the iterations of one ralph invocation against a sandbox."""

    def __init__(
        self,
        config: Config,
        sandbox: sandboxes.Sandbox,
        out: Output,
        interrupts: proc.Interrupts,
        *,
        env: Mapping[str, str] | None = None,
        max_iterations: int = 100,
        prompt_hint: str | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.config = config
        self.sandbox = sandbox
        self.out = out
        self.interrupts = interrupts
        self.env = env
        self.max_iterations = max_iterations
        self.prompt_hint = prompt_hint
        self.clock = clock
        self.wall = wall
        self.governor = Governor(config.budgets, clock=clock)
        self.stop_reason = ""
        # When the attempt the loop's stop cut short began: its claims were no real attempt,
        # so they are released as interrupted and do not count towards --stuck-threshold.
        self.cut_short_since: datetime | None = None
        self.record = Record(config.record, loop_id=config.loop_id)
        # Read before any agent runs; checked after each iteration, before the host's git.
        self.layout = gitdirs.find(config.project)
        self.integrator = integrate.make(
            config, self.layout, env=env, gate=gate.make(config, sandbox, interrupts)
        )
        self.guard = quarantine.make(config, self.layout, env=env)

    @property
    def root(self) -> Path:
        return self.config.project

    def run(self) -> Exit:
        """Run up to N iterations; 0 when the sentinel appears, 2 when exhausted or over
        budget, 1 when the circuit breaker opens, 130 on signal."""
        b = self.config.budgets
        self.record.write(
            "start",
            iterations=self.config.iterations,
            max_cost=b.max_cost,
            max_tokens=b.max_tokens,
            max_time=b.max_time,
        )
        holding = self._holding()
        try:
            code = self._iterate()
        except RalphError as e:  # printed by the CLI; recorded here, with the totals so far
            self.stop_reason = f"error: {e}"
            self._end(Exit.ERROR, holding)
            raise
        self._end(code, holding)
        return code

    def _holding(self) -> dict[str, str] | None:
        """What the loop's actor holds now, for the tasks closed in the totals (None: no pn)."""
        actor = self.config.loop_env(self.env or {})["PN_ACTOR"]
        return held(self.root, actor, self.env or {})

    def _end(self, code: Exit, holding: dict[str, str] | None) -> None:
        """Print the totals line and write the record's `end` (issue 10)."""
        closed = None if holding is None else changes(holding, self._holding())[1]
        self._totals(code, closed)
        g = self.governor
        self.record.write(
            "end",
            exit=int(code),
            stop_reason=self.stop_reason,
            iterations=g.iterations,
            tasks_closed=closed,
            cost=round(g.cost, 6),
            tokens=g.tokens,
            seconds=round(g.elapsed(), 1),
        )

    def _iterate(self) -> Exit:
        total = self.config.iterations
        if total > self.max_iterations:
            self.out.warning(
                f"Reducing iterations from {total} to max allowed ({self.max_iterations})"
            )
            total = self.max_iterations
        loop_id = self.config.loop_id
        sentinel.clear(self.root, loop_id)
        sentinel.take_ding(self.root)
        for index in range(1, total + 1):
            if self.interrupts.fired:  # a signal during set-up or a push
                return self._stop(Exit.INTERRUPTED, "interrupted")
            if over := self.governor.over_budget():
                self.out.warning(f"stopping before iteration {index}: {over}")
                return self._stop(Exit.EXHAUSTED, over)
            sentinel.clear(self.root, loop_id)
            self.out.banner(index, total, loop_id)
            before = git.head(self.root, env=self.env)
            start = None if self.guard is None else self.guard.start()
            self.record.write("iteration_start", index=index, total=total)
            holding = self._held()
            started = now_iso()
            began = datetime.fromtimestamp(self.wall(), UTC)
            try:
                attempt = self._iteration(index)
            except RalphError as e:  # e.g. a usage limit for good: the iteration ended too
                attempt = Attempt(None)
                self._record_iteration(index, started, attempt, holding, failure=str(e))
                raise
            # counted however the loop goes on: completed, interrupted, over budget or failed
            self._record_iteration(index, started, attempt, holding)
            if self.layout is not None:
                gitdirs.unchanged(self.layout)  # raises: no host git on redirected pointers
            if self.guard is not None and start is not None:
                self.guard.check(start)  # raises: nothing pushed or integrated, branch reset
            if self.integrator is not None:
                self._integrate(holding)  # a conflict raises: the loop stops, the branch is kept
            else:
                self._push_if_moved(before)  # interrupted iterations' commits too, before the next
            if attempt.interrupted or self.interrupts.fired:
                # a signal after the agent ended (during the push) cut nothing short
                self.cut_short_since = began if attempt.interrupted else None
                return self._stop(Exit.INTERRUPTED, "interrupted")
            if sentinel.take(self.root, loop_id):
                self.out.summary(f"ralph complete after {index} iteration(s)")
                self._push_pending()
                return self._stop(Exit.COMPLETE, "complete")
            if attempt.expiry is Expiry.MAX_TIME:
                over = self.governor.over_budget() or "budget reached: --max-time"
                self.out.warning(f"stopping: {over}")
                self.cut_short_since = began
                return self._stop(Exit.EXHAUSTED, over)
            if broken := self.governor.breaker_open():
                self.out.error(f"stopping: {broken}")
                return self._stop(Exit.ERROR, broken)
        sentinel.clear(self.root, loop_id)
        self.out.note(f"ralph reached max iterations ({total})")
        if failed := self.governor.all_failed():  # no "work may remain; run again" then
            self.out.error(f"stopping: {failed}")
            return self._stop(Exit.ERROR, failed)
        return self._stop(Exit.EXHAUSTED, "iterations exhausted")

    def _held(self) -> dict[str, str] | None:
        if self.config.record is None and (self.integrator is None or not self.integrator.gate):
            return None  # only a recorded loop pays for asking pn every iteration
        return self._holding()

    def _record_iteration(
        self,
        index: int,
        started: str,
        attempt: Attempt,
        before: dict[str, str] | None,
        *,
        failure: str | None = None,
    ) -> None:
        """Count a finished iteration in the totals and write its record line."""
        fired = hooks.fired(self.config)
        for event in fired:
            self.out.note(hooks.describe(event))
        result = attempt.result
        failure = failure or failure_of(
            attempt.status, result, expired=attempt.expiry is Expiry.IDLE
        )
        # interrupted or cut by --max-time is no failure; interactive sessions have no result
        judged = (
            self.config.afk and not attempt.interrupted and attempt.expiry is not Expiry.MAX_TIME
        )
        self.governor.record(result, failure=failure if judged else None)
        if self.config.record is None:
            return
        claimed, closed = changes(before, self._held())
        tokens = None
        if result is not None:
            tokens = sum(
                n or 0 for n in (result.input_tokens, result.output_tokens, result.cache_tokens)
            )
        self.record.write(
            "iteration",
            index=index,
            started_at=started,
            ended_at=now_iso(),
            exit=attempt.status,
            cost=result.cost_usd if result else None,
            tokens=tokens,
            turns=result.num_turns if result else None,
            claimed=claimed,
            closed=closed,
            failure=failure,
            guardrails=fired,
        )

    def _stop(self, code: Exit, reason: str) -> Exit:
        if code is Exit.INTERRUPTED:
            self.out.note("Interrupted.")
        self.stop_reason = reason
        return code

    def _totals(self, code: Exit, closed: list[str] | None) -> None:
        g = self.governor
        tasks = "" if closed is None else f"{len(closed)} task(s) closed, "
        self.out.summary(
            f"totals: {g.iterations} iteration(s), {tasks}{format.cost(g.cost)}, "
            f"{format.tokens(g.tokens)} tokens, "
            f"{format.duration(g.elapsed())}; stopped: {self.stop_reason or code.name.lower()}"
        )

    # -- one iteration -------------------------------------------------------------------

    def _iteration(self, index: int) -> Attempt:
        attempt = self._afk_with_limits() if self.config.afk else self._interactive()
        self._report(index, attempt)
        return attempt

    def _report(self, index: int, attempt: Attempt) -> None:
        t = self.config.timeouts
        if attempt.expiry is Expiry.IDLE:
            self.out.warning(f"no output from the agent for {t.idle:g} s: stopped it")
        elif attempt.expiry is Expiry.POST_RESULT:
            self.out.warning(f"agent still running {t.post_result:g} s after its result: stopped")
        elif attempt.expiry is Expiry.MAX_TIME:
            self.out.warning("the --max-time budget ran out: stopped the agent")
        elif self.config.afk and not attempt.interrupted:
            if attempt.result is None:
                self.out.warning(f"agent exited (status {attempt.status}) without a result")
            elif attempt.status not in (0, None):
                self.out.warning(f"agent exited with status {attempt.status}")
        self.out.summary(summary_line(index, attempt))

    def _interactive(self) -> Attempt:
        started = self.clock()
        ding = Ding(self.root, command=self.config.ding_command, bell=self.out.bell)
        finished = sentinel.SessionEnd(
            lambda: bool(sentinel.mine(self.root, self.config.loop_id)),
            grace=self.config.timeouts.sentinel_grace,
            clock=self.clock,
        )

        def tick() -> bool:
            ding.check()
            return finished.due()

        try:
            status = self.sandbox.interactive(
                self.config.agent_argv(prompt_hint=self.prompt_hint),
                interrupts=self.interrupts,
                tick=tick,
                every=self.config.timeouts.ding_poll,
            )
        finally:
            ding.close()
        return Attempt(status, interrupted=status is None, seconds=self.clock() - started)

    def _afk_with_limits(self) -> Attempt:
        """Run the agent; after a usage limit, wait and run the same iteration again."""
        t = self.config.timeouts
        tries = 0
        while True:
            attempt = self._afk_once()
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
                        return Attempt(attempt.status, attempt.result, interrupted=True)
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
            self.out.warning(f"{why}: retry {tries} in {format.duration(wait)}")
            if self._countdown(wait):
                return Attempt(attempt.status, attempt.result, interrupted=True)
            self.out.note("retrying the same iteration")

    def _countdown(self, seconds: float) -> bool:
        """Wait `seconds`, showing what is left; True when interrupted."""
        deadline = self.clock() + seconds
        step = 1.0 if self.out.live else 60.0
        self.out.note(f"waiting {format.duration(max(seconds, 0))} (Ctrl+C to stop)")
        try:
            while (left := deadline - self.clock()) > 0:
                if self.interrupts.sleep(min(left, step)):
                    return True
                if (left := deadline - self.clock()) > 0:
                    self.out.countdown(f"waiting {format.duration(left)} (Ctrl+C to stop)")
        finally:
            self.out.countdown_done()
        return self.interrupts.fired

    def _afk_once(self) -> Attempt:
        t = self.config.timeouts
        left = self.governor.time_left()
        until = None if left is None else self.clock() + left
        watch = Watchdog(idle=t.idle, post_result=t.post_result, clock=self.clock, until=until)
        result: Result | None = None
        limit: RateLimit | None = None
        started = self.clock()
        running = self.sandbox.start(self.config.agent_argv(), stdin=self.config.prompt.data)
        status: int | None = None
        parser = Parser()
        try:
            for event in parser.events(self._chunks(running, watch)):
                self.out.event(event, root=self.root)
                if isinstance(event, Result):
                    result = event
                    watch.result_seen()
                elif isinstance(event, RateLimit) and (limit is None or not limit.rejected):
                    limit = event
        finally:
            status = running.close(grace=t.stop_grace)
        if status in _CANNOT_RUN and parser.lines == 0 and not self.interrupts.fired:
            # exit 126/127 and not a line of output: the sandbox has no such program (a typo in
            # --command, or an image without claude); every iteration would fail the same way
            raise AgentNotFound(self.config.command, where=f"in the {self.config.sandbox} sandbox")
        return Attempt(
            status,
            result,
            limit,
            watch.fired,
            interrupted=self.interrupts.fired,
            seconds=self.clock() - started,
        )

    def _stderr(self, watch: Watchdog, data: bytes) -> None:
        watch.activity()  # stderr is output too: a chatty agent is not idle
        self.out.agent_stderr(data)

    def _chunks(self, running: sandboxes.Running, watch: Watchdog) -> Iterator[bytes]:
        with contextlib.closing(
            running.output(self.interrupts, watch.remaining, lambda data: self._stderr(watch, data))
        ) as chunks:
            for chunk in chunks:
                if chunk is not None:
                    watch.activity()
                    yield chunk
                elif self.interrupts.fired or watch.expired():
                    running.stop(grace=self.config.timeouts.stop_grace)
                    return

    # -- pushing -------------------------------------------------------------------------

    def _push_if_moved(self, before: str | None) -> None:
        if not self.config.auto_push:
            return
        after = git.head(self.root, env=self.env)
        if after is None or after == before:
            return
        self.out.note("New commits detected, pushing...")
        self._push()

    def _integrate(self, holding: dict[str, str] | None) -> None:
        assert self.integrator is not None
        try:
            done = self.integrator.run()
        except gate.ChecksFailed as failed:  # the loop goes on with the next task
            closed = changes(holding or {}, self._holding() or {})[1]
            reopened = gate.reopen(self.root, closed, failed, env=self.env or {})
            kept = f"; its commits are on {failed.kept}" if failed.kept else ""
            self.out.warning(f"{failed}{kept}; reopened: {', '.join(reopened) or 'none'}")
            self.record.write("merge_check", passed=False, status=failed.status, reopened=reopened)
            return
        if done is None:
            return
        branch = self.integrator.target.branch
        self.out.note(f"{branch} fast-forwarded to {done.head[:12]}: {done.commits} commit(s)")
        if self.config.auto_push:
            pushed = self.integrator.push()
            if pushed.failed:
                self.out.warning(f"push of {branch} failed: {pushed.detail}")
            else:
                self.out.note(f"push of {branch}: {pushed.status}")

    def _push_pending(self) -> None:
        if self.integrator is not None:
            return  # every iteration's commits went to the target branch already
        root, env = self.root, self.env
        if self.config.auto_push and git.head(root, env=env) and git.ahead(root, env=env) > 0:
            self._push()

    def _push(self) -> None:
        pushed = git.push(self.root, env=self.env)
        if pushed.failed:
            self.out.warning(f"push failed: {pushed.detail}")
        else:
            self.out.note(f"push: {pushed.status}")


def interactive_hint(config: Config, state: Path) -> str:
    """A short instruction naming the prompt file, so no huge prompt goes into argv."""
    path = config.prompt.path
    if path is None or not path.is_relative_to(config.project):
        path = state / "prompt.md"  # visible in the container: the state dir is mounted
        safefile.replace(path, config.prompt.data)
    return f"Read @{path} and follow its instructions."


def run(
    config: Config,
    out: Output,
    *,
    env: Mapping[str, str],
    max_iterations: int,
) -> Exit:
    """Set up signals, a per-run state dir and the sandbox; run the loop; clean everything."""
    with contextlib.ExitStack() as stack:
        stack.enter_context(out.capturing_logs())
        interrupts = stack.enter_context(proc.Interrupts())
        state = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="ralph-")))
        config = hooks.install(config, state=state)
        box = sandboxes.make(config, env=env, state=state)
        stack.callback(box.close)
        for leftover in box.prepare():
            out.note(f"removed leftover {leftover}")
        hint = None if config.afk else interactive_hint(config, state)
        loop = Loop(
            config, box, out, interrupts, env=env, max_iterations=max_iterations, prompt_hint=hint
        )
        ended: Exit | None = None
        try:
            ended = loop.run()
            return ended
        finally:
            box.close()  # the agent is stopped before its claims are given back
            _release_claims(
                config, out, env=env, ended=ended, why=loop.stop_reason, since=loop.cut_short_since
            )
    raise AssertionError("unreachable")  # pragma: no cover


_WHY = {
    Exit.COMPLETE: "complete",
    Exit.EXHAUSTED: "iterations exhausted",
    Exit.INTERRUPTED: "interrupted",
    None: "error",
}


def _release_claims(
    config: Config,
    out: Output,
    *,
    env: Mapping[str, str],
    ended: Exit | None,
    why: str = "",
    since: datetime | None = None,
) -> None:
    """Give back what this loop still holds, however it ended (issue 10); those claimed
    `since` the attempt the stop cut short began are released as interrupted."""
    from ralph import claims

    actor = config.loop_env(env)["PN_ACTOR"]
    why = why or _WHY.get(ended, "error")
    released = claims.release(
        config.project, loop_id=config.loop_id, actor=actor, why=why, env=env, cut_short_since=since
    )
    if released:
        out.note(f"released claims of {config.loop_id} ({why}): {', '.join(released)}")
