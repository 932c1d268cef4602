"""The loop: run the agent up to N times until it writes its `.ralph-complete`.

Each iteration prints a banner, runs the agent (AFK: formatted stream, watchdogs, usage-limit
waits; interactive: the user's terminal), prints a summary and pushes new commits.
"""

# Stays whole: the iteration state machine (start, record, check, integrate or push, stop)
# reads top to bottom here; the agent's run itself lives in afk.py.

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

from ralph import crossing, hooks, preclaim, proc, safefile, sentinel, stoprequest
from ralph import sandbox as sandboxes
from ralph.afk import Afk, Attempt, summary_line
from ralph.check import act
from ralph.check.step import Checker, CheckFailed, CheckInterrupted
from ralph.ding import Ding
from ralph.errors import RalphError
from ralph.governor import Governor, failure_of
from ralph.models import Config, Exit, Prompt, SandboxKind
from ralph.record import Record, changes, held, now_iso
from ralph.render import Output
from ralph.review.run import Reviewing
from ralph.shared import figures
from ralph.watchdog import Expiry

__all__ = ["RESUME_NOTE", "Attempt", "Loop", "run", "summary_line"]

RESUME_NOTE = (
    "the agent's session lived in this run's own home, which ends with the run: its resume "
    "command cannot find it; the log keeps what was said, and running the loop again goes on "
    "from what was committed"
)


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
        home: crossing.Crossing | None = None,
        state: Path,
    ) -> None:
        self.config = config
        self.home = home
        self.sandbox = sandbox
        self.out = out
        self.interrupts = interrupts
        self.env = env
        self.max_iterations = max_iterations
        self.prompt_hint = prompt_hint
        self.clock = clock
        self.wall = wall
        self.governor = Governor(
            config.budgets, clock=clock, requested=partial(stoprequest.reason, config.stop_file)
        )
        self.afk = Afk(config, sandbox, out, interrupts, self.governor, env, clock, wall)
        self.stop_reason = ""
        # When the attempt the loop's stop cut short began: its claims were no real attempt,
        # so they are released as interrupted and do not count towards --stuck-threshold.
        self.cut_short_since: datetime | None = None
        self.record = Record(config.record, loop_id=config.loop_id)
        self.checker = Checker(
            config, sandbox, out, interrupts, self.governor, env or {}, state,
            base=home.lane.target_tip if home else lambda: None,
        )  # fmt: skip
        # tasks the loop closed whose work has not been through a landing's check yet
        self.pending: list[str] = []
        self.reviewing = Reviewing(
            config, sandbox, out, interrupts, self.governor, env or {}, state, self.record
        )
        # where the branch was when the loop began: the final review's change starts there
        self.start_tip = home.lane.target_tip() if home else None

    @property
    def root(self) -> Path:
        """Where the agent's sentinels are: its workspace, or the project without git."""
        return self.home.ws.repo if self.home else self.config.project

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
            self._bring_back(None)
            self._end(Exit.ERROR, holding)
            raise
        self._bring_back(code)
        self._end(code, holding)
        return code

    def _bring_back(self, ended: Exit | None) -> None:
        """The loop's leftovers and last commits, back from its workspace (crossing.finish):
        landed, unless a stop cut the iteration short and only a check could vouch for them."""
        if self.home is None:
            return
        stopped = ended is Exit.INTERRUPTED or self.interrupts.fired
        contracts = self.checker.contracts(self.pending)
        gate = self.checker.gate(contracts, branch=self.home.lane.target)
        checked = self.checker.needed(contracts)
        try:
            lines = self.home.finish(self.sandbox, land=not (stopped and checked), check=gate)
        except RalphError as e:
            lines = [f"warning: {e}"]
        self._checked()
        for line in lines:
            if line.startswith("warning: "):
                self.out.warning(line.removeprefix("warning: "))
            else:
                self.out.note(line)
        if ended is not Exit.INTERRUPTED:  # a push that failed before goes now, closes with it
            self.push_pending()

    def _holding(self) -> dict[str, str] | None:
        """What the loop's actor holds now, for the tasks closed in the totals (None: no pn)."""
        actor = self.config.loop_env(self.env or {})["PN_ACTOR"]
        return held(self.config.project, actor, self.env or {})

    def _end(self, code: Exit, holding: dict[str, str] | None) -> None:
        """Print the totals line and write the record's `end`."""
        closed = None if holding is None else changes(holding, self._holding())[1]
        g = self.governor
        seconds = round(g.elapsed(), 1)  # one reading: the totals line and the record agree
        tasks = "" if closed is None else f"{len(closed)} task(s) closed, "
        self.out.summary(
            f"totals: {g.iterations} iteration(s), {tasks}{figures.cost(g.cost)}, "
            f"{figures.tokens(g.tokens)} tokens, "
            f"{figures.duration(seconds)}; stopped: {self.stop_reason or code.name.lower()}"
        )
        refused = self.sandbox.refusals()
        if refused:
            shown = ", ".join(map(str, refused[:5])) + (", ..." if len(refused) > 5 else "")
            self.out.warning(f"the egress proxy refused: {shown} (allow a host with --allow)")
        self.record.write(
            "end",
            refused=[r.as_json() for r in refused],
            exit=int(code),
            stop_reason=self.stop_reason,
            iterations=g.iterations,
            tasks_closed=closed,
            cost=round(g.cost, 6),
            tokens=g.tokens,
            seconds=seconds,
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
            if self.config.claim is not None and not self._claim(index):
                return self._stop(Exit.COMPLETE, "complete")
            sentinel.clear(self.root, loop_id)
            self.out.banner(index, total, loop_id)
            if self.home is not None:
                self.home.aim()
            # what the command guard decides on
            hooks.begin(self.config, env=self.env, workspace=self._given())
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
            if self.home is not None:
                # interrupted iterations' commits too, before the next; a quarantine or a
                # conflict raises: the loop stops, nothing landed
                self._bring_home(interrupted=attempt.interrupted)
            if attempt.interrupted or self.interrupts.fired:
                # a signal after the agent ended (during the push) cut nothing short
                self.cut_short_since = began if attempt.interrupted else None
                return self._stop(Exit.INTERRUPTED, "interrupted")
            if sentinel.take(self.root, loop_id):
                if not self._final_review():
                    self.out.note("the final review filed fix tasks: the loop goes on")
                    continue
                self.out.summary(f"ralph complete after {index} iteration(s)")
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

    def _final_review(self) -> bool:
        """Whether the loop may complete: the final review passed, or had nothing to do."""
        if self.home is None:
            return True
        lane = self.home.lane
        return self.reviewing.final(lane.repo, start=self.start_tip, tip=lane.target_tip())

    def _claim(self, index: int) -> bool:
        """Claim the iteration's task on the host (preclaim.py); False when none is ready:
        the agent would only find that out and stop."""
        task = preclaim.claim(self.config, self.env or {})
        if task is None:
            self.out.summary(
                f"ralph complete after {index - 1} iteration(s): nothing left to claim"
            )
            return False
        self.out.note(f"claimed {task} for iteration {index}")
        return True

    def _given(self) -> tuple[str, str] | None:
        """The branch and commit the host gave the iteration's workspace, if it has one."""
        if self.home is None:
            return None
        return self.home.place.branch, self.home.place.base

    def _held(self) -> dict[str, str] | None:
        if self.config.record is None and self.home is None:
            return None  # no record, no landing to check: no need to ask pn every iteration
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
        failure = (
            failure or attempt.limit or failure_of(attempt.status, result, expiry=attempt.expiry)
        )
        # interrupted or cut by --max-time is no failure; interactive sessions have no result
        judged = (
            self.config.afk and not attempt.interrupted and attempt.expiry is not Expiry.MAX_TIME
        )
        self.governor.record(result, failure=failure if judged else None)
        claimed, closed = changes(before, self._held())
        self.pending += [task for task in closed if task not in self.pending]
        if self.config.record is None:
            return
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
            # priced by ralph from the agent's tokens (agents/prices.py), not reported by it
            **({"cost_computed": True} if result and result.cost_computed else {}),
        )

    def _stop(self, code: Exit, reason: str) -> Exit:
        if code is Exit.INTERRUPTED:
            self.out.note("Interrupted.")
        self.stop_reason = reason
        return code

    # -- one iteration -------------------------------------------------------------------

    def _iteration(self, index: int) -> Attempt:
        attempt = self.afk.run() if self.config.afk else self._interactive()
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
        elif attempt.expiry is Expiry.API_FAILING:
            why = f"{t.api_wait:g} s: stopped it (last error: {attempt.api_error})"
            self.out.warning(f"the agent's API calls failed for {why}")
        elif self.config.afk and not attempt.interrupted:
            if attempt.result is None:
                self.out.warning(f"agent exited (status {attempt.status}) without a result")
            elif attempt.status not in (0, None) and not attempt.result.is_error:
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
                self.config.agent_argv(prompt_hint=self.prompt_hint, env=self.env),
                interrupts=self.interrupts,
                tick=tick,
                every=self.config.timeouts.ding_poll,
            )
        finally:
            ding.close()
        if not sentinel.mine(self.root, self.config.loop_id):
            # Claude Code's parting "Resume this session with: claude --resume ..." (codex's
            # "codex resume ...") names a session kept in the run's HOME, which is removed
            # with the run: say what works instead, right below it.
            self.out.note(RESUME_NOTE)
        return Attempt(status, interrupted=status is None, seconds=self.clock() - started)

    def _bring_home(self, *, interrupted: bool) -> None:
        """Take the iteration's commits from the workspace, vet, check, land and push them."""
        assert self.home is not None
        tip = self.home.take(self.sandbox)  # raises Quarantined or CrossingRefused
        if tip is None:
            self.pending = []  # closed with nothing to land: no landing to check
            return
        contracts = self.checker.contracts(self.pending)
        lane = self.home.lane
        closed, before = list(self.pending), lane.target_tip()
        if interrupted and self.checker.needed(contracts):  # a stop is no time for the check
            lane.keep(tip)
            self.out.note(f"the interrupted iteration's commits are on {lane.loop_branch}")
            return
        try:
            landed = self.home.land(tip, self.checker.gate(contracts, branch=lane.target))
        except CheckInterrupted as e:
            self.out.note(f"{e}; the commits wait on {e.kept}")
            return
        except CheckFailed:  # the loop goes on with the next task
            self.pending = []
            self._checked()
            return
        self.pending = []
        self._checked()
        if landed is None:
            return
        lane = self.home.lane
        if landed.waiting:
            self.out.warning(
                f"{lane.target} is checked out with changes in the way ({landed.waiting}): "
                f"the loop's commits wait on {lane.loop_branch} and land after the next "
                f"iteration, or run `git merge --ff-only {lane.loop_branch}`"
            )
            return
        self.out.note(
            f"{lane.target} fast-forwarded to {landed.tip[:12]}: {landed.commits} commit(s)"
        )
        if self.config.auto_push:
            self._push()
        if self.reviewing.on and closed:
            self.reviewing.landed(lane.repo, closed, landed.tip, before=before)

    def _checked(self) -> None:
        """Act on the last check's verdict: the tracker, the record, the transcript."""
        outcome, failed = self.checker.last, self.checker.failed
        self.checker.last = self.checker.failed = None
        if outcome is None or outcome.verdict is None:
            return
        kept = failed.kept if failed is not None else None
        actor = self.config.loop_env(self.env or {})["PN_ACTOR"]
        acted = act.act(
            self.config.project,
            outcome,
            kept=kept,
            base=outcome.base,
            actor=actor,
            threshold=self.config.stuck_threshold,
            env=self.env or {},
        )
        self.record.write(
            "check",
            **outcome.as_json(),
            landed=outcome.lands,
            kept=kept,
            reopened=acted.reopened,
            human=acted.human,
        )
        if outcome.lands:
            ran = f"{len(outcome.evidence)} command(s) passed"
            agent = f", the check agent ({outcome.agent}) said PASS" if outcome.agent else ""
            self.out.note(f"check PASS on {outcome.commit[:12]}: {ran}{agent}")
            return
        where = f"; its commits are on {kept}" if kept else ""
        human = f"; handed to a human: {', '.join(acted.human)}" if acted.human else ""
        self.out.warning(f"{failed}{where}; reopened: {', '.join(acted.reopened) or 'none'}{human}")

    def push_pending(self) -> None:
        if self.home is not None and self.config.auto_push and self.home.unpushed() > 0:
            self._push()

    def _push(self) -> None:
        assert self.home is not None
        branch = self.home.lane.target
        pushed = self.home.push()
        if pushed.failed:
            self.out.warning(f"push of {branch} failed: {pushed.detail}")
        elif pushed.status is not pushed.status.NO_REMOTE:
            self.out.note(f"push of {branch}: {pushed.status}")


def interactive_hint(config: Config, state: Path) -> str:
    """A short instruction naming the prompt file, so no huge prompt goes into argv (the
    prompt is copied into the run's folder, which the agent sees wherever it runs)."""
    path = state / "prompt.md"
    safefile.replace(path, config.prompt.data)
    return f"Read @{path} and follow its instructions."


def _sandbox_user(config: Config) -> tuple[int, int]:
    if config.sandbox is SandboxKind.DOCKER:
        from ralph.sandbox.container import sandbox_user

        return sandbox_user(os.getuid(), os.getgid())
    return os.getuid(), os.getgid()


def run(
    config: Config,
    out: Output,
    *,
    env: Mapping[str, str],
    max_iterations: int,
) -> Exit:
    """Set up signals, a per-run state dir, the workspace and the sandbox; run the loop;
    bring back what the loop left; clean everything."""
    with contextlib.ExitStack() as stack:
        stack.enter_context(out.capturing_logs())
        interrupts = stack.enter_context(proc.Interrupts())
        state = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="ralph-")))
        uid, gid = _sandbox_user(config)
        for line in crossing.recover(config, env, state):
            out.note(line) if not line.startswith("warning: ") else out.warning(line[9:])
        home = crossing.open_(config, env, uid=uid, gid=gid)
        workdir = config.project if home is None else home.workdir(config)
        config = hooks.install(config, state=state, workdir=workdir)
        box = sandboxes.make(config, env=env, state=state, place=home.place if home else None)
        stack.callback(box.close)
        for leftover in box.prepare():
            out.note(f"removed leftover {leftover}")
        out.note(box.network_note())
        hint = None if config.afk else interactive_hint(config, state)
        loop = Loop(
            config,
            box,
            out,
            interrupts,
            env=env,
            max_iterations=max_iterations,
            prompt_hint=hint,
            home=home,
            state=state,
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


def recover_only(project: Path, out: Output, *, env: Mapping[str, str]) -> Exit:
    """`ralph --recover`: bring back the project's dead loops' workspaces; exit 0."""
    config = Config(project=project, prompt=Prompt(""), loop_id="ralph-recover")
    with contextlib.ExitStack() as stack:
        stack.enter_context(proc.Interrupts())
        state = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="ralph-")))
        for line in crossing.recover(config, env, state):
            out.note(line) if not line.startswith("warning: ") else out.warning(line[9:])
    return Exit.COMPLETE


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
    """Give back what this loop still holds, however it ended; those claimed `since` the
    attempt the stop cut short began are released as interrupted."""
    from ralph import handback

    actor = config.loop_env(env)["PN_ACTOR"]
    why = why or _WHY.get(ended, "error")
    released = handback.release(
        config.project, loop_id=config.loop_id, actor=actor, why=why, env=env, cut_short_since=since
    )
    if released:
        out.note(f"released claims of {config.loop_id} ({why}): {', '.join(released)}")
