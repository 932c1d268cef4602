"""`sgf sandbox build`: the command line of the image ralph runs agents in (sandboximage.py)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import click

from sgf import agents, claude, config, safefile, sandboximage, stacks
from sgf.commandenv import Env
from sgf.errors import InsideGitDir, NotAGitRepo, NotInitialised, SgfError


@click.group("sandbox")
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
    default=sandboximage.DEFAULT_BASE,
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
    chosen, tag = sandboximage.target(configured=configured, stack=stack, image=image)
    version = claude_version or env.environ.get("CLAUDE_CODE_VERSION") or claude.VERSION
    src = sandboximage.pensa_source(pensa_source)
    binary = claude_binary or claude.binary(version, env=env.environ)
    extra = {name: agents.binary(name, env=env.environ) for name in _configured_agents(env)}
    log_dir = env.root() / ".sgf" / "logs" if configured else Path(tempfile.gettempdir())
    log_path = log_dir / "sandbox-build.log"
    opened = safefile.truncate(log_path, root=env.root() if configured else log_dir)
    with opened as log, render.build_view(log, verbose=verbose) as out:
        try:
            built = sandboximage.build(
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
            from sgf import buildview

            raise SgfError(buildview.failure(str(e), log_path, base=base)) from None
    if not verbose and not built.skipped:
        click.echo(f"full build output: {log_path}", err=True)
    state = "up to date" if built.skipped else "built"
    click.echo(f"{built.image} {state} ({sandboximage.HASH_LABEL}={built.content_hash})")


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
