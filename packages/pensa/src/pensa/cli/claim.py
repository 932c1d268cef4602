"""`pn claim-next`: the work loop's one write, kept in its own small module for start-up."""

from __future__ import annotations

import click

from pensa.cli.base import (
    Env,
    VocabType,
    cli,
    common,
    label_option,
    pass_env,
    priority_option,
    require_verify_option,
)
from pensa.models import IssueType, Priority


@cli.command("claim-next")
@priority_option(only=True)
@click.option(
    "-t",
    "--type",
    "issue_types",
    type=VocabType(IssueType),
    multiple=True,
    help="Only this type (repeat for several: -t task -t chore).",
)
@click.option("--spec", help="Only issues of this spec stem.")
@label_option(only=True)
@click.option(
    "--stuck-after",
    type=click.IntRange(min=1),
    metavar="N",
    envvar="PN_STUCK_AFTER",
    show_envvar=True,
    help="Hand an issue claimed N times since its last close to a human instead (ralph sets it).",
)
@require_verify_option
@common
@pass_env
def claim_next(
    env: Env,
    priority: Priority | None,
    issue_types: tuple[IssueType, ...],
    spec: str | None,
    labels: tuple[str, ...],
    stuck_after: int | None,
    require_verify: bool,
) -> None:
    """Claim the first ready issue in one transaction and print it (`null` if none).

    Issues assigned to someone else are skipped. Safe under any number of concurrent loops.
    One claim per agent: if you already hold a task in progress, that task is printed again
    (a spike may be held beside it).

    \b
    Example:
        pn claim-next --spec auth --json
        pn claim-next -t task -t chore --json
    """
    issue = env.session.claim_next(
        priority=priority,
        issue_types=issue_types,
        spec=spec,
        labels=labels,
        stuck_after=stuck_after,
        require_verify=require_verify,
    )
    env.out.issue(issue, empty="(nothing ready)")
