"""The stage commands (`sgf spec`, `build`, `verify`, `test-plan`, `test`, `issues log`,
`issues plan`): parse the request, run it through stage.py, print what it reports."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
from pensa.shared.inert import inert

from sgf import notify
from sgf.commandenv import Env
from sgf.config import Isolation, SandboxKind
from sgf.loop.loops import Launch
from sgf.stages import STAGES, Stage

F = TypeVar("F", bound=Callable[..., Any])


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
                help="Cost budget for the loop; with --parallel, for all loops together "
                "(config: max_cost, per loop).",
            ),
            click.option(
                "--max-tokens",
                type=click.IntRange(min=1),
                metavar="N",
                help="Token budget: input + output + cache; with --parallel, for all loops "
                "(config: max_tokens, per loop).",
            ),
            click.option(
                "--max-time",
                metavar="DURATION",
                help="Wall-time budget such as 30s, 90m, 8h (config: max_time).",
            ),
            click.option(
                "--notify",
                metavar="COMMAND",
                help="Run COMMAND with a JSON event on stdin when the loop ends (config: notify).",
            ),
            click.option(
                "--offline",
                is_flag=True,
                help="Play the stage's shipped scenario on a scripted model: no account, no "
                "key (spec, build, verify, issues plan).",
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
                    help="Kept for older scripts: every loop runs in a workspace of its own.",
                )
            )
        if parallel:
            options.append(
                click.option(
                    "--parallel",
                    type=click.IntRange(min=1),
                    metavar="N",
                    help="Run N loops at once, waited for together (needs -a).",
                )
            )
        if count:
            options.append(click.argument("iterations", type=click.IntRange(min=1), required=False))
        for option in reversed(options):
            f = option(f)
        return f

    return decorate


def run_stage(env: Env, request: Launch, *, stash: bool, parallel: int | None = None) -> int:
    """Run one stage (or `parallel` isolated loops of it) through sgf/loop/stage.py; print what
    was prepared and how each loop ended; return one exit code."""
    from sgf import render
    from sgf.loop import stage

    root = env.root()
    environ = env.environ
    teller = notifier(env, root, request)
    loops = stage.prepare(
        root, request, parallel_loops=parallel, stash=stash, env=environ, now=env.now
    )
    render.recovery(loops[0].recovery)
    for note in loops[0].notes:  # the same for every loop: launched at one moment
        click.echo(f"sgf: {inert(note)}", err=True)
    for warning in loops[0].warnings:  # the same for every loop: one request, one config
        click.echo(f"sgf: warning: {inert(warning)}", err=True)
    labels = [f"[{n}] " if parallel else "" for n in range(1, len(loops) + 1)]
    for label, loop in zip(labels, loops, strict=True):
        click.echo(f"sgf: {label}{loop.loop_id} (log: {loop.log.relative_to(root)})", err=True)
    with teller.watching(str(loops[0].loop_id)):
        ended = stage.run(
            root,
            loops,
            env=environ,
            pid=os.getpid(),
            now=env.now,
            out=sys.stdout.buffer,
            on_terminal=env.interactive(),
            stdin_is_terminal=sys.stdin.isatty(),
            budget=stage.group_budget(root, request, loops) if parallel else None,
        )
    for label, end in zip(labels, ended, strict=True):
        prefix = f"{label}{end.loop_id}: " if parallel else ""
        for note in end.notes:
            click.echo(f"sgf: {prefix}{inert(note)}", err=True)
    for problem in teller.ended([(end.loop_id, end.code) for end in ended]):
        click.echo(f"sgf: warning: {inert(problem)}", err=True)
    return stage.overall([end.code for end in ended])


def notifier(env: Env, root: Path, request: Launch) -> notify.Notifier:
    """Who to tell when the loops of `request` end: --notify, else the config's `notify`."""
    from sgf import config

    command = request.notify or config.load(root).notify
    timeout = float(env.environ.get("SGF_NOTIFY_TIMEOUT", notify.TIMEOUT))
    return notify.Notifier(command, root, request.stage.value, env=env.environ, timeout=timeout)


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
        notify: str | None,
        offline: bool,
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
            notify=notify,
            offline=offline,
        )
        return run_stage(env, request, stash=stash, parallel=parallel)

    command.__doc__ = doc
    group.command(name)(command)


def register(cli: click.Group) -> None:
    """Add a command for each stage (`sgf.stages.STAGES`); two-word ones under their group."""
    groups: dict[str, click.Group] = {}
    for stage, spec in STAGES.items():
        *group_words, name = spec.words
        group = cli
        for word in group_words:
            if word not in groups:
                groups[word] = click.Group(word, help=GROUP_HELP[word])
                group.add_command(groups[word])
            group = groups[word]
        stage_command(
            group,
            name,
            stage,
            spec.help,
            spec=spec.takes_spec,
            afk=spec.offers_afk,
            count=spec.takes_count,
            parallel=spec.parallel,
        )


# The help of a command group whose commands are stages.
GROUP_HELP = {"issues": "Log bugs interactively, or plan fixes for them."}
