"""`pn graph`: the dependency graph as a picture (Mermaid or DOT text)."""

from __future__ import annotations

import click

from pensa.cli.base import Env, VocabType, cli, common, pass_env
from pensa.diagram import Format


@cli.command()
@click.argument("issue_id", metavar="[ID]", required=False)
@click.option(
    "--format",
    "fmt",
    type=VocabType(Format),
    default="mermaid",
    show_default=True,
    help="mermaid (GitHub renders it) or dot (Graphviz).",
)
@click.option("--all", "all_", is_flag=True, help="Without ID: include closed issues.")
@common
@pass_env
def graph(env: Env, issue_id: str | None, fmt: Format, all_: bool) -> None:
    """Print the dependency graph: status as colour, kind as shape, priority in the label.

    With ID, everything joined to it by dependencies or fixes; without, every issue not
    closed. Arrows run from the issue to do first to the one waiting for it.

    \b
    Example:
        pn graph 1a2b > deps.mmd
        pn graph --format dot | dot -Tsvg > deps.svg
    """
    from pensa.diagram import render

    picture = env.session.graph().picture(issue_id, include_closed=all_)
    text = render(picture, fmt)
    env.out.emit({"format": fmt.value, "text": text}, text)
