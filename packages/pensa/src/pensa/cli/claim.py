"""`pn claim-next`: the work loop's one write, kept in its own small module for start-up."""

from __future__ import annotations

import click

from pensa.cli.base import Env, VocabType, cli, common, label_option, pass_env, priority_option
from pensa.models import Issue, IssueType, Priority


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
@common
@pass_env
def claim_next(
    env: Env,
    priority: Priority | None,
    issue_types: tuple[IssueType, ...],
    spec: str | None,
    labels: tuple[str, ...],
    stuck_after: int | None,
) -> None:
    """Claim the first ready issue in one transaction and print it (`null` if none).

    Issues assigned to someone else are skipped. Safe under any number of concurrent loops.

    \b
    Example:
        pn claim-next --spec auth --json
        pn claim-next -t task -t chore --json
    """
    env.expect_actor()
    from pensa import claims, gitclaims

    store = env.store(write=True)

    def claim() -> Issue | None:
        return claims.claim_next(
            store,
            actor=env.actor,
            now=env.now,
            priority=priority,
            issue_type=issue_types or None,
            spec=spec,
            stuck_after=stuck_after,
            labels=labels,
        )

    project = env.project(create=True) if gitclaims.enabled(env.environ) else None
    if project is not None:  # PN_CLAIMS=git: published before the work starts (issue 14)
        issue = gitclaims.claim_next(store, project, actor=env.actor, env=env.environ, claim=claim)
    else:
        issue = claim()
    env.out.issue(issue, empty="(nothing ready)")
