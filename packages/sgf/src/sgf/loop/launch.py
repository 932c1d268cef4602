"""Preparing one loop: assemble its prompt, check, recover, decide ralph's command line.

Running it is runner.py's job; the stage sequence around both is stage.py's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from sgf import config as config_mod
from sgf import git, preflight
from sgf.config import SandboxKind
from sgf.image import sandboximage
from sgf.loop import gitclaims, offline, prompts, recovery, runs
from sgf.loop.loops import ExitCode, Launch, LoopId, check_spec
from sgf.stages import Stage

OUTCOMES = {0: "complete", 1: "error", 2: "exhausted", 130: "interrupted"}


def meaning(code: int, stage: Stage, stop_reason: str | None = None) -> str:
    """Say what ralph's exit code means for the user, and what to do next; `stop_reason` is
    the one in ralph's run record (ending.stop_reason), so the advice fits what happened."""
    conversation = stage.spec.one_iteration
    if code == ExitCode.COMPLETE and conversation:
        return "session complete: the agent finished and ended it (.ralph-complete)"
    if code == ExitCode.COMPLETE:
        return "loop complete: the agent found no more work (.ralph-complete)"
    if code == ExitCode.ERROR:
        if stop_reason:
            return f"ralph stopped: {stop_reason}; fix that, then run `{stage.command}` again"
        return "ralph stopped with an error; read the message above and the log"
    if code == ExitCode.EXHAUSTED and stop_reason and stop_reason.startswith("budget reached"):
        return (
            f"{stop_reason}; work may remain: raise the budget or run `{stage.command}` again "
            "to continue"
        )
    if code == ExitCode.EXHAUSTED and conversation:
        return (
            f"session ended before the agent finished; run `{stage.command}` again to go on "
            "(the work it committed is kept)"
        )
    if code == ExitCode.EXHAUSTED:
        return (
            f"iterations exhausted: work may remain; run `{stage.command}` again to "
            "continue, or stop here"
        )
    if code == ExitCode.INTERRUPTED:
        return "interrupted: the loop was stopped"
    return f"ralph exited with unexpected code {code}"


def unused_loop_id(root: Path, loop_id: LoopId) -> LoopId:
    """Return `loop_id`, moved on by whole seconds while one with its name exists already.

    Ids have one-second resolution; two launches within a second must not share a log.
    """
    while (
        runs.pid_path(root, str(loop_id)).exists()
        or runs.log_path(root, str(loop_id)).exists()
        or prompts.assembled(root, str(loop_id)).exists()  # a --parallel sibling's, just made
        or git.rev(root, git.LOOP_BRANCH_PREFIX + str(loop_id)) is not None
    ):
        loop_id = LoopId(loop_id.stage, loop_id.spec, loop_id.started + timedelta(seconds=1))
    return loop_id


def running_loops(root: Path) -> list[str]:
    """The ids of the project's loops running now (their sgf alive), oldest first."""
    return [p.loop_id for p in runs.scan(root) if p.alive()]


def beside(stage: Stage, running: Sequence[str]) -> str | None:
    """The one line for a loop launched while other loops of the project run, or None.

    Every loop works in a workspace of its own and lands on the branch one loop at a time,
    so a second loop is no danger to the first and runs beside it (README "Running many
    loops"); what it shares with them is the branch and the tracker, which is worth a line."""
    if not running:
        return None
    them = f"loop {running[0]} is" if len(running) == 1 else f"loops {', '.join(running)} are"
    line = (
        f"{them} running in this project; this one runs beside, in a workspace of its own, "
        "and its commits land on the same branch, one loop at a time"
    )
    if stage is Stage.SPEC:
        line += "; a running loop may claim each task this session plans once it is ready"
    return line


@dataclass(frozen=True, slots=True)
class Prepared:
    """Everything decided before ralph starts."""

    loop_id: LoopId
    argv: list[str]
    prompt: Path
    log: Path
    recovery: recovery.Report
    warnings: list[str] = field(default_factory=list)
    request: Launch | None = None  # as asked, kept for `sgf top`'s restart
    env: dict[str, str] = field(default_factory=dict)  # ralph's and its agents' on top of sgf's
    notes: list[str] = field(default_factory=list)  # one line each, said before it starts


OUTSIDE_DOCKER = (
    "--sandbox none: agents run on this machine with your permissions, outside Docker "
    "(docs/security.md)"
)


def prepare(
    root: Path,
    request: Launch,
    *,
    stash: bool,
    env: Mapping[str, str],
    now: Callable[[], datetime],
) -> Prepared:
    """Check and assemble everything for `request`; recover from a crash. Launches nothing,
    and a launch refused here leaves nothing behind: no prompt, log or PID file."""
    git.keep_out_of_submodules(root)  # also refuses a planted commondir (gitguard.py)
    config = config_mod.load(root)
    spec = check_spec(root, request.spec) if request.spec else None
    loop_id = unused_loop_id(root, LoopId(request.stage, spec, now()))
    variables = {
        "stage": request.stage.value,
        "spec": spec,
        "loop_id": str(loop_id),
        "stack": config.stack,
        "iterations": request.count(config),
        "afk": request.is_afk(),
    }
    text = prompts.render(root, request.stage.prompt, variables)
    isolated = request.isolated(config)
    running = running_loops(root)
    # ralph re-reads its prompt file every iteration: a loop beside a running one of its
    # stage reads a file of its own, so neither retargets the other (another spec, say)
    alongside = any(
        (parsed := LoopId.parse(other)) is not None and parsed.stage is request.stage
        for other in running
    )
    name = str(loop_id) if isolated or alongside else request.stage.prompt
    template = request.template or config.docker_template
    kind = request.sandbox_kind(config)
    agent = config.agent_for(request.stage.value) or "claude"
    played = offline.scenario(request.stage, agent) if request.offline else None
    ralph = preflight.check(
        root, template=template, sandbox=kind, env=env, agent=agent, offline=request.offline
    )
    loop_env = gitclaims.env(root, config, request, loop_id=str(loop_id))
    extra = ["--scenario", str(played)] if played else []
    argv = request.ralph_argv(ralph, config, loop_id, prompts.assembled(root, name), extra)
    preflight.check_options(argv, cwd=root, env={**env, **loop_env})
    prompt = prompts.write(root, name, text)
    warnings = []
    if kind is SandboxKind.NONE:
        warnings.append(OUTSIDE_DOCKER)
    if kind is not SandboxKind.NONE and env.get("SGF_SKIP_PREFLIGHT") != "1":
        warnings += sandboximage.staleness(root, template, env=env)
    report = recovery.prepare(
        root, loop_id=str(loop_id), stash_user_changes=stash, env=env, now=now
    )
    log = runs.log_path(root, str(loop_id))
    notes = [line] if (line := beside(request.stage, running)) else []
    return Prepared(loop_id, argv, prompt, log, report, warnings, request, loop_env, notes)
