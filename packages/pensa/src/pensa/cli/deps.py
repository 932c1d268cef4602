"""`pn dep`: dependency edges. `dep add CHILD PARENT` means CHILD depends on PARENT.

The edges print as `PARENT -> CHILD`, the way `pn graph` draws them: first PARENT, then
CHILD (they once read in opposite directions)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import click

from pensa.cli.base import Env, PnGroup, VocabType, cli, common, pass_env
from pensa.models import LinkKind
from pensa.render import issue_line, tree_text

if TYPE_CHECKING:
    from pensa.graph import EdgeChange


def edge(change: EdgeChange) -> str:
    """`pn-parent -> pn-child (pn-child waits for pn-parent)`, as `pn graph` draws it; for
    the other kinds, what the link says."""
    child, parent = change.issue_id, change.depends_on_id
    if change.kind is LinkKind.PARENT:
        return f"{child} -> {parent} ({child} is a child of {parent}, which waits for it)"
    if change.kind is LinkKind.DISCOVERED_FROM:
        return f"{child} was discovered from {parent}"
    return f"{parent} -> {child} ({child} waits for {parent})"


def kind_option(func: click.decorators.FC) -> click.decorators.FC:
    """`--kind`: blocks (a dependency, the default), parent or discovered-from."""
    return click.option(
        "--kind",
        type=VocabType(LinkKind),
        default="blocks",
        show_default=True,
        help="blocks (CHILD waits for PARENT), parent (PARENT is CHILD's epic or feature) "
        "or discovered-from (CHILD was found working on PARENT).",
    )(func)


@cli.group(cls=PnGroup)
def dep() -> None:
    """Add, remove and inspect dependencies (CHILD depends on PARENT)."""


@dep.command("add")
@click.argument("child")
@click.argument("parent")
@kind_option
@common
@pass_env
def dep_add(env: Env, child: str, parent: str, kind: LinkKind) -> None:
    """Make CHILD depend on PARENT: CHILD is not ready until PARENT is closed.

    With `--kind parent`, PARENT becomes CHILD's epic or feature (as `pn update CHILD
    --parent PARENT`); with `--kind discovered-from`, CHILD was found working on PARENT.

    \b
    Example:
        pn dep add pn-child001 pn-parent01
        pn dep add pn-task0001 pn-feature1 --kind parent
    """
    graph = env.session.graph(write=True)
    change = graph.add(child, parent, actor=env.session.actor, kind=kind)
    env.out.emit(change.to_json(), f"dep {change.status}: {edge(change)}")


@dep.command("remove")
@click.argument("child")
@click.argument("parent")
@kind_option
@common
@pass_env
def dep_remove(env: Env, child: str, parent: str, kind: LinkKind) -> None:
    """Remove the dependency of CHILD on PARENT (or the link of `--kind`)."""
    graph = env.session.graph(write=True)
    change = graph.remove(child, parent, actor=env.session.actor, kind=kind)
    env.out.emit(change.to_json(), f"dep removed: {edge(change)}")


@dep.command("list")
@click.argument("issue_id", metavar="ID")
@common
@pass_env
def dep_list(env: Env, issue_id: str) -> None:
    """List what ID depends on and what depends on ID."""
    lists = env.session.graph().lists(issue_id)
    text = "\n".join(
        [
            "depends on:",
            *(f"  {issue_line(i)}" for i in lists.depends_on),
            "dependents:",
            *(f"  {issue_line(i)}" for i in lists.dependents),
        ]
    )
    env.out.emit(lists.to_json(), text)


@dep.command("tree")
@click.argument("issue_id", metavar="ID")
@click.option(
    "--direction",
    type=click.Choice(["down", "up"]),
    default="down",
    show_default=True,
    help="down: what ID depends on; up: what depends on ID.",
)
@common
@pass_env
def dep_tree(env: Env, issue_id: str, direction: Literal["down", "up"]) -> None:
    """Show the dependency tree below (or above) ID; each issue once."""
    nodes = env.session.graph().tree(issue_id, direction=direction)
    env.out.emit([n.to_json() for n in nodes], tree_text(nodes) or "(no dependencies)")


@dep.command("cycles")
@common
@pass_env
def dep_cycles(env: Env) -> None:
    """List cycles of waiting, through dependencies and parents (pn refuses to create them;
    import refuses them too)."""
    cycles = env.session.graph().cycles()
    from pensa.cycles import drawn

    text = "\n".join(f"cycle {n}: {drawn(c)}" for n, c in enumerate(cycles, start=1))
    env.out.emit(cycles, text or "no cycles")
