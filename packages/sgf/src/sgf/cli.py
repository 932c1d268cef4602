"""Command line for sgf: parse, call the library, render. Errors map to exit 1 here, once."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import click

from sgf import (
    agents,
    claude,
    config,
    ending,
    git,
    launch,
    logs,
    safefile,
    sandbox,
    scaffold,
    stacks,
    status,
)
from sgf.config import Isolation, SandboxKind
from sgf.errors import InsideGitDir, NotAGitRepo, NotInitialised, SgfError, UnknownStack
from sgf.loops import ExitCode, Launch, Stage

F = TypeVar("F", bound=Callable[..., Any])


@dataclass
class Env:
    """What commands need from the process: the only place os.environ and cwd are read."""

    cwd: Path = field(default_factory=Path.cwd)
    environ: dict[str, str] = field(default_factory=lambda: dict(os.environ))
    now: Callable[[], datetime] = datetime.now

    def root(self) -> Path:
        """The git work tree the command runs in."""
        return git.toplevel(self.cwd)

    def interactive(self) -> bool:
        """Tell whether a person is at a terminal (stdin and stdout are ttys)."""
        return sys.stdin.isatty() and sys.stdout.isatty()


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="sgf", message="%(prog)s %(version)s")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """Springfield's entry point: scaffold a project and run agent loops for each stage.

    \b
    Example:
        sgf init --stack python
        sgf build -a 10
    """
    ctx.obj = Env()


@cli.command()
@click.option("--stack", type=click.Choice(stacks.names()), help="Project stack preset.")
@click.option("--force", is_flag=True, help="Overwrite prompts, backpressure, config, memento.")
@click.option("--git-init", is_flag=True, help="Run `git init` first when not in a repository.")
@click.pass_obj
def init(env: Env, stack: str | None, force: bool, git_init: bool) -> None:
    """Scaffold Springfield in this git repository (safe to run again).

    \b
    Example:
        sgf init --stack rust
    """
    try:
        root = scaffold.ensure_repo(env.cwd, create=git_init)
    except NotAGitRepo:
        if not env.interactive():
            raise
        from rich.prompt import Confirm

        if not Confirm.ask(f"{env.cwd} is not a git repository. Run `git init` here?"):
            raise
        root = scaffold.ensure_repo(env.cwd, create=True)
    if stack is None:
        if not env.interactive():
            raise UnknownStack(None, stacks.names())
        from rich.prompt import Prompt

        for preset in stacks.STACKS.values():
            click.echo(f"  {preset.name:<11} {preset.description}")
        stack = Prompt.ask("Stack", choices=stacks.names(), default="generic")
    steps = scaffold.init(root, stacks.get(stack), force=force, env=env.environ)
    from sgf import render

    render.init_steps(steps, str(root))


def stage_options(
    *, spec: bool, afk: bool, count: bool, parallel: bool = False
) -> Callable[[F], F]:
    """The options every stage command shares, plus --spec / -a / N where they apply."""

    def decorate(f: F) -> F:
        options = [
            click.option("--template", metavar="IMAGE", help="Sandbox image (docker_template)."),
            click.option(
                "--push/--no-push",
                "auto_push",
                default=None,
                help="Push after commits (default: auto_push).",
            ),
            click.option(
                "--sandbox",
                "sandbox_kind",
                type=click.Choice(["docker", "none"]),
                help="Run agents in Docker, or directly here (config: sandbox).",
            ),
            click.option(
                "--network",
                metavar="NAME",
                help="Docker network for the container, e.g. host (config: network).",
            ),
            click.option(
                "--stash", is_flag=True, help="Stash uncommitted changes first instead of refusing."
            ),
            click.option(
                "--max-cost",
                type=click.FloatRange(min=0, min_open=True),
                metavar="USD",
                help="Cost budget for the loop (config: max_cost).",
            ),
            click.option(
                "--max-tokens",
                type=click.IntRange(min=1),
                metavar="N",
                help="Token budget: input + output + cache (config: max_tokens).",
            ),
            click.option(
                "--max-time",
                metavar="DURATION",
                help="Wall-time budget such as 30s, 90m, 8h (config: max_time).",
            ),
        ]
        if spec:
            options.append(click.option("--spec", metavar="STEM", help="Work on specs/STEM.md."))
        if afk:
            options.append(click.option("-a", "--afk", is_flag=True, help="Run unattended."))
            options.append(
                click.option(
                    "--worktree",
                    is_flag=True,
                    help="Run in a git worktree of its own (config: isolation).",
                )
            )
        if parallel:
            options.append(
                click.option(
                    "--parallel",
                    type=click.IntRange(min=1),
                    metavar="N",
                    help="Run N loops at once, each in a worktree of its own (needs -a).",
                )
            )
        if count:
            options.append(click.argument("iterations", type=click.IntRange(min=1), required=False))
        for option in reversed(options):
            f = option(f)
        return f

    return decorate


def run_stage(env: Env, request: Launch, *, stash: bool, parallel: int | None = None) -> int:
    """Prepare and run one stage (or `parallel` isolated loops of it), report the outcome,
    return ralph's exit code."""
    from sgf import render

    stage = request.stage
    root = env.root()
    if parallel:
        return run_parallel(env, root, request, parallel, stash=stash)
    prepared = launch.prepare(root, request, stash=stash, env=env.environ, now=env.now)
    render.recovery(prepared.recovery)
    for warning in prepared.warnings:
        click.echo(f"sgf: warning: {render.inert(warning)}", err=True)
    click.echo(f"sgf: {prepared.loop_id} (log: {prepared.log.relative_to(root)})", err=True)
    code = launch.run(
        root,
        prepared,
        env=env.environ,
        pid=os.getpid(),
        now=env.now,
        out=sys.stdout.buffer,
        on_terminal=env.interactive(),
        stdin_is_terminal=sys.stdin.isatty(),
    )
    loop_id = str(prepared.loop_id)
    if finished := launch.finish(root, prepared):
        click.echo(f"sgf: {finished}", err=True)
    if released := ending.release_leftovers(root, loop_id, code, {**env.environ, **prepared.env}):
        click.echo(f"sgf: ralph died holding {', '.join(released)}: released", err=True)
    click.echo(f"sgf: {launch.meaning(code, stage, ending.stop_reason(root, loop_id))}", err=True)
    return code


def run_parallel(env: Env, root: Path, request: Launch, count: int, *, stash: bool) -> int:
    """Run `count` isolated loops at once (sgf/parallel.py); report each; return one code."""
    from sgf import parallel, render

    loops = parallel.prepare(root, request, count, stash=stash, env=env.environ, now=env.now)
    render.recovery(loops[0].recovery)
    for warning in loops[0].warnings:  # the same for every loop: one request, one config
        click.echo(f"sgf: warning: {render.inert(warning)}", err=True)
    for number, loop in enumerate(loops, start=1):
        click.echo(f"sgf: [{number}] {loop.loop_id} (log: {loop.log.relative_to(root)})", err=True)
    ended = parallel.run(
        root, loops, env=env.environ, pid=os.getpid(), now=env.now, out=sys.stdout.buffer
    )
    for number, end in enumerate(ended, start=1):
        for note in end.notes:
            click.echo(f"sgf: [{number}] {end.loop_id}: {render.inert(note)}", err=True)
    return parallel.overall([end.code for end in ended])


def stage_command(group: click.Group, name: str, stage: Stage, doc: str, **shape: bool) -> None:
    """Register `sgf <name>` running `stage`."""

    @stage_options(**shape)
    @click.pass_obj
    def command(
        env: Env,
        /,
        *,
        stash: bool,
        template: str | None,
        auto_push: bool | None,
        sandbox_kind: str | None,
        network: str | None,
        max_cost: float | None,
        max_tokens: int | None,
        max_time: str | None,
        spec: str | None = None,  # the options below exist only where `shape` says
        afk: bool = False,
        worktree: bool = False,
        parallel: int | None = None,
        iterations: int | None = None,
    ) -> int:
        request = Launch(
            stage=stage,
            spec=spec,
            afk=afk,
            iterations=iterations,
            auto_push=auto_push,
            template=template,
            sandbox=SandboxKind(sandbox_kind) if sandbox_kind else None,
            network=network,
            max_cost=max_cost,
            max_tokens=max_tokens,
            max_time=max_time,
            isolation=Isolation.WORKTREE if worktree else None,
        )
        return run_stage(env, request, stash=stash, parallel=parallel)

    command.__doc__ = doc
    group.command(name)(command)


stage_command(
    cli,
    "spec",
    Stage.SPEC,
    "Interview me, write specs and plan tasks (interactive, one session).",
    spec=False,
    afk=False,
    count=False,
)
stage_command(
    cli,
    "build",
    Stage.BUILD,
    "Run the build loop: one task per iteration.\n\n\b\nExample:\n    sgf build --spec auth -a 20\n"
    "    sgf build -a 20 --parallel 4",
    spec=True,
    afk=True,
    count=True,
    parallel=True,
)
stage_command(
    cli,
    "verify",
    Stage.VERIFY,
    "Run the verification loop (AFK): check specs against the code.",
    spec=False,
    afk=False,
    count=True,
)
stage_command(
    cli,
    "test-plan",
    Stage.TEST_PLAN,
    "Run the test-planning loop (AFK): create test items from the specs.",
    spec=False,
    afk=False,
    count=True,
)
stage_command(
    cli,
    "test",
    Stage.TEST,
    "Run the test loop: execute one test item per iteration.",
    spec=True,
    afk=True,
    count=True,
)


@cli.group()
def issues() -> None:
    """Log bugs interactively, or plan fixes for them."""


stage_command(
    issues,
    "log",
    Stage.ISSUES_LOG,
    "Interview me about bugs, one per session, and log them with pn.",
    spec=False,
    afk=False,
    count=True,
)
stage_command(
    issues,
    "plan",
    Stage.ISSUES_PLAN,
    "Run the bug-planning loop: turn each open bug into a fix task.",
    spec=False,
    afk=True,
    count=True,
)


@cli.command("status")
@click.option("--json", "json_", is_flag=True, help="Print JSON.")
@click.option(
    "--watch", is_flag=True, help="Redraw the loop table every second (plain text when piped)."
)
@click.pass_obj
def status_command(env: Env, json_: bool, watch: bool) -> None:
    """Show running loops, recent outcomes and the pensa picture per spec."""
    if watch:
        if json_:
            raise click.UsageError("--watch and --json do not go together")
        from sgf.top import command

        command.watch(env.root(), env=env.environ)
        return
    from sgf import render

    render.status(status.gather(env.root(), env=env.environ, now=env.now), as_json=json_)


@cli.command("logs")
@click.argument("loop_id", required=False)
@click.option("--no-follow", is_flag=True, help="Print the log and return at once.")
@click.option(
    "--wait",
    type=click.FloatRange(min=0),
    default=0.0,
    metavar="SECONDS",
    help="Wait this long for a loop (or its log) that has not started yet.",
)
@click.pass_obj
def logs_command(env: Env, loop_id: str | None, no_follow: bool, wait: float) -> None:
    """Print a loop's log, following it while it runs; without LOOP_ID, the newest loop's.

    A unique prefix of the loop id will do.
    """
    root = env.root()
    found = logs.find(root, loop_id, wait=wait)
    logs.copy(root, found, sys.stdout.buffer, follow=not no_follow)


@cli.group("sandbox")
def sandbox_group() -> None:
    """Manage the Docker image ralph runs agents in."""


@sandbox_group.command("build")
@click.option(
    "--stack",
    type=click.Choice(stacks.names()),
    help="Whose toolchain to install [the project's stack; outside a project: generic].",
)
@click.option(
    "--image",
    "--tag",
    "image",
    metavar="IMAGE",
    help="Image tag [the project's docker_template, else the stack's default image].",
)
@click.option(
    "--base",
    envvar="SPRINGFIELD_BASE_IMAGE",
    default=sandbox.DEFAULT_BASE,
    show_default=True,
    help="Base image (env SPRINGFIELD_BASE_IMAGE).",
)
@click.option("--claude-version", default=None, help=f"Claude Code version [{claude.VERSION}].")
@click.option(
    "--claude-binary",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Use this claude binary instead of fetching it with npm.",
)
@click.option(
    "--pensa-source",
    type=click.Path(file_okay=False, path_type=Path),
    help="pensa source directory (default: where pn was installed from).",
)
@click.option("--force", is_flag=True, help="Build even if an up-to-date image exists.")
@click.option("--verbose", "-v", is_flag=True, help="Stream docker's whole output, not just steps.")
@click.pass_obj
def sandbox_build(
    env: Env,
    stack: str | None,
    image: str | None,
    base: str,
    claude_version: str | None,
    claude_binary: Path | None,
    pensa_source: Path | None,
    force: bool,
    verbose: bool,
) -> None:
    """Build the sandbox image: Claude Code, git, this project's pn, and the stack's toolchain.

    \b
    Example:
        sgf sandbox build --base springfield-base:bookworm
        sgf sandbox build --stack go
    """
    from sgf import render

    configured = _configured(env)
    chosen, tag = sandbox.target(configured=configured, stack=stack, image=image)
    version = claude_version or env.environ.get("CLAUDE_CODE_VERSION") or claude.VERSION
    src = sandbox.pensa_source(pensa_source)
    binary = claude_binary or claude.binary(version, env=env.environ)
    extra = {name: agents.binary(name, env=env.environ) for name in _configured_agents(env)}
    log_dir = env.root() / ".sgf" / "logs" if configured else Path(tempfile.gettempdir())
    log_path = log_dir / "sandbox-build.log"
    opened = safefile.truncate(log_path, root=env.root() if configured else log_dir)
    with opened as log, render.build_view(log, verbose=verbose) as out:
        try:
            built = sandbox.build(
                env.cwd,
                image=tag,
                stack=chosen,
                base=base,
                claude_bin=binary,
                claude_version=version,
                pensa_src=src,
                force=force,
                env=env.environ,
                out=out,
                extra_agents=extra,
            )
        except SgfError as e:
            raise SgfError(f"{e}; the full output is in {log_path}") from None
    if not verbose and not built.skipped:
        click.echo(f"full build output: {log_path}", err=True)
    state = "up to date" if built.skipped else "built"
    click.echo(f"{built.image} {state} ({sandbox.HASH_LABEL}={built.content_hash})")


@cli.command("top")
@click.option("--all", "all_projects", is_flag=True, help="Every project's loops on this machine.")
@click.option(
    "--interval",
    type=click.FloatRange(min=1),
    default=1.0,
    show_default=True,
    metavar="SECONDS",
    help="Seconds between refreshes (at least 1).",
)
@click.pass_obj
def top_command(env: Env, all_projects: bool, interval: float) -> int:
    """Watch every loop live: table, log, pensa and cost panes; keys j/k, enter, /, s, r, ?, q.

    \b
    Example:
        sgf top --all
    """
    from sgf.top import command

    return command.run(
        env.cwd,
        all_projects=all_projects,
        env=env.environ,
        sgf=[sys.executable, "-m", "sgf"],
        interval=interval,
        on_terminal=env.interactive(),
    )


def _configured_agents(env: Env) -> list[str]:
    """The agents besides claude the project's config names (none outside a project)."""
    try:
        return agents.wanted(config.load(env.root()))
    except SgfError:
        return []


def _configured(env: Env) -> tuple[str, str] | None:
    """The project's (stack, docker_template), or None outside an initialised project."""
    try:
        found = config.load(env.root())
    except (NotAGitRepo, InsideGitDir, NotInitialised):
        return None
    return found.stack, found.docker_template


def fail(message: str) -> int:
    """Print `error: <message>` on stderr and return exit code 1."""
    from sgf import render

    click.echo(f"error: {render.inert(message, multiline=True)}", err=True)
    return ExitCode.ERROR


def main(argv: Sequence[str] | None = None) -> int:
    """Run the sgf command line and return its exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    names = [n for n in os.environ if n.startswith(("SGF_", "RALPH_"))] + ["PN_ACTOR", "HOME"]
    bad = undecodable(args, os.environ, names)
    if bad is not None:
        return fail(bad)
    try:
        code = cli.main(args=args, prog_name="sgf", standalone_mode=False)
    except SgfError as e:
        return fail(str(e))
    except click.ClickException as e:  # usage errors too: 1, never 2 (2 is "exhausted")
        return fail(e.format_message())
    except (click.Abort, KeyboardInterrupt):
        return ExitCode.INTERRUPTED
    except Exception as e:  # a bug: one line here, the traceback in a crash log
        from sgf import __version__, crash

        return fail(crash.report(e, ["sgf", *args], version=__version__))
    return code if isinstance(code, int) else 0


def undecodable(
    args: Sequence[str], environ: Mapping[str, str], names: Sequence[str]
) -> str | None:
    """What in argv or the named environment variables is not valid UTF-8, or None.

    Python hands such bytes over as lone surrogates, which fail later, deep in SQLite or a
    write, as a traceback (issue 9); they are refused here, in one line, before anything runs.
    """
    for index, arg in enumerate(args, start=1):
        if not _encodable(arg):
            shown = os.fsencode(arg).decode("utf-8", "backslashreplace")
            return f"argument {index} ({shown}) is not valid UTF-8"
    for name in names:
        value = environ.get(name)
        if value is not None and not _encodable(value):
            return f"environment variable {name} is not valid UTF-8"
    return None


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
