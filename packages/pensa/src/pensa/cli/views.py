"""Commands that read: list, ready, claim-next, blocked, search, count, status, history."""

from __future__ import annotations

import click

from pensa import views
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
from pensa.models import IssueType, Priority, Status
from pensa.views import ACTIVE, Filters, SortKey


def filter_options(func: click.decorators.FC) -> click.decorators.FC:
    """-p, -a, -t, --spec and --label, shared by list, ready and count."""
    for option in reversed(
        (
            priority_option(only=True),
            click.option("-a", "--assignee", help="Only this assignee."),
            click.option(
                "-t", "--type", "issue_type", type=VocabType(IssueType), help="Only this type."
            ),
            click.option("--spec", help="Only issues of this spec stem."),
            label_option(only=True),
        )
    ):
        func = option(func)
    return func


def show_issues(env: Env, query: views.Query) -> None:
    """Print the issues `query` selects: JSON straight from SQLite, else records rendered."""
    store = env.session.store()
    if env.out.as_json:
        env.out.raw(query.json_utf8(store))
    else:
        env.out.issues(query.issues(store))


@cli.command("list")
@click.option(
    "--status", type=VocabType(Status), multiple=True, help="Only this status (repeatable)."
)
@click.option("--all", "all_", is_flag=True, help="Include closed issues.")
@filter_options
@click.option(
    "--sort", type=VocabType(SortKey), default="priority", show_default=True, help="Order."
)
@click.option("-n", "--limit", type=click.IntRange(min=1), help="At most this many.")
@common
@pass_env
def list_(
    env: Env,
    status: tuple[Status, ...],
    all_: bool,
    priority: Priority | None,
    assignee: str | None,
    issue_type: IssueType | None,
    spec: str | None,
    labels: tuple[str, ...],
    sort: SortKey,
    limit: int | None,
) -> None:
    """List open and in-progress issues (all with --all), by priority then creation."""
    statuses = status or (None if all_ else ACTIVE)
    filters = Filters(statuses, priority, assignee, issue_type, spec, labels)
    show_issues(env, views.list_query(filters, sort=sort, limit=limit))


@cli.command()
@click.option("-n", "--limit", type=click.IntRange(min=1), help="At most this many.")
@filter_options
@require_verify_option
@click.option(
    "--explain", is_flag=True, help="Instead, list the issues that are not ready, and why."
)
@common
@pass_env
def ready(
    env: Env,
    limit: int | None,
    priority: Priority | None,
    assignee: str | None,
    issue_type: IssueType | None,
    spec: str | None,
    labels: tuple[str, ...],
    require_verify: bool,
    explain: bool,
) -> None:
    """List work that can start: open issues whose deps are all closed and that have no open
    children (an epic or feature is ready only once it has none).

    Bugs are never ready, nor are stuck tasks waiting for a human (`-a human` lists those).
    Ordered by priority, then creation; `[]` when nothing is ready. `--explain` lists every
    issue not closed that is not ready, one line each saying why (blocked by, open children,
    held by, a bug, no verify commands).

    \b
    Example:
        pn ready -t task --json
        pn ready --explain
    """
    filters = Filters(None, priority, assignee, issue_type, spec, labels)
    if explain:
        from pensa.readiness import explain as why_not

        found = why_not(env.session.store(), filters, require_verify=require_verify)
        found = found[:limit] if limit else found
        text = "\n".join(n.line() for n in found) or "(every issue not closed is ready)"
        env.out.emit([n.to_json() for n in found], text)
        return
    show_issues(env, views.ready_query(filters, limit=limit, require_verify=require_verify))


@cli.command()
@common
@pass_env
def blocked(env: Env) -> None:
    """List issues waiting on a dependency that is not closed, and what each waits on."""
    if env.out.as_json:
        show_issues(env, views.blocked_query())
        return
    store = env.session.store()
    issues = views.blocked_query().issues(store)
    waits = views.open_blockers(store, [i.id for i in issues])
    cells = {
        child: ", ".join(f"{parent} ({status})" for parent, status in parents)
        for child, parents in waits.items()
    }
    env.out.issues(issues, extra=("waits on", cells))


@cli.command()
@click.argument("query")
@common
@pass_env
def search(env: Env, query: str) -> None:
    """Find issues (any status) whose title or description contains QUERY, any case."""
    show_issues(env, views.search_query(query))
