"""Command line for ralph: parse flags, call the loop, map errors to exit codes."""

# Stays whole: it is one click command, whose option table is the flag reference of the
# sgf-to-ralph contract; split, the contract would be read from several files.

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import sys
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO, TypeVar

import click
from pensa.shared.console import undecodable

from ralph import agents, ding, loop, offline, prompt, safefile
from ralph.errors import RalphError
from ralph.governor import Budgets, parse_duration
from ralph.models import (
    CheckAgent,
    Config,
    Exit,
    Guardrails,
    Limits,
    Prompt,
    ReviewMode,
    Reviews,
    SandboxKind,
    Timeouts,
)
from ralph.render import Output
from ralph.shared import protected

# Hidden knobs, mostly for tests (documented in docs/ralph.md): a Timeouts field, its
# environment variable, and whether it counts tries rather than seconds. Defaults come from
# Timeouts itself, so they are written once.
TUNING = (
    ("post_result", "RALPH_RESULT_GRACE", False),
    ("api_wait", "RALPH_API_WAIT", False),
    ("stop_grace", "RALPH_STOP_GRACE", False),
    ("limit_margin", "RALPH_LIMIT_MARGIN", False),
    ("backoff_base", "RALPH_BACKOFF_BASE", False),
    ("backoff_tries", "RALPH_BACKOFF_TRIES", True),
    ("ding_poll", "RALPH_DING_POLL", False),
    ("sentinel_grace", "RALPH_SENTINEL_GRACE", False),
)
_DEFAULTS = Timeouts()


F = TypeVar("F", bound=Callable[..., Any])


def tuning_options(f: F) -> F:
    """Add one hidden `--<field>` option per TUNING row, read from its variable too."""
    for field, var, counts in reversed(TUNING):
        kind = click.IntRange(min=0) if counts else click.FloatRange(min=0)
        f = click.option(
            f"--{field.replace('_', '-')}",
            field,
            type=kind,
            envvar=var,
            default=getattr(_DEFAULTS, field),
            hidden=True,
        )(f)
    return f


def env_option(flag: str, **kwargs: Any) -> Callable[[F], F]:
    """An option that RALPH_<FLAG> sets too; --help shows the variable and any default."""
    var = "RALPH_" + flag.removeprefix("--").replace("-", "_").upper()
    return click.option(flag, envvar=var, show_envvar=True, show_default=True, **kwargs)


@click.command(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="ralph", message="%(prog)s %(version)s")
@click.option("-a", "--afk", is_flag=True, help="AFK mode: headless agent, formatted stream.")
@click.option("--loop-id", metavar="ID", help="Loop identifier shown in banners and labels.")
@env_option(
    "--template",
    metavar="IMAGE",
    default="springfield-sandbox:latest",
    help="Docker image each iteration's container is created from.",
)
@env_option(
    "--auto-push",
    type=click.BOOL,
    metavar="BOOL",
    default=True,
    help="Push new commits after each iteration (true/false/yes/no/1/0).",
)
@env_option(
    "--max-iterations",
    type=click.IntRange(min=1),
    metavar="N",
    default=100,
    help="Safety limit: a larger ITERATIONS is clamped.",
)
@env_option(
    "--agent",
    type=click.Choice(agents.names()),
    default="claude",
    help="The agent CLI to run: how it is started, configured and read.",
)
@env_option(
    "--command",
    metavar="EXE",
    help="Agent executable to run instead of the agent's own (for testing).",
)
@env_option(
    "--sandbox",
    type=click.Choice([k.value for k in SandboxKind]),
    default="docker",
    help="docker: a container per iteration; none: the agent runs on the host.",
)
@env_option(
    "--network",
    metavar="NAME",
    help="Unset: only --allow hosts, through the egress proxy. open: Docker's default network; "
    "NAME: that network (host: the host's loopback). Keys stay on the host either way.",
)
@click.option(
    "--allow",
    "allow",
    multiple=True,
    metavar="HOST",
    help="Repeatable: let the agent reach HOST (pypi.org, .crates.io for a domain and its "
    "subdomains, host:port) through the egress proxy; with --network unset only.",
)
@click.option(
    "--log-file",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    metavar="PATH",
    help="Also write the transcript here, as plain text.",
)
@env_option(
    "--idle-timeout",
    type=click.FloatRange(min=0, min_open=True),
    metavar="SECONDS",
    default=1800.0,
    help="Stop an AFK agent that prints nothing for this many seconds.",
)
@env_option(
    "--max-cost",
    type=click.FloatRange(min=0, min_open=True),
    metavar="USD",
    help="Start no iteration once the results' total_cost_usd reaches this (exit 2).",
)
@env_option(
    "--max-tokens",
    type=click.IntRange(min=1),
    metavar="N",
    help="Start no iteration once input + output + cache tokens reach N (exit 2).",
)
@env_option(
    "--max-time",
    metavar="DURATION",
    help="Wall-time budget (30s, 90m, 8h): an iteration running past it is stopped (exit 2).",
)
@env_option(
    "--max-failed-iterations",
    type=click.IntRange(min=1),
    metavar="N",
    default=3,
    help="Stop (exit 1) after N failed iterations in a row (exit != 0, no result, API error).",
)
@env_option(
    "--stuck-threshold",
    type=click.IntRange(min=1),
    metavar="N",
    default=3,
    help="A task claimed N times without a close leaves the queue for a human (PN_STUCK_AFTER).",
)
@env_option(
    "--claim",
    metavar="ARGS",
    help="Claim each iteration's task on the host first, with `pn claim-next ARGS` (sgf sets "
    'it for claims = "git"); the agent\'s pn claim-next answers with that task.',
)
@env_option(
    "--record",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="PATH",
    help="Append the run record (JSON lines: iterations, tasks, cost, stop reason) here.",
)
@env_option(
    "--stop-file",
    type=click.Path(path_type=Path),
    metavar="PATH",
    help="Start no iteration once PATH exists (exit 2), the running one finished and landed "
    "first; its first line is the stop reason (how sgf stops a group at its budget).",
)
@env_option(
    "--integrate",
    metavar="BRANCH",
    help="The branch the loop's commits land on (default: the one checked out); a conflict "
    "stops the loop (exit 1), the commits kept on sgf/<loop-id>.",
)
@env_option(
    "--memory",
    metavar="SIZE",
    default="8g",
    help="Memory limit of each container (docker's -m: 512m, 8g); a run past it is stopped.",
)
@env_option(
    "--pids",
    type=click.IntRange(min=16),
    metavar="N",
    default=4096,
    help="Process limit of each container (docker's --pids-limit).",
)
@click.option(
    "--protect",
    "protect",
    multiple=True,
    metavar="PATH",
    help="Also protect PATH (dir/ for a folder): an iteration whose commits change it is "
    "quarantined (exit 1). .sgf/, .pre-commit-config.yaml, .gitattributes, .gitmodules, "
    "gitlinks and .claude/ always are.",
)
@env_option(
    "--checks",
    metavar="LIST",
    default="task,clean,backpressure,bugs",
    help="Stop checklist: which of task,clean,backpressure,bugs apply (none: no checklist).",
)
@env_option(
    "--stop-blocks",
    type=click.IntRange(min=0),
    metavar="N",
    default=3,
    help="Let the agent stop after the checklist sent it back N times (recorded).",
)
@env_option(
    "--guard",
    type=click.BOOL,
    metavar="BOOL",
    default=True,
    help="Refuse destructive commands (force push, reset --hard over others' work...).",
)
@env_option(
    "--format-command",
    metavar="CMD",
    help="Run CMD FILE (sh) on each file the agent edits, e.g. the stack's formatter.",
)
@env_option(
    "--check-command",
    metavar="CMD",
    help="For work whose closed tasks name no Verify commands: the branch moves only when CMD "
    "(sh) passes on the rebased commits in a clean checkout in the sandbox.",
)
@env_option(
    "--check-agent",
    type=click.Choice(agents.names()),
    help="After the commands, this agent judges the work against its task's contract in the "
    'sandbox; only its PASS lands (README "Check step").',
)
@env_option(
    "--check-model",
    metavar="MODEL",
    help="The check agent's model (default: its backend's own).",
)
@env_option(
    "--check-agent-command",
    metavar="EXE",
    help="Check agent executable to run instead of its own (for testing).",
)
@env_option(
    "--review",
    type=click.Choice([m.value for m in ReviewMode]),
    default=ReviewMode.OFF.value,
    help="After a landing completes a feature (or a task), reviewers judge its combined "
    "change at once, and a final review runs when the plan is done; a FAIL files fix tasks "
    '(docs/guardrails.md "Reviews").',
)
@env_option(
    "--reviewers",
    type=click.IntRange(1, 10),
    default=3,
    help="How many reviewers review each change, concurrently.",
)
@env_option(
    "--review-focus",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    metavar="FILE",
    help="The reviewers' focuses: FILE's `## NAME` sections, one per reviewer in turn.",
)
@click.option(
    "--scenario",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    metavar="FILE",
    help="Offline: play FILE on the scripted model server instead of calling a model; ralph "
    "starts the server and makes up the credential (no account needed).",
)
@click.option(
    "--recover",
    is_flag=True,
    help="Bring back the workspaces of this project's loops whose ralph is gone, then exit.",
)
@click.option(
    "--check-options",
    is_flag=True,
    help="Check the options and arguments as a run would, then exit: 0, or 1 with the "
    "reason. Reads no prompt and starts nothing (sgf asks before it launches a loop).",
)
@tuning_options
@click.argument("args", nargs=-1, metavar="[ITERATIONS] [PROMPT] [-- AGENT_ARGS...]")
@click.pass_context
def cli(
    ctx: click.Context,
    /,
    afk: bool,
    loop_id: str | None,
    template: str,
    auto_push: bool,
    max_iterations: int,
    agent: str,
    command: str | None,
    sandbox: str,
    network: str | None,
    allow: tuple[str, ...],
    log_file: Path | None,
    idle_timeout: float,
    max_cost: float | None,
    max_tokens: int | None,
    max_time: str | None,
    max_failed_iterations: int,
    stuck_threshold: int,
    claim: str | None,
    record: Path | None,
    stop_file: Path | None,
    integrate: str | None,
    memory: str,
    pids: int,
    protect: tuple[str, ...],
    checks: str,
    stop_blocks: int,
    guard: bool,
    format_command: str | None,
    check_command: str | None,
    check_agent: str | None,
    check_model: str | None,
    check_agent_command: str | None,
    review: str,
    reviewers: int,
    review_focus: Path | None,
    scenario: Path | None,
    recover: bool,
    check_options: bool,
    args: tuple[str, ...],
    **tuning: float,
) -> int:
    """Run Claude Code in a loop, one sandboxed iteration at a time.

    PROMPT is a file (default prompt.md) or inline text. Exit codes: 0 the agent wrote
    .ralph-complete, 1 error, 2 iterations exhausted, 130 interrupted.

    \b
    Example:
        ralph -a --loop-id build-20260226T143000 10 .sgf/prompts/.assembled/build.md
        ralph --sandbox none 1 "Fix the failing test" -- --model sonnet
    """
    env: Mapping[str, str] = ctx.obj["env"]
    project = Path.cwd().resolve()
    if recover:
        out = Output(sys.stdout, sys.stderr, styled=_styled(sys.stdout, env), log=None)
        ctx.obj["out"] = out
        return int(loop.recover_only(project, out, env=env))
    iterations, prompt_spec = prompt.positionals(args)
    ding_command = env.get("RALPH_DING_COMMAND")  # set but empty: the terminal bell
    config = Config(
        project=project,
        # the prompt is the launcher's to write yet when it asks whether the options hold
        prompt=Prompt("") if check_options else prompt.load(prompt_spec, cwd=project),
        iterations=iterations,
        afk=afk,
        loop_id=loop_id or prompt.default_loop_id(datetime.now()),
        template=template,
        auto_push=auto_push,
        command=command or agent,
        agent=agent,
        sandbox=SandboxKind(sandbox),
        network=network,
        allow=_allowed(allow),
        agent_args=tuple(ctx.obj["agent_args"]),
        timeouts=Timeouts(idle=idle_timeout, **tuning),  # type: ignore[arg-type]  # TUNING's fields
        budgets=Budgets(
            max_cost=max_cost,
            max_tokens=max_tokens,
            max_time=_duration(max_time),
            max_failed=max_failed_iterations,
        ),
        stuck_threshold=stuck_threshold,
        claim=_claim(claim),
        record=record.resolve() if record else None,
        stop_file=stop_file.absolute() if stop_file else None,
        integrate=integrate,
        limits=Limits(pids=pids, memory=_memory(memory)),
        protect=_protected(protect),
        guardrails=Guardrails(
            checks=_checks(checks),
            stop_blocks=stop_blocks,
            guard=guard,
            format_command=format_command or None,
            check_command=check_command or None,
        ),
        ding_command=(
            tuple(shlex.split(ding_command)) if ding_command is not None else ding.player()
        ),
        check_agent=(
            CheckAgent(check_agent, model=check_model or None, command=check_agent_command or None)
            if check_agent
            else None
        ),
        reviews=Reviews(
            mode=ReviewMode(review),
            count=reviewers,
            focus=review_focus.read_text(encoding="utf-8") if review_focus else "",
        ),
    )
    if check_options:
        return int(Exit.COMPLETE)
    with contextlib.ExitStack() as stack:
        log = stack.enter_context(_open_log(log_file)) if log_file else None
        out = Output(sys.stdout, sys.stderr, styled=_styled(sys.stdout, env), log=log)
        ctx.obj["out"] = out
        if scenario is not None:
            env = stack.enter_context(offline.serve(scenario.resolve(), env))
            out.note(f"model: the scripted model playing {scenario} (offline: no account used)")
        for warning in config.backend(env).warnings(env):
            out.warning(warning)
        return int(loop.run(config, out, env=env, max_iterations=max_iterations))
    raise AssertionError("unreachable")  # pragma: no cover


def _checks(text: str) -> tuple[str, ...]:
    from ralph.inside import checklist

    try:
        return tuple(str(c) for c in checklist.parse(text))
    except ValueError:
        known = ",".join(checklist.ALL)
        raise click.BadParameter(
            f"{text!r}: use some of {known}, or none", param_hint="--checks"
        ) from None


def _claim(text: str | None) -> tuple[str, ...] | None:
    """`--claim`'s pn arguments; None when unset. `--json` is ralph's to add."""
    if text is None:
        return None
    try:
        args = tuple(shlex.split(text))
    except ValueError as e:
        raise click.BadParameter(f"{text!r}: {e}", param_hint="--claim") from None
    if "--json" in args:
        raise click.BadParameter(f"{text!r}: ralph adds --json itself", param_hint="--claim")
    return args


def _memory(text: str) -> str:
    if not re.fullmatch(r"[1-9][0-9]*[bkmg]?", text.strip().lower()):
        raise click.BadParameter(f"{text!r}: a size like 512m or 8g", param_hint="--memory")
    return text.strip().lower()


def _duration(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        return parse_duration(text)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--max-time") from e


def _protected(specs: tuple[str, ...]) -> tuple[str, ...]:
    try:
        return tuple(protected.normalise(spec) for spec in specs)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--protect") from e


def _allowed(specs: tuple[str, ...]) -> tuple[str, ...]:
    from ralph.egress import policy

    try:
        return tuple(str(policy.parse(spec)) for spec in specs)
    except RalphError as e:
        raise click.BadParameter(str(e), param_hint="--allow") from e


def _open_log(path: Path) -> TextIO:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return io.TextIOWrapper(safefile.append(path), encoding="utf-8", errors="replace")
    except OSError as e:
        raise click.BadParameter(
            f"cannot open {path}: {e.strerror}", param_hint="--log-file"
        ) from e


def _styled(stream: TextIO, env: Mapping[str, str]) -> bool:
    return stream.isatty() and not env.get("NO_COLOR")


def split_agent_args(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """ralph's own arguments, and the agent's (everything after the first `--`)."""
    args = list(argv)
    if "--" in args:
        at = args.index("--")
        return args[:at], args[at + 1 :]
    return args, []


def _fail(message: str, obj: dict[str, object]) -> int:
    out = obj.get("out")
    if isinstance(out, Output):
        out.error(message)
    else:
        from pensa.shared.inert import inert

        click.echo(f"error: {inert(message, multiline=True)}", err=True)
    return int(Exit.ERROR)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ralph command line and return its exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    obj: dict[str, object] = {"env": dict(os.environ)}
    names = [n for n in os.environ if n.startswith("RALPH_")] + ["PN_ACTOR", "HOME"]
    bad = undecodable(args, os.environ, names)
    if bad is not None:
        return _fail(bad, obj)
    own, agent_args = split_agent_args(args)
    obj["agent_args"] = agent_args
    try:
        code = cli.main(args=own, prog_name="ralph", standalone_mode=False, obj=obj)
    except RalphError as e:
        return _fail(str(e), obj)
    except click.ClickException as e:  # usage errors too: 1, because 2 means "exhausted"
        return _fail(e.format_message(), obj)
    except (click.Abort, KeyboardInterrupt):
        return int(Exit.INTERRUPTED)
    except Exception as e:  # a bug: one line here, the traceback in a crash log
        from pensa.shared import crash

        from ralph import __version__

        return _fail(crash.report(e, ["ralph", *args], version=__version__), obj)
    return code if isinstance(code, int) else 0
