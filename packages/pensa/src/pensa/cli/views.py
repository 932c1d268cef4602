"""Commands that read: list, ready, claim-next, blocked, search, count, status, history."""

from __future__ import annotations

import click

from pensa import views
from pensa.cli.base import Env, VocabType, cli, common, pass_env
from pensa.models import IssueType, Priority, Status
from pensa.views import ACTIVE, Filters, GroupKey, SortKey


def filter_options(func: click.decorators.FC) -> click.decorators.FC:
    """-p, -a, -t and --spec, shared by list, ready and count."""
    for option in reversed(
        (
            click.option("-p", "--priority", type=VocabType(Priority), help="Only this priority."),
            click.option("-a", "--assignee", help="Only this assignee."),
            click.option(
                "-t", "--type", "issue_type", type=VocabType(IssueType), help="Only this type."
            ),
            click.option("--spec", help="Only issues of this spec stem."),
        )
    ):
        func = option(func)
    return func


def show_issues(env: Env, query: views.Query) -> None:
    """Print the issues `query` selects: JSON straight from SQLite, else records rendered."""
    store = env.store()
    if env.out.as_json:
        env.out.raw(query.json(store))
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
    sort: SortKey,
    limit: int | None,
) -> None:
    """List open and in-progress issues (all with --all), by priority then creation."""
    statuses = status or (None if all_ else ACTIVE)
    filters = Filters(statuses, priority, assignee, issue_type, spec)
    show_issues(env, views.list_query(filters, sort=sort, limit=limit))


@cli.command()
@click.option("-n", "--limit", type=click.IntRange(min=1), help="At most this many.")
@filter_options
@common
@pass_env
def ready(
    env: Env,
    limit: int | None,
    priority: Priority | None,
    assignee: str | None,
    issue_type: IssueType | None,
    spec: str | None,
) -> None:
    """List work that can start: open tasks, tests and chores whose deps are all closed.

    Bugs are never ready. Ordered by priority, then creation; `[]` when nothing is ready.
    """
    filters = Filters(None, priority, assignee, issue_type, spec)
    show_issues(env, views.ready_query(filters, limit=limit))


@cli.command()
@common
@pass_env
def blocked(env: Env) -> None:
    """List issues waiting on a dependency that is not closed."""
    show_issues(env, views.blocked_query())


@cli.command()
@click.argument("query")
@common
@pass_env
def search(env: Env, query: str) -> None:
    """Find issues (any status) whose title or description contains QUERY, any case."""
    show_issues(env, views.search_query(query))


@cli.command()
@click.option("--status", type=VocabType(Status), multiple=True, help="Only this status.")
@click.option("--all", "all_", is_flag=True, help="Include closed issues.")
@click.option("--by-status", "by", flag_value=GroupKey.STATUS, help="Group by status.")
@click.option("--by-priority", "by", flag_value=GroupKey.PRIORITY, help="Group by priority.")
@click.option("--by-issue-type", "by", flag_value=GroupKey.ISSUE_TYPE, help="Group by type.")
@click.option("--by-assignee", "by", flag_value=GroupKey.ASSIGNEE, help="Group by assignee.")
@common
@pass_env
def count(env: Env, status: tuple[Status, ...], all_: bool, by: str | None) -> None:
    """Count the issues `list` would show (--all includes closed), optionally grouped."""
    statuses = status or (None if all_ else ACTIVE)
    counts = views.count(env.store(), Filters(statuses), by=GroupKey(by) if by else None)
    if counts.groups is None:
        text = f"count: {counts.total}"
    else:
        text = "\n".join(
            [f"total: {counts.total}", *(f"  {k}: {n}" for k, n in counts.groups.items())]
        )
    env.out.emit(counts.to_json(), text)


@cli.command()
@common
@pass_env
def status(env: Env) -> None:
    """Show a project snapshot: issues per type and status, how many ready and blocked."""
    from pensa.render import table

    report = views.status(env.store())
    rows = [("type", *(s.value for s in Status))]
    rows += [(t, *(str(n) for n in by.values())) for t, by in report.by_type.items()]
    totals = report.totals()
    rows.append(("total", *(str(totals[s.value]) for s in Status)))
    text = table(rows) + f"\nready: {report.ready}  blocked: {report.blocked}"
    env.out.emit(report.to_json(), text)
