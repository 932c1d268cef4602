"""Command line for sgf: parse, call the library, render. Errors map to exit 1 here, once.

The stage commands live in stages.py, `sgf sandbox` in sandbox.py; this package holds the
group, the small commands and `main`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

import click
from pensa.shared.console import undecodable

from sgf import logs, scaffold, stacks, status
from sgf.cli import sandbox, stages
from sgf.commandenv import Env
from sgf.errors import NotAGitRepo, SgfError, UnknownStack
from sgf.loop.loops import ExitCode


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


stages.register(cli)
cli.add_command(sandbox.sandbox_group)


@cli.command("doctor")
@click.option("--json", "json_", is_flag=True, help="Print the findings as JSON.")
@click.pass_obj
def doctor_command(env: Env, json_: bool) -> int:
    """Check Docker, the sandbox image, claude, credentials, pn's hooks and free disk.

    Each finding is one line with its fix; exit 1 when one is a problem.

    \b
    Example:
        sgf doctor
        sgf doctor --json
    """
    from sgf import doctor, render

    findings = doctor.examine(env.root(), env=env.environ)
    render.doctor(findings, as_json=json_)
    return 0 if doctor.healthy(findings) else 1


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
@click.option("--list", "list_", is_flag=True, help="List the loops with a log, newest first.")
@click.pass_obj
def logs_command(env: Env, loop_id: str | None, no_follow: bool, wait: float, list_: bool) -> None:
    """Print a loop's log, following it while it runs; without LOOP_ID, the newest loop's.

    The whole loop id, or any unique part of it, will do.

    \b
    Example:
        sgf logs --list
        sgf logs build-auth-20260226T143000
    """
    root = env.root()
    if list_:
        for known in logs.known(root):
            click.echo(known)
        return
    found = logs.find(root, loop_id, wait=wait)
    logs.copy(root, found, sys.stdout.buffer, follow=not no_follow)


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


def fail(message: str) -> int:
    """Print `error: <message>` on stderr and return exit code 1."""
    from pensa.shared.inert import inert

    click.echo(f"error: {inert(message, multiline=True)}", err=True)
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
        from pensa.shared import crash

        from sgf import __version__

        return fail(crash.report(e, ["sgf", *args], version=__version__))
    return code if isinstance(code, int) else 0
