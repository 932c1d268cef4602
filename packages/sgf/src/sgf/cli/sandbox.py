"""`sgf sandbox build`: the command line of the image ralph runs agents in (sandboximage.py)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import click

from sgf import agents, claude, config, safefile, stacks
from sgf.commandenv import Env
from sgf.errors import BuildFailed, InsideGitDir, NotAGitRepo, NotInitialised, SgfError
from sgf.image import baseimage, sandboximage


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
    metavar="IMAGE",
    help=f"Base image (env SPRINGFIELD_BASE_IMAGE) [the project's `base`, else "
    f"{baseimage.DEFAULT}, else {baseimage.MADE} made here when no registry answers].",
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
    base: str | None,
    claude_version: str | None,
    claude_binary: Path | None,
    pensa_source: Path | None,
    force: bool,
    verbose: bool,
) -> None:
    """Build the sandbox image: Claude Code, git, this project's pn, and the stack's toolchain.

    The base image is pulled, or made here when no registry answers (`sgf sandbox base`);
    the project remembers the one it was built from (`base` in .sgf/config.toml).

    \b
    Example:
        sgf sandbox build
        sgf sandbox build --stack go
        sgf sandbox build --base springfield-base:bookworm
    """
    from sgf.image import buildprogress, buildview

    cfg = _config(env)
    configured = (cfg.stack, cfg.docker_template) if cfg else None
    chosen, tag = sandboximage.target(configured=configured, stack=stack, image=image)
    version = claude_version or env.environ.get("CLAUDE_CODE_VERSION") or claude.VERSION
    src = sandboximage.pensa_source(pensa_source)
    binary = claude_binary or claude.binary(version, env=env.environ)
    extra = {name: agents.binary(name, env=env.environ) for name in _configured_agents(env)}
    log_dir = env.root() / ".sgf" / "logs" if cfg else Path(tempfile.gettempdir())
    log_path = log_dir / "sandbox-build.log"
    cache = claude.cache_dir(env.environ)
    wanted, fallback = baseimage.choose(base, cfg.base if cfg else None)
    opened = safefile.truncate(log_path, root=env.root() if cfg else log_dir)
    with opened as log, buildprogress.Display(log, verbose=verbose, cache=cache) as out:
        try:
            used = baseimage.ensure(
                wanted, fallback=fallback, env=env.environ, cache=cache, out=out
            )
            built = sandboximage.build(
                env.cwd,
                image=tag,
                stack=chosen,
                base=used,
                claude_bin=binary,
                claude_version=version,
                pensa_src=src,
                force=force,
                env=env.environ,
                out=out,
                extra_agents=extra,
            )
        except BuildFailed as e:
            raise SgfError(buildview.failure(str(e), log_path)) from None
    if cfg is not None and baseimage.remember(env.root(), used):
        click.echo(
            f"the project's base image is now {used} (`base` in .sgf/config.toml: commit it)",
            err=True,
        )
    if not verbose and not built.skipped:
        click.echo(f"full build output: {log_path}", err=True)
    state = "up to date" if built.skipped else "built"
    click.echo(f"{built.image} {state} ({sandboximage.HASH_LABEL}={built.content_hash})")


@sandbox_group.command("base")
@click.option(
    "--tag",
    "image",
    default=baseimage.MADE,
    show_default=True,
    metavar="IMAGE",
    help=f"The image to make: {baseimage.MADE_REPOSITORY}:TAG.",
)
@click.option("--force", is_flag=True, help="Make it again even if the Docker engine has it.")
@click.option("--verbose", "-v", is_flag=True, help="Stream debootstrap's whole output.")
@click.pass_obj
def sandbox_base(env: Env, image: str, force: bool, verbose: bool) -> None:
    """Make a Debian bookworm base image here, without a registry (needs root once).

    debootstrap fetches a minimal bookworm from Debian's mirror (deb.debian.org) and keeps it
    in sgf's cache; the image is imported from there, so making it again takes seconds.
    `sgf sandbox build` does this by itself when no registry answers for its default base.

    \b
    Example:
        sudo "$(command -v sgf)" sandbox base
        sgf sandbox build --base springfield-base:bookworm
    """
    from sgf.image import buildprogress, engine

    if not baseimage.made_here(image):
        raise click.BadParameter(
            f"{image!r}: sgf makes only {baseimage.MADE_REPOSITORY}:TAG images", param_hint="--tag"
        )
    if not force and engine.exists(env.environ, image):
        click.echo(f"{image} is here already (--force makes it again)")
        return
    cache = claude.cache_dir(env.environ)
    log_path = cache / "sandbox-base.log"
    cache.mkdir(parents=True, exist_ok=True)
    opened = safefile.truncate(log_path, root=cache)
    with opened as log, buildprogress.Display(log, verbose=verbose, cache=cache) as out:
        baseimage.make(image, env=env.environ, cache=cache, out=out)
    click.echo(f"{image} made (Debian {baseimage.SUITE}; build with `--base {image}`)")


def _configured_agents(env: Env) -> list[str]:
    """The agents besides claude the project's config names (none outside a project)."""
    try:
        return agents.wanted(config.load(env.root()))
    except SgfError:
        return []


def _config(env: Env) -> config.Config | None:
    """The project's config, or None outside an initialised project."""
    try:
        return config.load(env.root())
    except (NotAGitRepo, InsideGitDir, NotInitialised):
        return None
