"""`pn label`: add, remove and list labels."""

from __future__ import annotations

import click

from pensa.cli.base import Env, PnGroup, cli, common, pass_env


@cli.group(cls=PnGroup)
def label() -> None:
    """Add, remove and list labels (filter with `--label` on list, ready, count, claim-next)."""


@label.command("add")
@click.argument("issue_id", metavar="ID")
@click.argument("labels", metavar="LABEL...", nargs=-1, required=True)
@common
@pass_env
def label_add(env: Env, issue_id: str, labels: tuple[str, ...]) -> None:
    """Add labels to an issue and print it.

    \b
    Example:
        pn label add pn-1a2b3c4d backend needs-review
    """
    env.out.issue(
        env.session.tracker(write=True).relabel(issue_id, actor=env.session.actor, add=labels)
    )


@label.command("remove")
@click.argument("issue_id", metavar="ID")
@click.argument("labels", metavar="LABEL...", nargs=-1, required=True)
@common
@pass_env
def label_remove(env: Env, issue_id: str, labels: tuple[str, ...]) -> None:
    """Remove labels from an issue and print it."""
    env.out.issue(
        env.session.tracker(write=True).relabel(issue_id, actor=env.session.actor, remove=labels)
    )


@label.command("list")
@common
@pass_env
def label_list(env: Env) -> None:
    """List every label in use with how many issues (open or closed) carry it."""
    from pensa import stats

    counts = stats.labels(env.session.store())
    env.out.emit(
        [{"label": name, "count": n} for name, n in counts.items()],
        "\n".join(f"{name}  {n}" for name, n in counts.items()) or "(no labels)",
    )
